"""Run directories on local disks and on cloud storage.

A workdir may be a local path or a URI (`gs://bucket/runs/c4`): a pod's hosts share one run
directory on cloud storage. `pathlib.Path` would turn the URI into the local folder
`gs:/bucket/runs/c4`; `workdir_path` keeps it an `etils.epath.Path` (orbax's path type,
which reads and writes cloud storage through gcsfs; the `gcs` extra installs it).

A storage emulator: where `STORAGE_EMULATOR_HOST` is set (the variable google-cloud-storage
and gcsfs read), the first cloud path also points tensorstore, which writes the checkpoints'
arrays, at it (`TENSORSTORE_GCS_HTTP_URL`, and a token an emulator accepts), unless those
are set already.

Writes to cloud storage (`write_atomically`, `copy_tree`) wait as long as the storage
library retries (gcsfs: 6 tries, up to 5 minutes each) unless `bound_cloud_writes` gave
them a budget (a training run's `train.storage_timeout_s`): then a write that gets no
answer within it raises `StorageLost`.

`read_json` reads the JSON files azjax did not write in this process (a run's config.json,
a zoo agent's card, a tournament's settings): whatever is wrong with one is a one-line
`UserError` naming it. `FolderWatch` notices a local folder deleted under a run
(checkpoints' folder).
"""

import json
import logging
import os
import re
import stat
from pathlib import Path

from azjax import extras
from azjax.faults import within
from azjax.types import StorageLost, UserError

# The largest JSON file `read_json` reads (a config, a card, a tournament's settings are
# kilobytes): a larger one is refused rather than read into memory.
JSON_LIMIT = 64 * 2**20

_CONFIGURED: set[str] = set()
_WRITES = {"timeout_s": 0.0}


class _NoAnswer(Exception):
    """A cloud write that `bound_cloud_writes`'s budget ran out on."""


def bound_cloud_writes(timeout_s: float) -> None:
    """From now on in this process, each write to cloud storage gets `timeout_s` seconds
    to be answered before it raises `StorageLost` (0: the storage library's own retries
    decide, as before any call)."""
    _WRITES["timeout_s"] = float(timeout_s)


def _write_cloud(path, data: bytes, *, parents: bool = False) -> None:
    def write():
        if parents:
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    timeout_s = _WRITES["timeout_s"]
    if not timeout_s:
        write()
        return
    try:
        within(timeout_s, write, _NoAnswer())
    except _NoAnswer:  # the line is made only when the budget ran out
        raise StorageLost(
            f"lost the connection to {path}: no answer within {timeout_s:g} s "
            "(train.storage_timeout_s) while it was written: run the same command again to "
            "resume from the last checkpoint"
        ) from None


def _configure_cloud(scheme: str) -> None:
    """Once per process: the `gcs` extra's packages checked, the emulator's address handed to
    tensorstore, and gcsfs's log records kept off the terminal: its warning for buckets it
    cannot classify without credentials (an emulator's), and its "out of retries" errors,
    each with a traceback, which repeat the exception the caller gets (and says in one
    line)."""
    if scheme in _CONFIGURED:
        return
    if scheme == "gs":
        extras.require("gcsfs")
        emulator = os.environ.get("STORAGE_EMULATOR_HOST")
        if emulator:
            url = emulator if "://" in emulator else f"http://{emulator}"
            os.environ.setdefault("TENSORSTORE_GCS_HTTP_URL", url)
            os.environ.setdefault("GOOGLE_AUTH_TOKEN_FOR_TESTING", "emulator")
        logging.getLogger("gcsfs").setLevel(logging.CRITICAL)
    _CONFIGURED.add(scheme)


# Cloud Storage's bucket names: 3 to 63 characters of lowercase letters, digits, dashes,
# underscores and dots (up to 222 with dots, each dot-separated part at most 63), starting
# and ending with a letter or digit (cloud.google.com/storage/docs/buckets#naming).
_BUCKET = re.compile(r"[a-z0-9](?:[a-z0-9._-]{1,220})[a-z0-9]")


def _check_bucket(bucket: str, path: str) -> None:
    """Raises UserError for a bucket name Cloud Storage refuses (before anything runs)."""
    parts = bucket.split(".")
    if (
        not _BUCKET.fullmatch(bucket)
        or len(bucket) > (222 if len(parts) > 1 else 63)
        or any(not 1 <= len(part) <= 63 for part in parts)
    ):
        raise UserError(
            f"{path}: {bucket!r} is not a Cloud Storage bucket name (3 to 63 lowercase "
            "letters, digits, dashes, underscores or dots, starting and ending with a letter "
            "or digit)"
        )


def workdir_path(workdir):
    """A run directory (or a file in one) as a path object.

    A URI (any `scheme://`) becomes an `etils.epath.Path` and stays a URI; a local path is a
    `pathlib.Path` exactly as given (a relative one stays relative).

    Raises:
      UserError: a `gs://` path whose bucket name Cloud Storage refuses.
      ModuleNotFoundError: a `gs://` path without the `gcs` extra (its message names it).
    """
    text = os.fspath(workdir) if isinstance(workdir, os.PathLike) else str(workdir)
    if "://" in text:
        scheme, _, rest = text.partition("://")
        if scheme == "gs":
            _check_bucket(rest.split("/", 1)[0], text)
        _configure_cloud(scheme)
        from etils import epath  # noqa: PLC0415  (only for cloud paths)

        return epath.Path(text)
    return Path(workdir)


