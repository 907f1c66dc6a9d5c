"""Stopping long work safely on Ctrl-C (SIGINT) and a scheduler's SIGTERM.

Inside `deferred()`, the first signal only sets a flag that the loop checks between steps, so
a signal never lands inside a checkpoint save, an XLA callback or an import; the loop then
saves and exits with status 130. A second signal stops at once (status 130, one line): what
is on disk is a finished checkpoint, since orbax writes each one to a temporary folder and
renames it when complete. In a Jupyter kernel (whose stop button sends SIGINT) the second
signal raises KeyboardInterrupt instead, so the kernel and its variables survive.
"""

import contextlib
import os
import signal
import sys
import threading

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_state = {"depth": 0, "signal": None, "previous": {}}


def requested() -> int | None:
    """The signal number received inside `deferred()`, or None."""
    return _state["signal"]


def _in_notebook() -> bool:
    """True inside a Jupyter (IPython) kernel, whose stop button sends SIGINT."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return shell is not None and "ipykernel" in sys.modules


def _handle(signum, frame):
    del frame
    if _state["signal"] is not None:
        if _in_notebook():
            # Killing the process would kill the kernel and the notebook's variables with it.
            raise KeyboardInterrupt
        sys.stderr.write(
            "\nazjax: stopped at once (second signal); what was finished is kept (a run's "
            "newest checkpoint, the games written): run the same command again to resume\n"
        )
        sys.stderr.flush()
        os._exit(130)
    _state["signal"] = signum
    name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    sys.stderr.write(f"\nazjax: {name}: stopping after the current step (again to stop at once)\n")
    sys.stderr.flush()


@contextlib.contextmanager
def deferred():
    """Defers SIGINT and SIGTERM to flag checks (`requested()`) while the block runs.

    Nested uses share one flag. SIGINT is installed even where the shell started the process
    with it ignored (background jobs). Outside the main thread (where Python cannot install
    handlers) it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _state["depth"] == 0:
        _state["signal"] = None
        _state["previous"] = {sig: signal.signal(sig, _handle) for sig in _SIGNALS}
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1
        if _state["depth"] == 0:
            for sig, handler in _state["previous"].items():
                signal.signal(sig, handler)
            _state["signal"] = None
