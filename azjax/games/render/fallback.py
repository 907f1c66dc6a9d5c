"""The fallback picture: how `render.svg` draws a game that has no module of its own in
`azjax/games/render/` (a new game, before it gets one; docs/adding_a_game.md).

It draws what the default text draws (`notation.base.Notation.render`): the board of the
observation's height and width as cells, with a black disc where the first player has a
piece and a white one where the second has, read from the observation's first two planes
(the mover's pieces, then the opponent's). When the actions are the board's cells
(row-major from the top-left, A = H * W, or H * W + 1 with a pass last), each cell shows its
action id in a corner, the name the default notation gives the move, and the policy's
shades, the last move's dot and the web board's click targets lie on the cells; otherwise
the picture shows the pieces only, and the web board plays every move by a button.
"""

import numpy as np

from azjax.games.render.cells import CellBoard
from azjax.games.render.shapes import UNIT, circle, line, pass_label, rect, text

PLAYERS = ("Black", "White")  # the first and the second player, as pictures name them
MOVE_NUMBERS = False  # an animation marks the last move only


def on_cells(game) -> bool:
    """Whether `game`'s actions are its board's cells (and maybe a pass, last)."""
    height, width = game.observation_shape[:2]
    return game.num_actions in (height * width, height * width + 1)


class _Board(CellBoard):
    players = PLAYERS

    def __init__(self, game):
        super().__init__(*game.observation_shape[:2])
        self.game = game
        self.on_cells = on_cells(game)

    @property
    def num_areas(self) -> int:
        return self.num_points if self.on_cells else 0

    def board(self, state) -> np.ndarray:
        """The pieces from the observation's first two planes, which are the mover's view."""
        planes = np.asarray(self.game.observe(state))  # [H, W, C]
        mover = 1 - 2 * int(state.current_player)  # +1 when the first player moves
        board = mover * (planes[..., 0] > 0) - mover * (planes[..., 1] > 0)
        return board.reshape(-1).astype(np.int8)

    def last_point(self, board: np.ndarray, action: int) -> int | None:
        return action if self.on_cells and action < self.num_points else None

    def off_board_name(self, action: int) -> str:
        return "pass" if self.on_cells else str(action)

    def decorate(self) -> None:
        margin, rows, cols, canvas = self.margin, self.rows, self.cols, self.canvas
        canvas.add(rect(margin, margin, cols * UNIT, rows * UNIT, fill="#eee8d5"))
        for row in range(rows + 1):
            y = margin + row * UNIT
            canvas.add(line(margin, y, margin + cols * UNIT, y, stroke="#93a1a1"))
        for col in range(cols + 1):
            x = margin + col * UNIT
            canvas.add(line(x, margin, x, margin + rows * UNIT, stroke="#93a1a1"))
        if self.on_cells:
            for point in range(self.num_points):
                x, y = self.at(point)
                canvas.add(
                    text(x - 0.36 * UNIT, y - 0.36 * UNIT, point, cls="coord", size=8, fill="#999")
                )

    def piece(self, x: float, y: float, first: bool) -> str:
        colour = "black" if first else "white"
        return circle(
            x,
            y,
            0.4 * UNIT,
            cls=f"stone {colour}",
            fill="#111" if first else "#f8f8f8",
            stroke="#000",
        )

    def extra(self, policy) -> str:
        has_pass = self.game.num_actions == self.num_points + 1
        return pass_label(policy, self.num_points) if has_pass else ""


def svg(game, state, *, move_numbers, piece_letters, **overlays) -> str:
    """The picture of an unbatched `state` (`render.svg`'s overlays; no move numbers or
    piece letters)."""
    del move_numbers, piece_letters
    return _Board(game).draw(state, **overlays)


def clicks(game, action: int, state) -> list[int]:
    """The web board's clicks for `action`: its cell, or none (a button) for a move that is
    no cell."""
    if not on_cells(game):
        return []
    height, width = game.observation_shape[:2]
    return [] if action >= height * width else [action]
