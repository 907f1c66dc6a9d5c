"""Othello's picture: black and white discs on green felt, columns a-h, rows 1-8 from the
top."""

import numpy as np

from azjax.games.render.cells import CellBoard
from azjax.games.render.shapes import (
    FELT,
    LOWER,
    UNIT,
    circle,
    line,
    pass_label,
    point_clicks,
    rect,
    text,
)

PLAYERS = ("Black", "White")  # the first and the second player, as pictures name them
MOVE_NUMBERS = False  # discs turn over: an animation marks the last move only


class _Board(CellBoard):
    players = PLAYERS
    label_fill = "#ff0"

    def decorate(self) -> None:
        margin, rows, cols, canvas = self.margin, self.rows, self.cols, self.canvas
        canvas.add(rect(margin, margin, cols * UNIT, rows * UNIT, fill=FELT))
        for i in range(rows + 1):
            canvas.add(line(margin, margin + i * UNIT, margin + cols * UNIT, margin + i * UNIT))
            canvas.add(line(margin + i * UNIT, margin, margin + i * UNIT, margin + rows * UNIT))
        for col in range(cols):
            canvas.add(text(margin + (col + 0.5) * UNIT, margin / 2, LOWER[col], cls="coord"))
        for row in range(rows):
            canvas.add(text(margin / 2, margin + (row + 0.5) * UNIT, row + 1, cls="coord"))

    def piece(self, x: float, y: float, first: bool) -> str:
        colour = "black" if first else "white"
        return circle(
            x,
            y,
            0.42 * UNIT,
            cls=f"stone {colour}",
            fill="#111" if first else "#f8f8f8",
            stroke="#000",
        )

    def extra(self, policy) -> str:
        return pass_label(policy, self.num_points)


def svg(game, state, *, move_numbers, piece_letters, **overlays) -> str:
    """The picture of an unbatched `state` (`render.svg`'s overlays; no move numbers or
    piece letters)."""
    del game, move_numbers, piece_letters
    side = int(round(np.asarray(state.board).size ** 0.5))
    return _Board(side, side).draw(state, **overlays)


def clicks(game, action: int, state) -> list[int]:
    """The web board's clicks for `action`: its cell, none for a pass (a button)."""
    del game
    return point_clicks(action, state)
