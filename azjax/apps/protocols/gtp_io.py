"""GTP plumbing shared by the engine (`gtp.py`) and its extensions: the error a command
raises, ASCII number parsing, responses streamed while they are computed (`Streaming`: the
`=` line, then lines until the next input line arrives, as an analysis answers), the input
line reader and UTF-8 output.
"""

import re
import sys
import threading
import traceback
from collections.abc import Callable
from typing import BinaryIO, TextIO

COLORS = {"b": 0, "black": 0, "w": 1, "white": 1}
# GTP numbers in ASCII only: integers (at most 18 digits) and floats (komi, intervals). No
# two quantifiers of FLOAT overlap, so a failed match takes time linear in the text.
INTEGER = re.compile(r"-?[0-9]{1,18}")
FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# The longest input line read, without its newline (bytes, or characters from a text stream
# without a byte buffer): a longer one gets an error response and the rest of it is skipped.
MAX_LINE = 16384


class GtpError(Exception):
    """A command failed; the message is the GTP error response."""


def integer(text: str, message: str = "syntax error") -> int:
    """A GTP integer in ASCII digits (str.isdigit would take "²" and "١"), else GtpError."""
    if not INTEGER.fullmatch(text):
        raise GtpError(message)
    return int(text)


def integers(*values: str) -> None:
    """Checks that every value is a GTP integer (else GtpError)."""
    for value in values:
        integer(value)


class Streaming:
    """A response written while it is computed. After the `=` line, `run(emit, wait)` writes
    lines with `emit` and returns the rest of the response; `wait(timeout)` blocks at most
    `timeout` seconds (None: without limit) and says whether the next input line is there."""

    def __init__(self, run: Callable[[Callable[[str], None], Callable], str]):
        self.run = run

    def finish(self, command_id: str, emit: Callable | None, wait: Callable | None) -> str:
        """Writes the `=` line and runs; returns what is left to write (without `emit`, the
        whole response, stopped as though the next line were there)."""
        chunks: list[str] = []
        emit = emit or chunks.append
        emit(f"={command_id}\n")
        try:
            rest = self.run(emit, wait or (lambda timeout: True))
        except Exception:  # after the "=" line a response can only end
            traceback.print_exc(file=sys.stderr)
            rest = "\n"
        return "".join(chunks) + rest


class LongLine(str):
    """The start (MAX_LINE long) of an input line longer than MAX_LINE, whose rest was
    skipped: `gtp.respond` answers it with an error."""


class LineReader:
    """GTP input lines, decoded as UTF-8 with undecodable bytes replaced.

    Lines are read in the caller's thread and never ahead of need (after `quit` the rest of
    the input stays unread), except while a response streams: `wait` then reads the next
    line in a helper thread, so that an analysis notices it without blocking on the input.
    A line longer than MAX_LINE comes as a `LongLine` (its start; the rest is read and
    dropped), so that no input line is held whole in memory or parsed at length.
    """

    def __init__(self, stdin: BinaryIO | TextIO):
        self._stream = getattr(stdin, "buffer", stdin)
        self._reader: threading.Thread | None = None
        self._line: bytes | str | LongLine | None = None

    def _read(self) -> None:
        line = self._stream.readline(MAX_LINE + 1)
        if len(line) <= MAX_LINE or line[-1:] in (b"\n", "\n"):
            self._line = line
            return
        rest = line
        while rest and rest[-1:] not in (b"\n", "\n"):  # skip to the end of the line
            rest = self._stream.readline(MAX_LINE)
        start = line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line
        self._line = LongLine(start[:MAX_LINE])

    def wait(self, timeout: float | None) -> bool:
        if self._reader is None:
            self._reader = threading.Thread(target=self._read, daemon=True)
            self._reader.start()
        self._reader.join(timeout)
        return not self._reader.is_alive()

    def readline(self) -> str | None:
        """The next line, or None at the end of the input."""
        if self._reader is None:
            self._read()
        else:
            self._reader.join()
            self._reader = None
        line, self._line = self._line, None
        if not line:
            return None
        return line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line


def write(stdout: TextIO, text: str) -> None:
    """Writes response text as UTF-8 (to `stdout.buffer` where there is one, so that a
    stdout with a narrower encoding cannot fail on a response that echoes the input)."""
    binary = getattr(stdout, "buffer", None)
    if binary is None:
        stdout.write(text)
        stdout.flush()
        return
    stdout.flush()
    binary.write(text.encode("utf-8", errors="replace"))
    binary.flush()
