"""Whether a storage emulator serves object generations, which orbax's checkpoints need.

Cloud Storage sends every object's generation (`x-goog-generation`); tensorstore reads it to
update OCDBT's manifest, which orbax writes on every checkpoint. The plain
`gcp-storage-emulator` leaves the header out, and tensorstore's next read conditioned on a
generation fails with "Malformed StorageGeneration". Whether a save makes such a read depends
on how tensorstore batches its writes, so a run could save for a while before failing, or
never: `check_generations` asks the server once, at the start, with a probe object of its
own (one per process), and a server without generations is refused in one line.
"""

import os
import socket

import tensorstore as ts

from azjax.faults import lacks_generations
from azjax.types import UserError


def no_generations(directory) -> UserError:
    """The one-line refusal of the emulator serving `directory` (`STORAGE_EMULATOR_HOST`)."""
    server = os.environ.get("STORAGE_EMULATOR_HOST", "the storage server")
    return UserError(
        f"{server} sends no object generations (Cloud Storage's x-goog-generation header), "
        f"which orbax's checkpoints in {directory} need; a plain gcp-storage-emulator leaves "
        "them out: serve the bucket with `python -m azjax.apps.gcs_emulator start ...` (the "
        "gcs-emulator extra) instead"
    )


def check_generations(directory) -> None:
    """Writes, reads back by generation and deletes a probe object in `directory` (a
    `gs://` path) where `STORAGE_EMULATOR_HOST` points at an emulator; Cloud Storage itself
    is not asked.

    Raises:
      UserError: the emulator sends no object generations (`no_generations`).
    """
    if not str(directory).startswith("gs://") or not os.environ.get("STORAGE_EMULATOR_HOST"):
        return
    bucket, _, folder = str(directory).removeprefix("gs://").partition("/")
    spec = {"driver": "gcs", "bucket": bucket, "path": folder.rstrip("/") + "/" if folder else ""}
    store = ts.KvStore.open(spec).result()
    key = f".generation_probe.{socket.gethostname()}.{os.getpid()}"
    store.write(key, b"probe").result()
    try:
        stamp = store.read(key).result().stamp.generation
        store.read(key, if_not_equal=stamp).result()
    except Exception as error:
        if lacks_generations(error):
            raise no_generations(directory) from None
        raise
    finally:
        # One object deleted by name: `delete_range` lists first, and an emulator that
        # ignores a listing's bounds hands back (and so deletes) the whole folder.
        store.write(key, None).result()
