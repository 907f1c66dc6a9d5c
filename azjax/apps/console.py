"""Where azjax's messages go on the command line.

The library sends its messages through `logging`, one logger per area under `azjax`
(`azjax.training`, `azjax.runs`, `azjax.matches`, `azjax.apps.sweeps`, ...: each module's
`__name__`), and installs no handler: an application routes and filters them like any
other library's (`logging.getLogger("azjax.matches").setLevel(logging.WARNING)`, a
`dictConfig` sending `azjax.training` to a file). The `azjax` command is such an
application: `show` prints the messages as bare lines, information on stdout and warnings on
stderr, as its commands always have, and them alone (not again through the root logger's
handler, which absl installs the first time a library logs through it). The one-line
`azjax: error:` exits are printed by the command itself, not logged; after a server stopped
answering, `abandon` exits at once.
"""

import logging
import os
import sys


class _Lines(logging.Handler):
    """The message alone, on the streams current at the time (a redirected or captured
    `sys.stdout` included)."""

    def emit(self, record: logging.LogRecord) -> None:
        stream = sys.stdout if record.levelno < logging.WARNING else sys.stderr
        try:
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:  # a closed pipe: logging's own report, never a crash
            self.handleError(record)


def show(level: int = logging.INFO) -> None:
    """Prints azjax's messages of `level` and above (once per process, however often called)."""
    logger = logging.getLogger("azjax")
    if not any(isinstance(handler, _Lines) for handler in logger.handlers):
        logger.addHandler(_Lines())
        logger.propagate = False
    if logger.level == logging.NOTSET:
        logger.setLevel(level)


def abandon(status: int) -> None:
    """Exits now, after the line that says why: the threads still retrying a server that
    stopped answering (orbax's save in flight, gcsfs's event loop) would hold the exit for
    minutes and then print their failures. What they would write is lost anyway; what was
    saved before stays, and the same command resumes from it."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
