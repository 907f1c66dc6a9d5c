"""Game records: real games read with every move checked by the game's rules, and written.

Three formats, each chosen by a file's extension: SGF for Go (`sgf`: any board size,
handicap and komi), PGN for Xiangqi (`pgn`: ICCS moves, a FEN start where a game has one),
and JSONL for any game (`jsonl`: one game a line, moves in the game's own notation, with
search policies where recorded). docs/records.md describes them exactly.

    from azjax.games import records

    for record in records.read("games/**/*.sgf", game):   # a file, a folder, a glob, a list
        record.source, record.start, record.actions, record.result, record.policies
    records.write("games/azjax.jsonl", game, record)      # appends one line
    text = records.dumps(game, record, "sgf")

A bad record (a corrupt file, an illegal move, a wrong board size, an unknown result, a
truncated or huge file) is one line naming the file and the move (`RecordError`), warned
and skipped, or raised with `strict=True`.
"""

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

from azjax.games.records.base import (
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    Record,
    RecordError,
)
from azjax.games.records.reading import read
from azjax.games.records.sources import EXTENSIONS, entries, format_of
from azjax.games.records.writing import FORMATS, dumps, write

_log = logging.getLogger(__name__)


def paths(source, *, warn: Callable[[str], None] | None = None) -> Iterator[Path]:
    """The record files of `source`: a file, a folder (recursively: its files with a known
    extension sorted by name, then each subfolder), a glob ("games/**/*.sgf") or a list of
    these, found lazily (`sources`). A folder that cannot be read or is met twice (a
    symbolic link loop) is passed to `warn` in one line (default: a logging warning) and
    skipped.

    Raises:
      RecordError: `source` names no record file.
    """
    for entry in entries(source):
        if isinstance(entry, RecordError):
            (warn or _log.warning)(str(entry))
        else:
            yield entry


__all__ = [
    "EXTENSIONS",
    "FORMATS",
    "MAX_FILE_BYTES",
    "MAX_LINE_BYTES",
    "Record",
    "RecordError",
    "dumps",
    "format_of",
    "paths",
    "read",
    "write",
]
