"""The record files a source names: a file, a folder, a glob, or a list of these, found
lazily (a folder's files sorted by name, then its folders', each in turn; a glob's in the
file system's order), each read by the format its extension names.

- A file must have a known extension (.sgf, .pgn, .jsonl, any case).
- A folder is walked recursively, files with a known extension kept, others passed over; a
  folder met twice (a symbolic link loop) is reported and skipped.
- A glob ("games/**/*.sgf", `**` for any depth) keeps the files it matches that have a
  known extension; the folders it matches are not entered.

A source that names no record file is a `RecordError`.
"""

import glob
import os
import re
from collections.abc import Iterator
from pathlib import Path

from azjax.games.records.base import RecordError

EXTENSIONS = {".sgf": "sgf", ".pgn": "pgn", ".jsonl": "jsonl"}  # extension -> format
_MAGIC = re.compile(r"[*?[]")  # a glob's wildcards


def format_of(path: str | os.PathLike) -> str | None:
    """The format a file's extension names ("sgf", "pgn", "jsonl"), None for another."""
    return EXTENSIONS.get(Path(path).suffix.lower())


def entries(source) -> Iterator[Path | RecordError]:
    """The record files of `source` in order, and the problems met on the way (a folder
    that cannot be read, a symbolic link loop) where they stand.

    Raises:
      RecordError: `source` names no record file; a file with an unknown extension or a
        path that does not exist (in a list: an item that names no record file).
    """
    items = [source] if isinstance(source, str | os.PathLike) else list(source)
    if not items:
        raise RecordError("no record files named")
    found = 0
    for item in items:
        found_here = 0
        for entry in _entries(os.fspath(item)):
            found_here += isinstance(entry, Path)
            yield entry
        if not found_here:
            missing = RecordError(f"{os.fspath(item)}: no .sgf, .pgn or .jsonl files")
            if len(items) == 1:
                raise missing
            yield missing
        found += found_here
    if not found:
        raise RecordError(f"no .sgf, .pgn or .jsonl files in {', '.join(map(str, items))}")


def _entries(text: str) -> Iterator[Path | RecordError]:
    path = Path(text)
    if path.is_dir():
        yield from _walk(path)
    elif path.exists() or path.is_symlink():  # a file, a broken link or a loop of links
        if format_of(path) is None:
            raise RecordError(f"{text}: not a record file (.sgf, .pgn or .jsonl)")
        yield path
    elif _MAGIC.search(text):
        for match in glob.iglob(text, recursive=True):
            if format_of(match) is not None and not Path(match).is_dir():
                yield Path(match)
    else:
        raise RecordError(f"{text}: no such file or folder")


def _walk(root: Path) -> Iterator[Path | RecordError]:
    """The record files under `root`, depth first, each folder's entries sorted by name."""
    seen: set[tuple[int, int]] = set()
    stack: list[Path] = [root]
    while stack:
        folder = stack.pop()
        try:
            info = folder.stat()
            if (info.st_dev, info.st_ino) in seen:
                yield RecordError(f"{folder}: a folder met twice (a symbolic link loop?); skipped")
                continue
            seen.add((info.st_dev, info.st_ino))
            with os.scandir(folder) as listing:
                found = sorted(listing, key=lambda entry: entry.name)
        except OSError as error:
            yield RecordError(f"{folder}: {error.strerror or error}")
            continue
        folders = []
        for entry in found:
            try:
                is_folder = entry.is_dir()  # follows links
            except OSError:
                is_folder = False  # a loop of links: read as a file, it says why
            if is_folder:
                folders.append(Path(entry.path))
            elif format_of(entry.name) is not None:
                yield Path(entry.path)
        stack.extend(reversed(folders))
