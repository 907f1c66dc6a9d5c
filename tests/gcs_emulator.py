"""`gcp-storage-emulator start ...` with the object generation headers that Cloud Storage
sends on every object download (`x-goog-generation`, `x-goog-metageneration`), which the
emulator leaves out. tensorstore reads them to know which version of an object it holds
(OCDBT's manifest, which orbax writes on every checkpoint, is updated by generation); without
them it stops with "Malformed StorageGeneration". Everything else is the emulator's own.

    python tests/gcs_emulator.py start --host 127.0.0.1 --port 9023 --default-bucket b
"""

import sys

from gcp_storage_emulator.handlers import objects

_download = objects.download


def download(request, response, storage, *args, **kwargs):
    _download(request, response, storage, *args, **kwargs)
    try:
        found = storage.get_file_obj(request.params["bucket_name"], request.params["object_id"])
    except Exception:  # not found: the emulator answered 404 already
        return
    response["x-goog-generation"] = str(found.get("generation") or "0")
    response["x-goog-metageneration"] = str(found.get("metageneration") or "1")


objects.download = download  # before the server's routes are built from `objects`

from gcp_storage_emulator.__main__ import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
