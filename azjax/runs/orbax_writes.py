"""Stopping the writes of an orbax save that failed, before its folders are removed.

orbax waits for a save's writes in a chain that raises at the first failure while the others
go on (making `STEP.orbax-checkpoint-tmp` again); they collided with the save made again
("File exists", "Directory not empty"). The writes are orbax's private futures: where a
version lacks them, nothing is waited for.
"""

import contextlib
import threading
import time


def stop_failed_writes(manager, timeout_s: float) -> None:
    """Cancels the writes of `manager`'s last save (an orbax CheckpointManager), sends the
    signals they wait for (those waiting for a folder that was never made then end, writing
    nothing, instead of holding the process's exit for orbax's coordination timeout), then
    gives them up to `timeout_s` to stop."""
    saver = getattr(getattr(manager, "_checkpointer", None), "_async_manager", None)
    writes = getattr(saver, "_commit_futures", None) or ()
    if writes:
        saver.cancel()
    threads = [thread for write in writes for thread in _threads_of(write)]
    for thread in threads:
        with contextlib.suppress(Exception):
            thread.cancel()  # not done by the chain's cancel
    for thread in threads:
        with contextlib.suppress(Exception):
            thread._set_signals()
    deadline = time.monotonic() + timeout_s
    for thread in threads:
        with contextlib.suppress(Exception):  # orbax's join raises what the write did
            thread.join(max(deadline - time.monotonic(), 0.01))


def _threads_of(write) -> list[threading.Thread]:
    """The threads behind one of orbax's commit futures (its private `_futures` of a chain,
    `_f` and `_t` of a commit)."""
    if isinstance(write, threading.Thread):
        return [write]
    inner = [
        *getattr(write, "_futures", ()),
        getattr(write, "_f", None),
        getattr(write, "_t", None),
    ]
    return [thread for part in inner if part is not None for thread in _threads_of(part)]
