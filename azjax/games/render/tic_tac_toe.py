"""Tic-tac-toe's picture: red crosses and blue noughts, the cells numbered 1-9 in a corner."""

from azjax.games.render.cells import CellBoard
from azjax.games.render.shapes import UNIT, circle, line, point_clicks, text

PLAYERS = ("X", "O")  # the first and the second player, as pictures name them
MOVE_NUMBERS = False  # an animation marks the last move only


class _Board(CellBoard):
    players = PLAYERS

    def decorate(self) -> None:
        margin = self.margin
        for i in (1, 2):
            self.canvas.add(
                line(margin, margin + i * UNIT, margin + 3 * UNIT, margin + i * UNIT, width=2)
            )
            self.canvas.add(
                line(margin + i * UNIT, margin, margin + i * UNIT, margin + 3 * UNIT, width=2)
            )
        for point in range(self.num_points):
            x, y = self.at(point)
            self.canvas.add(
                text(x - 0.38 * UNIT, y - 0.36 * UNIT, point + 1, cls="coord", size=8, fill="#999")
            )

    def piece(self, x: float, y: float, first: bool) -> str:
        d = 0.28 * UNIT
        shape = (
            line(x - d, y - d, x + d, y + d, stroke="#c00", width=4)
            + line(x - d, y + d, x + d, y - d, stroke="#c00", width=4)
            if first
            else circle(x, y, d, stroke="#00c", width=4)
        )
        return f'<g class="stone {"x" if first else "o"}">{shape}</g>'


def svg(game, state, *, move_numbers, piece_letters, **overlays) -> str:
    """The picture of an unbatched `state` (`render.svg`'s overlays; no move numbers or
    piece letters)."""
    del game, move_numbers, piece_letters
    return _Board(3, 3).draw(state, **overlays)


def clicks(game, action: int, state) -> list[int]:
    """The web board's clicks for `action`: its cell."""
    del game
    return point_clicks(action, state)
