"""What every record format shares: the `Record`, its one-line `RecordError`, the results
as text, the limits on what is read, and reading a whole record file (SGF, PGN) safely.

A record's `result` is player 0's final reward: 1.0 won, -1.0 lost, 0.0 drawn, as in the
text "1-0", "0-1", "1/2-1/2" (the first number is player 0's score: Black in Go, Red in
Xiangqi). A record whose result is unknown ("*", "?", none) is a bad record.
"""

import dataclasses
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from azjax.games.base import State
from azjax.types import UserError

MAX_FILE_BYTES = 16 * 2**20  # an SGF or PGN file larger than this is refused unread
MAX_LINE_BYTES = 16 * 2**20  # a JSONL line longer than this is refused (skipped unkept)
RESULTS = {"1-0": 1.0, "0-1": -1.0, "1/2-1/2": 0.0}  # text -> player 0's reward
MESSAGE_CHARS = 200  # longest reason a message quotes (a list of legal moves, a bad value)


class RecordError(UserError):
    """A bad record or record file, in one line naming the file (with its line or game) and,
    where there is one, the move: "games/a.sgf: move 12: B[zz] is not a point of a 9x9 board".
    """


@dataclasses.dataclass(frozen=True, eq=False)
class Record:
    """One game, every move checked legal by the game's rules from `start`.

    Attributes:
      source: where it came from, for messages: "games/a.sgf", "games/b.jsonl:12" (file and
        line), "games/c.pgn#3" (the third game of a file).
      start: the unbatched start position (host arrays): `game.init`, Go's setup stones
        and komi, or a Xiangqi FEN's position.
      actions: every move as an action id, in turn from `start`.
      result: player 0's final reward: 1.0 won, -1.0 lost, 0.0 drawn.
      policies: [len(actions), A] float32 recorded search policies (each row sums to 1, or
        is all zeros where the record has none for that move), or None.
      players: the names of player 0 and player 1 where the record has them.
      info: anything else worth keeping (date, komi, event, engine settings), JSON-able.
    """

    source: str
    start: State
    actions: tuple[int, ...]
    result: float
    policies: np.ndarray | None = None
    players: tuple[str, str] = ("", "")
    info: dict = dataclasses.field(default_factory=dict)


class Unchecked(NamedTuple):
    """A record as a format reads it, its moves not yet checked by the rules, with the text
    of each move as the file wrote it ("B[ee]", "H2-E2") for messages."""

    record: Record
    texts: tuple[str, ...]


def result_text(result: float) -> str:
    """The text of player 0's reward: "1-0", "0-1" or "1/2-1/2"."""
    for text, value in RESULTS.items():
        if value == result:
            return text
    raise RecordError(f"a result of {result!r}: player 0's reward is 1, -1 or 0")


def shorten(text: str, limit: int = 40) -> str:
    """`text` cut to at most `limit` characters, for a message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_bytes(path: Path, shown: str) -> bytes:
    """The bytes of a record file (SGF, PGN), refusing unread what is no regular file, empty
    or larger than `MAX_FILE_BYTES` (checked with stat, and again as it is read).

    Raises:
      RecordError: "games/a.sgf: ..." for any of these, or a file that cannot be read.
    """
    try:
        info = os.stat(path)  # before opening: opening a FIFO would wait for a writer
        if not stat.S_ISREG(info.st_mode):
            raise RecordError(f"{shown}: not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise RecordError(
                f"{shown}: {info.st_size:,} bytes, more than the {MAX_FILE_BYTES:,} a record "
                "file may hold"
            )
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise RecordError(f"{shown}: {error.strerror or error}") from None
    if len(data) > MAX_FILE_BYTES:
        raise RecordError(f"{shown}: more than the {MAX_FILE_BYTES:,} bytes a record file may hold")
    if not data.strip():
        raise RecordError(f"{shown}: an empty file")
    return data


def decode(data: bytes, encodings: tuple[str, ...]) -> str:
    """`data` as text in the first of `encodings` that reads it all.

    Raises:
      RecordError: no encoding reads it ("not UTF-8 text (byte 0xff at 12)").
    """
    first = None
    for encoding in encodings:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError as error:
            first = first or error
    names = " or ".join(encoding.upper() for encoding in encodings)
    byte = data[first.start] if first is not None else 0
    where = first.start if first is not None else 0
    raise RecordError(f"not {names} text (byte 0x{byte:02x} at {where})")


def read_text(
    path: Path, shown: str, encodings: tuple[str, ...] | Callable[[bytes], tuple[str, ...]]
) -> str:
    """The text of a record file (`read_bytes`, `decode`); `encodings` may be a function of
    the bytes (SGF names its charset inside).

    Raises:
      RecordError: "games/a.sgf: ..." where the file cannot be read or decoded.
    """
    data = read_bytes(path, shown)
    try:
        return decode(data, encodings(data) if callable(encodings) else encodings)
    except RecordError as error:
        raise RecordError(f"{shown}: {error}") from None
