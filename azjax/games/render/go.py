"""Go's picture: stones on a wooden grid, GTP coordinates (no letter I), star points."""

from azjax.games.render import grid
from azjax.games.render.shapes import GO_LETTERS, GO_WOOD, point_clicks

PLAYERS = ("Black", "White")  # the first and the second player, as pictures name them
MOVE_NUMBERS = True  # an animation numbers the stones in the order they were played


def svg(game, state, *, piece_letters, **overlays) -> str:
    """The picture of an unbatched `state` (`render.svg`'s overlays; no piece letters)."""
    del piece_letters
    size = game.size
    return grid.draw(
        state,
        rows=size,
        cols=size,
        col_names=GO_LETTERS[:size],
        background=GO_WOOD,
        players=PLAYERS,
        **overlays,
    )


def clicks(game, action: int, state) -> list[int]:
    """The web board's clicks for `action`: its point, none for a pass (a button)."""
    del game
    return point_clicks(action, state)
