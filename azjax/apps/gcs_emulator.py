"""`gcp-storage-emulator` with the object generation headers that Cloud Storage sends on
every object download (`x-goog-generation`, `x-goog-metageneration`) and the emulator leaves
out. tensorstore reads them to know which version of an object it holds (OCDBT's manifest,
which orbax writes on every checkpoint, is updated by generation); without them a save
stops with "Malformed StorageGeneration". Everything else is the emulator's own: its
arguments, its bucket on disk.

    pip install 'azjax[gcs-emulator]'
    python -m azjax.apps.gcs_emulator start --host 127.0.0.1 --port 9023 --default-bucket runs
    STORAGE_EMULATOR_HOST=http://127.0.0.1:9023 azjax train ... --workdir gs://runs/c4
"""

import sys

from gcp_storage_emulator.handlers import objects

_download = objects.download


def download(request, response, storage, *args, **kwargs):
    """The emulator's download, then the object's generation headers."""
    _download(request, response, storage, *args, **kwargs)
    try:
        found = storage.get_file_obj(request.params["bucket_name"], request.params["object_id"])
    except Exception:  # not found: the emulator answered 404 already
        return
    response["x-goog-generation"] = str(found.get("generation") or "0")
    response["x-goog-metageneration"] = str(found.get("metageneration") or "1")


def main(argv: list[str] | None = None) -> int | None:
    """The emulator's command line, serving objects with their generation headers."""
    objects.download = download  # before the server's routes are built from `objects`
    from gcp_storage_emulator.__main__ import main as serve  # noqa: PLC0415  (after that)

    return serve(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
