"""Tic-tac-toe's picture: red crosses and blue noughts, the cells numbered 1-9 in a corner."""

from azjax.games.render.cells import CellBoard
from azjax.games.render.shapes import _UNIT, _circle, _line, _point_clicks, _text

PLAYERS = ("X", "O")  # the first and the second player, as pictures name them
MOVE_NUMBERS = False  # an animation marks the last move only


class _Board(CellBoard):
    players = PLAYERS

    def decorate(self) -> None:
        margin = self.margin
        for i in (1, 2):
            self.canvas.add(
                _line(margin, margin + i * _UNIT, margin + 3 * _UNIT, margin + i * _UNIT, width=2)
            )
            self.canvas.add(
                _line(margin + i * _UNIT, margin, margin + i * _UNIT, margin + 3 * _UNIT, width=2)
            )
        for point in range(self.num_points):
            x, y = self.at(point)
            self.canvas.add(
                _text(
                    x - 0.38 * _UNIT, y - 0.36 * _UNIT, point + 1, cls="coord", size=8, fill="#999"
                )
            )

    def piece(self, x: float, y: float, first: bool) -> str:
        d = 0.28 * _UNIT
        shape = (
            _line(x - d, y - d, x + d, y + d, stroke="#c00", width=4)
            + _line(x - d, y + d, x + d, y - d, stroke="#c00", width=4)
            if first
            else _circle(x, y, d, stroke="#00c", width=4)
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
    return _point_clicks(action, state)
