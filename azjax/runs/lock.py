"""One training process at a time in a run directory.

Two `azjax train` on one workdir would interleave its metrics and rotate away each other's
checkpoints. `hold(workdir)` takes an exclusive `flock` on `workdir/.lock` for as long as a
run trains there and writes the holder's pid and host into the file; a second run is refused
in one line naming them. The kernel releases the lock when its process ends, however it ends
(kill -9 or a crash included), so a lock is never stale: the file it leaves behind names a
process that no longer holds it and is taken over by the next run.

In a run of several processes only process 0 holds the lock (the others share the run by
design). Run directories on cloud storage (`gs://`) hold none: object storage has no locks,
and a pod's hosts share the directory.
"""

import contextlib
import fcntl
import json
import os
import socket
import time

from azjax.paths import is_local
from azjax.types import UserError

NAME = ".lock"
# How long a refused run waits for the holder to have written its pid (it opens the file,
# takes the lock, then writes).
_HOLDER_WAIT_S = 2.0


def _holder(file) -> dict:
    """What the holding process wrote into the lock file (empty until it has)."""
    deadline = time.monotonic() + _HOLDER_WAIT_S
    while True:
        file.seek(0)
        try:
            return json.loads(file.read())
        except ValueError:  # not yet written, or written while read
            if time.monotonic() > deadline:
                return {}
        time.sleep(0.05)


@contextlib.contextmanager
def hold(workdir, *, primary: bool = True):
    """Holds `workdir`'s lock for the body (nothing where not `primary`, or on cloud storage).

    A folder that cannot be made or a lock file that cannot be opened (read-only) takes no
    lock: the run's own checks then say why the folder cannot be used.

    Raises:
      UserError: another process holds the lock (its pid and host named).
    """
    if not primary or not is_local(workdir):
        yield
        return
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        file = open(workdir / NAME, "a+")  # noqa: SIM115  (closed below, releasing the lock)
    except OSError:
        yield
        return
    with file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _holder(file)
            who = f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}"
            raise UserError(
                f"{workdir} is in use by {who} (another run trains there): wait for it to "
                "end, stop it, or use another --workdir"
            ) from None
        file.seek(0)
        file.truncate()
        file.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
        file.flush()
        yield
