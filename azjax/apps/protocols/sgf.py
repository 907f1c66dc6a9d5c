"""SGF (Smart Game Format, FF[4]) records of Go games: self-play, arena and GTP games.

The writing and the reading of one game live with the game records
(`azjax.games.records.sgf`: `game_record`, `result_string`; `azjax.games.records.sgf_parse`:
`parse_game`, for GTP's loadsgf); this module adds the records of arena matches and their
files.

    records = sgf.match_records(game, result, "azjax", "mcts:200")
    paths = sgf.write_records("games/", "arena", records)   # games/arena-0000.sgf, ...
"""

from collections.abc import Sequence
from pathlib import Path

import jax
import numpy as np

from azjax.games import Game
from azjax.games.records.sgf import check_go, game_record, result_string, search_comment
from azjax.matches.arena import MatchResult

__all__ = ["match_records", "write_records"]


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


def match_records(
    game: Game,
    result: MatchResult,
    name_a: str,
    name_b: str,
    *,
    values: jax.Array | np.ndarray | None = None,
    simulations: int | None = None,
    date: str | None = None,
) -> list[str]:
    """SGF records of the games of an arena match (see `arena.make_match`), A named `name_a`.

    Args:
      values: [T, G] float32, where the players searched: the searched value of each
        position for the player who moved from it; each move then gets its comment
        (`search_comment`, with `simulations` visits where given).
      date: the DT of every record (default: today).
    """
    check_go(game)
    scores = jax.device_get(jax.jit(jax.vmap(game.score))(result.final_states))  # [G]
    actions, lengths, a_first = jax.device_get((result.actions, result.lengths, result.a_first))
    values = None if values is None else np.asarray(jax.device_get(values))
    records = []
    for index, length in enumerate(lengths.tolist()):
        black, white = (name_a, name_b) if a_first[index] else (name_b, name_a)
        comments = None
        if values is not None:
            comments = [search_comment(float(v), simulations) for v in values[:length, index]]
        records.append(
            game_record(
                game,
                actions[:length, index].tolist(),
                result=result_string(float(scores[index])),
                black=black,
                white=white,
                comments=comments,
                date=date,
            )
        )
    return records