def is_local(path) -> bool:
    """Whether a `workdir_path` is on the local file system (not a cloud URI)."""
    return isinstance(path, Path)


def read_text(path) -> str:
    """A file's text, undecodable bytes replaced (`Path.read_text(errors=...)` is not in
    epath's API)."""
    return path.read_bytes().decode("utf-8", errors="replace")


def read_regular(path, *, limit: int | None = None, what: str | None = None) -> bytes:
    """The bytes of a file, opened only where it is a regular file: a FIFO (which would
    block the read until a writer came), a device or a folder in its place is refused.

    Args:
      path: a `workdir_path` (a cloud object is read as it is: it is always a file).
      limit: the most bytes accepted (None: no limit).
      what: the file as the error names it (default: its path).

    Raises:
      FileNotFoundError: no such file (the caller says what it misses).
      UserError: not a regular file, larger than `limit`, or unreadable; one line.
    """
    what = what or str(path)
    if not is_local(path):
        data = path.read_bytes()
    else:
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                raise UserError(f"{what} is not a regular file")
            # O_NONBLOCK: a FIFO put in the file's place since the check never blocks the open.
            descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(descriptor, "rb") as stream:
                if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
                    raise UserError(f"{what} is not a regular file")
                data = stream.read() if limit is None else stream.read(limit + 1)
        except FileNotFoundError:
            raise
        except OSError as error:
            raise UserError(f"cannot read {what}: {error.strerror or error}") from None
    if limit is not None and len(data) > limit:
        raise UserError(f"{what} is too large (over {limit} bytes)")
    return data


def parse_json(text: str | bytes, what: str):
    """The JSON value of `text` (a file's, or a line of one, named `what` in errors).

    Raises:
      UserError: not JSON (or not UTF-8), nested too deeply for Python, or holding an
        integer too long for Python to read; one line.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise UserError(f"{what} is corrupt: nested too deeply") from None
    except UnicodeDecodeError:
        raise UserError(f"{what} is corrupt: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise UserError(f"{what} is corrupt: {error}") from None
    except ValueError as error:  # an integer of more digits than `int` reads (4300)
        reason = str(error).split(";")[0]
        raise UserError(f"{what} is corrupt: {reason}") from None


def read_json(path, *, limit: int = JSON_LIMIT, what: str | None = None):
    """The JSON value of a file azjax did not write in this process (a run's config.json, a
    zoo agent's card.json, a tournament's settings): `read_regular` then `parse_json`.

    Raises:
      FileNotFoundError: no such file (the caller says what it misses).
      UserError: anything else wrong with the file; one line naming it (`what`, default its
        path).
    """
    what = what or str(path)
    return parse_json(read_regular(path, limit=limit, what=what), what)


def write_atomically(path, data: bytes, *, sync: bool = False) -> None:
    """Writes a file whole or not at all: locally a temporary file beside it renamed over it
    (`sync`: forced to disk first); on cloud storage the object itself, which a store
    replaces at once (a rename there is a copy and a delete, or an API an emulator lacks).
    """
    if not is_local(path):
        _write_cloud(path, data)
        return
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as stream:
        stream.write(data)
        if sync:
            stream.flush()
            os.fsync(stream.fileno())
    os.replace(temporary, path)


def copy_tree(source, target) -> None:
    """Copies the files under `source` into `target`, folders included; either may be a
    cloud path (walked with `iterdir`: a cloud path has no `rglob`). Nothing happens where
    `source` does not exist."""
    if not source.exists():
        return
    for path in source.iterdir():
        if path.is_dir():
            copy_tree(path, target / path.name)
        elif is_local(target):
            target.mkdir(parents=True, exist_ok=True)
            (target / path.name).write_bytes(path.read_bytes())
        else:
            _write_cloud(target / path.name, path.read_bytes(), parents=True)


class FolderWatch:
    """Notices a local folder deleted under a run (`checkpoints/` removed while it trains).

    It keeps the folder open, so that it knows even where the folder was made again under
    the same inode number (by orbax's writers): a deleted folder has no links left, whatever
    stands in its place. Cloud storage has prefixes, not folders: there a failed write says
    so instead, and `gone` is always False.
    """

    def __init__(self, folder):
        self.folder = folder
        self._descriptor: int | None = None
        self.renew()

    def renew(self) -> None:
        """Watches the folder as it is now (made again)."""
        self.close()
        if is_local(self.folder):
            try:
                self._descriptor = os.open(self.folder, os.O_RDONLY)
            except OSError:  # no such folder yet, or a system that cannot open folders
                self._descriptor = None

    def gone(self) -> bool:
        """Whether the folder was deleted since it was watched."""
        if not is_local(self.folder):
            return False
        if not Path(self.folder).is_dir():
            return True
        try:
            return self._descriptor is not None and os.fstat(self._descriptor).st_nlink == 0
        except OSError:  # a stale handle (NFS)
            return True

    def close(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None
