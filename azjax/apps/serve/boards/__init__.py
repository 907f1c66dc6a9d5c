"""The web board of each game: `of(game)` builds its `Board`.

A game whose web board has options of its own keeps a `Board` subclass as `BOARD` in the
module named after its family (`azjax/apps/serve/boards/go.py` for `azjax.games.go`, found by
`games.companion`: Go's komi and score, Xiangqi's start FEN and piece letters); the others
get `session.Board`, whose moves, pictures and player names come from the game's notation
and pictures.
"""

from azjax import games
from azjax.apps.serve.session import Board


def board_class(game_class: type) -> type[Board]:
    """The web board class of a game class: its family's `BOARD`, else `Board`."""
    module = games.companion(game_class, __name__)
    return Board if module is None else module.BOARD


def of(game, *, name: str | None = None) -> Board:
    """The web board of `game`, called `name` (the registry's name; default the game's)."""
    return board_class(type(game))(game, name=name)


__all__ = ["Board", "board_class", "of"]
