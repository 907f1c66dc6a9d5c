"""Tournaments: checkpoints, baselines and outside engines play; Elo ratings with intervals.

    from azjax.matches import tournament
    ratings = tournament.run("tournaments/c4", ["runs/c4@every:50", "random", "mcts:400"])
    tournament.load_ratings("tournaments/c4")     # ratings.csv as a DataFrame
    tournament.GameLog("tournaments/c4").frame()  # every game played

`azjax tournament` is the command line of `run`.
"""

from azjax.matches.tournament.log import GameLog
from azjax.matches.tournament.players import PlayerInfo, resolve
from azjax.matches.tournament.runner import (
    SCHEDULES,
    format_table,
    load_ratings,
    pairings,
    rating_rows,
    ratings_table,
    read_elo,
    run,
    write_ratings,
)

__all__ = [
    "SCHEDULES",
    "GameLog",
    "PlayerInfo",
    "format_table",
    "load_ratings",
    "pairings",
    "rating_rows",
    "ratings_table",
    "read_elo",
    "resolve",
    "run",
    "write_ratings",
]
