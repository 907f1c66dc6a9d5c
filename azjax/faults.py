"""Library failures read and quieted: what an exception chain says (a full disk, a file that
is gone, storage that does not answer), its first line for a one-line error, a deadline for
a call that may never return (`within`), and orbax's log records, asyncio's records of its
abandoned failed writes and stray event-loop tracebacks kept off the terminal (every failure
they report still reaches the caller as an exception). Standard library only."""

import errno
import logging
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "first_line",
    "is_disk_full",
    "is_lost_peer",
    "is_missing_path",
    "is_out_of_memory",
    "is_unreachable",
    "lacks_generations",
    "quiet_unraisable",
    "silence_orbax",
    "within",
]

# What a save that lost its files says: a deletion that races orbax's writers may leave the
# folder itself (it could not remove it while they wrote into it) but not their files.
_MISSING_WORDS = (
    "No such file or directory",
    "NOT_FOUND",
    "does not exist",
    "No ArrayMetadata found",
    # orbax's check after the write (ocdbt_utils): the files it wrote are no longer listed.
    "params are missing",
)
_FULL_WORDS = ("No space left on device", "RESOURCE_EXHAUSTED")
_MEMORY_WORDS = ("Out of memory", "out of memory", "OUT_OF_MEMORY")
# What tensorstore says of a server that sends no object generations (a plain emulator).
_NO_GENERATION_WORDS = ("Malformed StorageGeneration",)
# What tensorstore (curl), gcsfs (aiohttp) and google-cloud-storage (requests) say once their
# retries give up on a server that does not answer.
_UNREACHABLE_WORDS = (
    "CURL error",
    "retry attempts failed",
    "Could not connect",
    "Connection refused",
    "Connection reset",
    "Cannot connect to host",
    "Server disconnected",
    "UNAVAILABLE",
    "DEADLINE_EXCEEDED",
)
_UNREACHABLE_TYPES = ("ClientConnectionError", "ServerDisconnectedError", "ConnectionError")


def _chain_says(error: BaseException | None, test, words: tuple[str, ...]) -> bool:
    """Whether `error` or one it wraps passes `test` or names one of `words`."""
    while error is not None:
        if test(error) or any(word in str(error) for word in words):
            return True
        error = error.__cause__ or error.__context__
    return False


def is_disk_full(error: BaseException) -> bool:
    """Whether an exception (or one it wraps) says the disk or quota is full (not memory:
    XLA's "RESOURCE_EXHAUSTED: Out of memory" is `is_out_of_memory`)."""
    return not is_out_of_memory(error) and _chain_says(
        error,
        lambda e: isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT),
        _FULL_WORDS,
    )


def is_out_of_memory(error: BaseException) -> bool:
    """Whether an exception (or one it wraps) says a device or the host ran out of memory."""
    return _chain_says(error, lambda e: isinstance(e, MemoryError), _MEMORY_WORDS)


def is_missing_path(error: BaseException) -> bool:
    """Whether an exception (or one it wraps) says that a file or folder it used is gone."""
    return _chain_says(error, lambda e: isinstance(e, FileNotFoundError), _MISSING_WORDS)


def is_unreachable(error: BaseException) -> bool:
    """Whether an exception (or one it wraps) says that storage or a server did not answer
    (after the client library's own retries)."""

    def unreachable(e: BaseException) -> bool:
        return isinstance(e, (ConnectionError, TimeoutError)) or any(
            t.__name__ in _UNREACHABLE_TYPES for t in type(e).__mro__
        )

    return _chain_says(error, unreachable, _UNREACHABLE_WORDS)


def is_lost_peer(error: BaseException) -> bool:
    """Whether a collective between the processes of a run failed (gloo on CPUs, NCCL on
    GPUs): another process is gone."""
    return _chain_says(error, lambda e: False, ("Gloo", "NCCL"))


def lacks_generations(error: BaseException) -> bool:
    """Whether tensorstore found no object generation in a storage server's answers (an
    emulator that leaves out Cloud Storage's `x-goog-generation` headers)."""
    return _chain_says(error, lambda e: False, _NO_GENERATION_WORDS)


def first_line(error: BaseException) -> str:
    """The error's first line (its type's name when it has no text), at most 200 chars."""
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:200]


class _OrbaxLogFilter(logging.Filter):
    """Drops the records orbax logs through absl: its background threads log each failure
    with a traceback (hundreds of lines for one full disk) that the waiting call raises
    anyway, where `Checkpointer` turns it into one line or lets it show as a bug."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "orbax" not in Path(record.pathname).parts


# asyncio names the future's class: "Future", "Task", "_GatheringFuture" (an `asyncio.gather`).
_NEVER_RETRIEVED = re.compile(r"^\w+ exception was never retrieved")


class _AbandonedWritesFilter(logging.Filter):
    """Drops asyncio's "Future (Task, ...) exception was never retrieved" records of writes that
    failed on a full disk, a vanished file or a server without object generations: after the
    first such failure orbax stops waiting for its other writes, whose same errors asyncio then
    logs at exit with a traceback each (the first one already reached the caller, which says
    it in one line)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _NEVER_RETRIEVED.match(record.getMessage()):
            return True
        error = record.exc_info[1] if record.exc_info else None
        if error is None:  # the message alone: the exception is in the context's text
            words = (*_FULL_WORDS, *_MISSING_WORDS, *_NO_GENERATION_WORDS)
            return not any(w in record.getMessage() for w in words)
        return not (is_disk_full(error) or is_missing_path(error) or lacks_generations(error))


def quiet_unraisable(previous):
    """An unraisablehook that drops RuntimeError("Event loop is closed"): tensorstore
    finishing the reads of a restore orbax gave up on (a damaged checkpoint) after orbax
    closed their event loop. Everything else goes to `previous`."""

    def hook(unraisable) -> None:
        value = unraisable.exc_value
        if isinstance(value, RuntimeError) and str(value) == "Event loop is closed":
            return
        previous(unraisable)

    hook.azjax_quiet = True
    return hook


def silence_orbax() -> None:
    """Installs the orbax log filter and `quiet_unraisable` once per process."""
    absl_logger = logging.getLogger("absl")
    if not any(isinstance(f, _OrbaxLogFilter) for f in absl_logger.filters):
        absl_logger.addFilter(_OrbaxLogFilter())
    asyncio_logger = logging.getLogger("asyncio")
    if not any(isinstance(f, _AbandonedWritesFilter) for f in asyncio_logger.filters):
        asyncio_logger.addFilter(_AbandonedWritesFilter())
    if not getattr(sys.unraisablehook, "azjax_quiet", False):
        sys.unraisablehook = quiet_unraisable(sys.unraisablehook)


def within(timeout_s: float, function: Callable[[], Any], late: BaseException) -> Any:
    """`function()` run in a helper thread; raises `late` if it has not returned within
    `timeout_s` seconds (it goes on in the background: JAX's runtime and tensorstore's
    writes cannot be interrupted)."""
    outcome = {}

    def target():
        try:
            outcome["value"] = function()
        except BaseException as error:  # noqa: BLE001  (re-raised in the calling thread)
            outcome["error"] = error

    thread = threading.Thread(target=target, name="azjax-within", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise late
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
