"""SGF (Smart Game Format, FF[4]) records of Go games: self-play, arena and GTP games.

Only what Go software needs to replay a game is written: board size, komi, rules, players,
result and the moves. Points are SGF coordinates, column letter then row letter counted
from the top-left ("aa"), which is exactly the order of our action ids (row-major from the
top-left); a pass is the empty value `B[]`.

    text = sgf.game_record(game, actions, result=sgf.result_string(score))
"""

from collections.abc import Sequence
from pathlib import Path

import jax

from azjax import __version__
from azjax.arena import MatchResult
from azjax.games import Game
from azjax.types import UserError

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def check_go(game: Game) -> None:
    """Raises UserError unless `game` is a Go game (the only game SGF records are kept for)."""
    if not game.name.startswith("go_"):
        raise UserError(f"SGF records are written for go games, not {game.name}")


def result_string(score: float) -> str:
    """SGF/GTP result for a score (black area - white area - komi): "B+3.5", "W+0.5", "0"."""
    if score > 0:
        return f"B+{score:g}"
    if score < 0:
        return f"W+{-score:g}"
    return "0"


def move_value(game: Game, action: int) -> str:
    """The SGF value of an action: two coordinate letters, or "" for a pass."""
    size = game.size
    if action == size * size:
        return ""
    row, column = divmod(int(action), size)
    return _LETTERS[column] + _LETTERS[row]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("]", "\\]")


def game_record(
    game: Game,
    actions: Sequence[int],
    *,
    result: str | None = None,
    black: str = "azjax",
    white: str = "azjax",
    comment: str | None = None,
    komi: float | None = None,
) -> str:
    """Writes one Go game as an SGF string.

    Args:
      game: the Go game (its size and komi go into SZ and KM).
      actions: the action ids played, black first, in order.
      result: the RE value ("B+3.5", "W+R", "0"); omitted when None.
      black, white: the players' names (PB, PW).
      comment: a game comment (GC).
      komi: the komi played (KM) where it differs from the game's (`GoState.komi`).
    """
    check_go(game)
    header = {
        "GM": "1",
        "FF": "4",
        "CA": "UTF-8",
        "AP": f"azjax:{__version__}",
        "SZ": str(game.size),
        "KM": f"{game.komi if komi is None else komi:g}",
        "RU": "Tromp-Taylor" if game.superko else "Tromp-Taylor, simple ko",
        "PB": black,
        "PW": white,
    }
    if result is not None:
        header["RE"] = result
    if comment:
        header["GC"] = comment
    root = "".join(f"{key}[{_escape(value)}]" for key, value in header.items())
    moves = "".join(
        f";{'BW'[ply % 2]}[{move_value(game, action)}]" for ply, action in enumerate(actions)
    )
    return f"(;{root}{moves})\n"


def write_records(directory: str | Path, prefix: str, records: Sequence[str]) -> list[Path]:
    """Writes SGF strings as `directory/prefix-0000.sgf`, ...; returns the paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, record in enumerate(records):
        path = directory / f"{prefix}-{index:04d}.sgf"
        path.write_text(record)
        paths.append(path)
    return paths


def match_records(game: Game, result: MatchResult, name_a: str, name_b: str) -> list[str]:
    """SGF records of the games of an arena match (see `arena.make_match`), A named `name_a`."""
    check_go(game)
    scores = jax.device_get(jax.jit(jax.vmap(game.score))(result.final_states))  # [G]
    actions, lengths, a_first = jax.device_get((result.actions, result.lengths, result.a_first))
    records = []
    for index, length in enumerate(lengths.tolist()):
        black, white = (name_a, name_b) if a_first[index] else (name_b, name_a)
        records.append(
            game_record(
                game,
                actions[:length, index].tolist(),
                result=result_string(float(scores[index])),
                black=black,
                white=white,
            )
        )
    return records
