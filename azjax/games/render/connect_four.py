"""Connect Four's picture: red and yellow discs in a blue frame, columns numbered 1-7; a
move is a column (its shade, percentage and web board target span the column)."""

import numpy as np

from azjax.games.render.cells import CellBoard
from azjax.games.render.shapes import UNIT, circle, rect, text

PLAYERS = ("Red", "Yellow")  # the first and the second player, as pictures name them
MOVE_NUMBERS = False  # an animation marks the last move only


class _Board(CellBoard):
    players = PLAYERS

    @property
    def num_areas(self) -> int:
        return self.cols

    def area(self, action: int) -> tuple[float, float, float, float]:
        return self.margin + action * UNIT, self.margin, UNIT, self.rows * UNIT

    def label_at(self, action: int, board: np.ndarray) -> tuple[float, float, str]:
        return self.margin + (action + 0.5) * UNIT, self.margin / 2, "#000"

    def last_point(self, board: np.ndarray, action: int) -> int | None:
        """The top disc of the column played."""
        filled = np.flatnonzero(board.reshape(self.rows, self.cols)[:, action])
        return int(filled[0]) * self.cols + action if len(filled) else None

    def decorate(self) -> None:
        margin, rows, cols, canvas = self.margin, self.rows, self.cols, self.canvas
        canvas.add(rect(margin, margin, cols * UNIT, rows * UNIT, fill="#1f4fbf", rx=8))
        for point in range(self.num_points):
            canvas.add(circle(*self.at(point), 0.4 * UNIT, fill="#fff"))
        for col in range(cols):
            x = margin + (col + 0.5) * UNIT
            canvas.add(text(x, canvas.height - margin / 2, col + 1, cls="coord"))

    def piece(self, x: float, y: float, first: bool) -> str:
        colour = "red" if first else "yellow"
        return circle(
            x,
            y,
            0.4 * UNIT,
            cls=f"stone {colour}",
            fill="#d62728" if first else "#f5d000",
            stroke="#333",
        )


def svg(game, state, *, move_numbers, piece_letters, **overlays) -> str:
    """The picture of an unbatched `state` (`render.svg`'s overlays; no move numbers or
    piece letters)."""
    del game, move_numbers, piece_letters
    return _Board(6, 7).draw(state, **overlays)


def clicks(game, action: int, state) -> list[int]:
    """The web board's clicks for `action`: its column (a click anywhere in it)."""
    del game, state
    return [action]
