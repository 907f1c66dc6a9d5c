"""Othello's picture: black and white discs on green felt, columns a-h, rows 1-8 from the
top."""

import numpy as np

from azjax.games.render.cells import CellBoard
from azjax.games.render.shapes import (
    _FELT,
    _LOWER,
    _UNIT,
    _circle,
    _line,
    _pass_label,
    _point_clicks,
    _rect,
    _text,
)

PLAYERS = ("Black", "White")  # the first and the second player, as pictures name them
MOVE_NUMBERS = False  # discs turn over: an animation marks the last move only


class _Board(CellBoard):
    players = PLAYERS
    label_fill = "#ff0"

    def decorate(self) -> None:
        margin, rows, cols, canvas = self.margin, self.rows, self.cols, self.canvas
        canvas.add(_rect(margin, margin, cols * _UNIT, rows * _UNIT, fill=_FELT))
        for i in range(rows + 1):
            canvas.add(_line(margin, margin + i * _UNIT, margin + cols * _UNIT, margin + i * _UNIT))
            canvas.add(_line(margin + i * _UNIT, margin, margin + i * _UNIT, margin + rows * _UNIT))
        for col in range(cols):
            canvas.add(_text(margin + (col + 0.5) * _UNIT, margin / 2, _LOWER[col], cls="coord"))
        for row in range(rows):
            canvas.add(_text(margin / 2, margin + (row + 0.5) * _UNIT, row + 1, cls="coord"))

    def piece(self, x: float, y: float, first: bool) -> str:
        colour = "black" if first else "white"
        return _circle(
            x,
            y,
            0.42 * _UNIT,
            cls=f"stone {colour}",
            fill="#111" if first else "#f8f8f8",
            stroke="#000",
        )

    def extra(self, policy) -> str:
        return _pass_label(policy, self.num_points)


def svg(game, state, *, move_numbers, piece_letters, **overlays) -> str:
    """The picture of an unbatched `state` (`render.svg`'s overlays; no move numbers or
    piece letters)."""
    del game, move_numbers, piece_letters
    side = int(round(np.asarray(state.board).size ** 0.5))
    return _Board(side, side).draw(state, **overlays)


def clicks(game, action: int, state) -> list[int]:
    """The web board's clicks for `action`: its cell, none for a pass (a button)."""
    del game
    return _point_clicks(action, state)
