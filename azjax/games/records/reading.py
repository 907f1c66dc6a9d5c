"""`read`: the records of a source streamed one at a time, each replayed by the rules.

Files are read one after the other, a record at a time (a JSONL file a line at a time), and
checked `check.CHUNK` at a time, so a folder of many thousands of files is never held at
once. A bad record (a corrupt file, an illegal move, a wrong board size, an unknown result,
a truncated or huge file) is one line naming the file and the move: warned and skipped, or
with `strict` raised at once. Reading writes nothing.
"""

import logging
from collections.abc import Callable, Iterator

from azjax.games.base import Game
from azjax.games.records import jsonl, pgn, sgf
from azjax.games.records.base import Record, RecordError, Unchecked
from azjax.games.records.check import CHUNK, checked
from azjax.games.records.sources import entries, format_of

_log = logging.getLogger(__name__)
_READERS = {"sgf": sgf.read_file, "pgn": pgn.read_file, "jsonl": jsonl.read_file}


def read(
    source, game: Game, *, strict: bool = False, warn: Callable[[str], None] | None = None
) -> Iterator[Record]:
    """Streams every record of every file of `source` (a file, a folder, a glob or a list of
    these: `paths`), each checked by `game`'s rules move by move.

    Args:
      source: where the records are; each file's format is its extension's.
      game: the game they are records of (a record of another game is a bad one).
      strict: raise `RecordError` at the first bad record (the records before it are
        yielded first); else warn and go on with the next.
      warn: called with each bad record's one-line message (default: a logging warning).

    Raises:
      RecordError: `source` names no record file, or with `strict` a bad record.
    """
    warn = warn or _log.warning
    pending: list[Unchecked | RecordError] = []
    for entry in entries(source):
        items = (
            [entry]
            if isinstance(entry, RecordError)
            else _READERS[format_of(entry)](entry, str(entry), game)
        )
        for item in items:
            pending.append(item)
            if len(pending) >= CHUNK or (strict and isinstance(item, RecordError)):
                yield from _settle(game, pending, strict, warn)
                pending = []
    yield from _settle(game, pending, strict, warn)


def _settle(game, pending, strict, warn) -> Iterator[Record]:
    """The pending records checked, in order: the good yielded, the bad warned or raised."""
    for item in checked(game, pending):
        if isinstance(item, RecordError):
            if strict:
                raise item
            warn(str(item))
        else:
            yield item
