"""A tournament directory on disk: its settings and its game log.

    TOURNAMENT/tournament.json   the game, and each player's spec and search settings
    TOURNAMENT/games.jsonl       one finished game per line, appended as games finish
    TOURNAMENT/ratings.csv       the latest ratings (written by `azjax tournament`)
    TOURNAMENT/ratings.png       ratings against training iteration

A game line is `{"a": NAME, "b": NAME, "score_a": 1 | 0.5 | 0, "a_first": BOOL, "plies": N,
"reason": TEXT}` (reason: how a game with an outside engine ended when it was not by the
rules: a resignation, a crash, a timeout). A batch of games is appended with one `write`
and an `fsync`, so a stop (Ctrl-C, kill -9) loses at most the games still being played; a
torn last line (a kill in the middle of a write) is cut off when the log is next opened.

The directory may be a cloud URI (`gs://bucket/tournaments/c4`, see `paths.workdir_path`).
Cloud storage has no append: each batch rewrites the whole log, an object that a store
replaces at once (so no line there is ever torn).
"""

import json
import os
from pathlib import Path

from azjax.paths import (
    is_local,
    parse_json,
    read_json,
    read_regular,
    workdir_path,
    write_atomically,
)
from azjax.types import UserError

SETTINGS = "tournament.json"
GAMES = "games.jsonl"


class GameLog:
    """The finished games of a tournament, read once and appended to.

    Args:
      directory: the tournament directory (created if missing).
    """

    def __init__(self, directory: str | Path):
        self.directory = workdir_path(directory)
        make_directory(self.directory)
        self.path = self.directory / GAMES
        self.games: list[dict] = []
        self._pairs: dict[frozenset, int] = {}  # games per pair of names
        self._local = is_local(self.path)
        self._text = b""  # the cloud log as stored, rewritten whole with each batch
        if self.path.exists():
            self._read()

    def _read(self) -> None:
        data = read_regular(self.path)  # a FIFO in its place is refused, not waited on
        end = data.rfind(b"\n") + 1  # a torn last line (a kill mid-write) is dropped
        if not self._local:  # an object is written whole: its last line is never torn
            end = len(data)
            self._text = data if data.endswith(b"\n") or not data else data + b"\n"
        for number, line in enumerate(data[:end].splitlines(), 1):
            if not line.strip():
                continue
            game = parse_json(line, f"{self.path} line {number}")
            try:
                game = {
                    "a": str(game["a"]),
                    "b": str(game["b"]),
                    "score_a": float(game["score_a"]),
                    "a_first": bool(game["a_first"]),
                    "plies": int(game["plies"]),
                    "reason": str(game.get("reason", "")),
                }
                if game["score_a"] not in (0.0, 0.5, 1.0) or game["plies"] < 0:
                    raise ValueError
            except (ValueError, KeyError, TypeError, OverflowError):
                raise UserError(f"{self.path} line {number} is not a game record") from None
            self._add(game)
        if self._local and end < len(data):
            with open(self.path, "r+b") as file:
                file.truncate(end)

    def append(self, games: list[dict]) -> None:
        """Appends finished games (dicts with the keys of a game line) durably."""
        if not games:
            return
        text = "".join(json.dumps(game, sort_keys=True) + "\n" for game in games)
        if self._local:
            with open(self.path, "a", encoding="utf-8") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
        else:
            write_atomically(self.path, self._text + text.encode())
            self._text += text.encode()
        for game in games:
            self._add(game)

    def _add(self, game: dict) -> None:
        self.games.append(game)
        pair = frozenset((game["a"], game["b"]))
        self._pairs[pair] = self._pairs.get(pair, 0) + 1

    def played(self, a: str, b: str) -> int:
        """Games finished between `a` and `b`, in either order."""
        return self._pairs.get(frozenset((a, b)), 0)

    def between(self, a: str, b: str) -> list[dict]:
        """The finished games between `a` and `b`, in either order."""
        return [game for game in self.games if {game["a"], game["b"]} == {a, b}]

    def opponents(self, player: str) -> list[str]:
        """Everyone `player` finished a game against, in the order they first met."""
        met = (
            g["b"] if g["a"] == player else g["a"] for g in self.games if player in (g["a"], g["b"])
        )
        return list(dict.fromkeys(met))

    def results(self) -> list[tuple[str, str, float]]:
        """(a, b, score of a) per game, for `ratings.fit`."""
        return [(game["a"], game["b"], game["score_a"]) for game in self.games]

    def frame(self):
        """The games as a pandas DataFrame, one row per game."""
        import pandas as pd  # noqa: PLC0415

        columns = ["a", "b", "score_a", "a_first", "plies", "reason"]
        return pd.DataFrame(self.games, columns=columns)


def score_of(game: dict, player: str) -> float:
    """`player`'s score in a game line (1, 0.5 or 0), whichever side it played."""
    return game["score_a"] if game["a"] == player else 1.0 - game["score_a"]


def make_directory(directory) -> None:
    """Makes a tournament directory (and its parents) where it is missing.

    Raises:
      UserError: a file in its place, or a directory that cannot be made (one line).
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise UserError(f"the tournament directory {directory} is a file") from None
    except OSError as error:
        reason = error.strerror or str(error)
        raise UserError(f"cannot make the tournament directory {directory}: {reason}") from None


def read_settings(directory: str | Path) -> dict:
    """The tournament's settings: {"game": {"name", "kwargs"}, "players": {name: settings}};
    empty when new.

    Raises:
      UserError: a damaged settings file (one line naming it).
    """
    path = workdir_path(directory) / SETTINGS
    if not path.exists():
        return {}
    settings = read_json(path)  # not JSON, nested too deeply...: one line
    game = settings.get("game") if isinstance(settings, dict) else None
    if (
        not isinstance(settings, dict)
        or not isinstance(settings.get("players"), dict)
        or not all(isinstance(player, dict) for player in settings["players"].values())
        or not (
            game is None
            or (
                isinstance(game, dict)
                and isinstance(game.get("name"), str)
                and isinstance(game.get("kwargs"), dict)
            )
        )
    ):
        raise UserError(f"{path} is damaged (not a tournament's settings)")
    return settings


def write_settings(directory: str | Path, settings: dict) -> None:
    """Writes the settings atomically (a temporary file renamed over the old one; on cloud
    storage the object replaced whole)."""
    text = json.dumps(settings, indent=1, sort_keys=True) + "\n"
    write_atomically(workdir_path(directory) / SETTINGS, text.encode())
