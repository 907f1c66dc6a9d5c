"""Hex's picture: a rhombus of hexagons, each row half a cell right of the row above, Black's
sides (top and bottom) edged in black and White's (left and right) in white; columns
lettered a, b, c from the left, rows numbered from 1 at the top."""

import math

import numpy as np

from azjax.games.render.cells import CellBoard
from azjax.games.render.shapes import LOWER, UNIT, WOOD, circle, fmt, line, percent, text

PLAYERS = ("Black", "White")  # the first and the second player, as pictures name them
MOVE_NUMBERS = False  # an animation marks the last move only

_RADIUS = UNIT / math.sqrt(3)  # a hexagon's centre to its corners; UNIT is its width
# The six corners of a hexagon (pointed at the top), clockwise from the top, as offsets.
_CORNERS = [(0.0, -1.0), (0.5, -0.5), (0.5, 0.5), (0.0, 1.0), (-0.5, 0.5), (-0.5, -0.5)]


class _Board(CellBoard):
    players = PLAYERS

    def __init__(self, size: int, swap_action: int | None):
        super().__init__(size, size)
        self.swap_action = swap_action
        self.margin = 0.9 * UNIT
        width = 2 * self.margin + (size + (size - 1) / 2) * UNIT
        self.canvas.width = width
        self.canvas.height = 2 * self.margin + (2 + 1.5 * (size - 1)) * _RADIUS

    def at(self, point) -> tuple[float, float]:
        """The centre of a cell's hexagon."""
        row, col = divmod(int(point), self.cols)
        x = self.margin + (col + row / 2 + 0.5) * UNIT
        return x, self.margin + _RADIUS * (1 + 1.5 * row)

    def area(self, action: int) -> tuple[float, float, float, float]:
        """The band of a hexagon between its neighbours above and below (targets tile the
        board without overlapping)."""
        x, y = self.at(action)
        return x - UNIT / 2, y - 0.75 * _RADIUS, UNIT, 1.5 * _RADIUS

    def corner(self, point: int, index: int) -> tuple[float, float]:
        x, y = self.at(point)
        dx, dy = _CORNERS[index % 6]
        return x + dx * UNIT, y + dy * _RADIUS

    def side(self, point: int, index: int, colour: str, width: float) -> str:
        """The hexagon's side from corner `index` to the next one, drawn thick."""
        return line(
            *self.corner(point, index), *self.corner(point, index + 1), stroke=colour, width=width
        )

    def decorate(self) -> None:
        size, canvas = self.rows, self.canvas
        for point in range(self.num_points):
            corners = " ".join(
                f"{fmt(x)},{fmt(y)}" for x, y in map(self.corner, [point] * 6, range(6))
            )
            canvas.add(f'<polygon points="{corners}" fill="{WOOD}" stroke="#7a5a2f"/>')
        last = size - 1
        # The sides off the board (corners i to i + 1): top row 5-0, 0-1; bottom row 2-3, 3-4;
        # left column 3-4, 4-5; right column 0-1, 1-2.
        black = [(c, i) for c in range(size) for i in (5, 0)]
        black += [(last * size + c, i) for c in range(size) for i in (2, 3)]
        white = [(r * size, i) for r in range(size) for i in (3, 4)]
        white += [(r * size + last, i) for r in range(size) for i in (0, 1)]
        canvas.add(*(self.side(p, i, "#111", 6) for p, i in black))
        canvas.add(*(self.side(p, i, "#666", 7) for p, i in white))
        canvas.add(*(self.side(p, i, "#fff", 4) for p, i in white))
        for col in range(size):
            x, y = self.at(col)
            canvas.add(text(x, y - _RADIUS - 0.45 * self.margin, LOWER[col], cls="coord"))
        for row in range(size):
            x, y = self.at(row * size)
            canvas.add(text(x - 0.5 * UNIT - 0.45 * self.margin, y, row + 1, cls="coord"))

    def piece(self, x: float, y: float, first: bool) -> str:
        colour = "black" if first else "white"
        return circle(
            x,
            y,
            0.38 * UNIT,
            cls=f"stone {colour}",
            fill="#111" if first else "#f8f8f8",
            stroke="#000",
        )

    def last_point(self, board: np.ndarray, action: int) -> int | None:
        """The cell played; after the swap, the stone it turned."""
        if action == self.swap_action:
            stones = np.flatnonzero(board)
            return int(stones[0]) if len(stones) else None
        return action if action < self.num_points else None

    def extra(self, policy) -> str:
        if self.swap_action is None or policy is None or policy[self.swap_action] < 0.01:
            return ""
        return f" · swap {percent(policy[self.swap_action])}"


def svg(game, state, *, move_numbers, piece_letters, **overlays) -> str:
    """The picture of an unbatched `state` (`render.svg`'s overlays; no move numbers or
    piece letters)."""
    del move_numbers, piece_letters
    return _Board(game.size, game.swap_action).draw(state, **overlays)


def clicks(game, action: int, state) -> list[int]:
    """The web board's clicks for `action`: its cell, none for the swap (a button)."""
    del state
    return [] if action == game.swap_action else [action]
