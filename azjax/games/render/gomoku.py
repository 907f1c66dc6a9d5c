"""Gomoku's picture: stones on a wooden grid, columns lettered a, b, c from the left."""

from azjax.games.render import grid
from azjax.games.render.shapes import LOWER, WOOD, point_clicks

PLAYERS = ("Black", "White")  # the first and the second player, as pictures name them
MOVE_NUMBERS = True  # an animation numbers the stones in the order they were played


def svg(game, state, *, piece_letters, **overlays) -> str:
    """The picture of an unbatched `state` (`render.svg`'s overlays; no piece letters)."""
    del piece_letters
    return grid.draw(
        state,
        rows=game.height,
        cols=game.width,
        col_names=LOWER[: game.width],
        background=WOOD,
        players=PLAYERS,
        **overlays,
    )


def clicks(game, action: int, state) -> list[int]:
    """The web board's clicks for `action`: its point."""
    del game
    return point_clicks(action, state)
