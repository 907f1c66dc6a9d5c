"""`dumps` and `write`: a record as the text of a format, and as a file written whole.

An SGF or PGN file is written to a temporary file beside it and moved over it
(`os.replace`), so a reader never sees half a record. A JSONL record is appended to its
file as one line in one write, flushed to disk; where the file's last line was left
without its newline (a writer stopped mid-line), the new line starts on a line of its own.
"""

import os
import tempfile
from pathlib import Path

from azjax.errors import RunError
from azjax.games.base import Game
from azjax.games.records import jsonl, pgn, sgf
from azjax.games.records.base import Record, RecordError
from azjax.games.records.sources import format_of

FORMATS = ("sgf", "pgn", "jsonl")
_DUMPERS = {"sgf": sgf.dumps, "pgn": pgn.dumps, "jsonl": jsonl.dumps}


def dumps(game: Game, record: Record, fmt: str) -> str:
    """The text of one record: "sgf" (one SGF game; Go only), "pgn" (one PGN game in ICCS;
    Xiangqi), "jsonl" (one line ending in a newline; any game).

    Raises:
      RecordError: an unknown format, or a record the format cannot hold.
    """
    if fmt not in _DUMPERS:
        raise RecordError(f"unknown record format {fmt!r}; known: {', '.join(FORMATS)}")
    return _DUMPERS[fmt](game, record)


def write(path: str | os.PathLike, game: Game, record: Record) -> Path:
    """Writes one record to `path` in the format of its extension: an SGF or PGN file
    replaced whole (atomically), or one line appended to a JSONL file. Creates the folder.

    Raises:
      RecordError: an unknown extension, or a record the format cannot hold.
      RunError: the file system refuses the write.
    """
    path = Path(path)
    fmt = format_of(path)
    if fmt is None:
        raise RecordError(f"{path}: not a record file (.sgf, .pgn or .jsonl)")
    data = dumps(game, record, fmt).encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "jsonl":
            _append(path, data)
        else:
            _replace(path, data)
    except OSError as error:
        raise RunError(f"cannot write {path}: {error.strerror or error}") from None
    return path


def _append(path: Path, line: bytes) -> None:
    descriptor = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        end = os.fstat(descriptor).st_size
        if end and os.pread(descriptor, 1, end - 1) != b"\n":
            line = b"\n" + line
        _write_all(descriptor, line)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _replace(path: Path, data: bytes) -> None:
    descriptor, temporary = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
    )
    try:
        os.fchmod(descriptor, 0o644)
        _write_all(descriptor, data)
        os.fsync(descriptor)
        os.close(descriptor)
        descriptor = None
        os.replace(temporary, path)
    except BaseException:
        if descriptor is not None:
            os.close(descriptor)
        os.unlink(temporary)
        raise


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]
