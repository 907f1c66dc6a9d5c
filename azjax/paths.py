"""Run directories on local disks and on cloud storage.

A workdir may be a local path or a URI (`gs://bucket/runs/c4`): a pod's hosts share one run
directory on cloud storage. `pathlib.Path` would turn the URI into the local folder
`gs:/bucket/runs/c4`; `workdir_path` keeps it an `etils.epath.Path` (orbax's path type,
which reads and writes cloud storage through gcsfs or TensorFlow's gfile).
"""

import os
from pathlib import Path


def workdir_path(workdir):
    """A run directory (or a file in one) as a path object.

    A URI (any `scheme://`) becomes an `etils.epath.Path` and stays a URI; a local path is a
    `pathlib.Path` exactly as given (a relative one stays relative).
    """
    text = os.fspath(workdir) if isinstance(workdir, os.PathLike) else str(workdir)
    if "://" in text:
        from etils import epath  # noqa: PLC0415  (only for cloud paths)

        return epath.Path(text)
    return Path(workdir)


def is_local(path) -> bool:
    """Whether a `workdir_path` is on the local file system (not a cloud URI)."""
    return isinstance(path, Path)
