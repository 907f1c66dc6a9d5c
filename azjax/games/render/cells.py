"""Pieces in the cells of a rectangle (Tic-tac-toe, Othello, Connect Four): the layers of
the picture in order, each game's module overriding the ones that are its own."""

import numpy as np

from azjax.games.render.shapes import (
    UNIT,
    Canvas,
    caption,
    circle,
    policy_label,
    rect,
    target,
)


class CellBoard:
    """One picture of a board of `rows` x `cols` cells, drawn by `draw`.

    The shared layers: the policy's shades, the pieces, the policy's percentages, the last
    move's dot, the web board's targets. By default an action is a cell (row-major from the
    top-left) and an action past the last cell a pass; a game's subclass draws its board
    (`decorate`) and its pieces (`piece`) and may change where the pieces are read from
    (`board`), where actions lie (`area`, `label_at`, `last_point`) and what the caption
    adds (`extra`, `off_board_name`).

    Attributes:
      players: the names of the first and the second player, for the caption.
      label_fill: the colour of the policy's percentages on the cells.
    """

    players: tuple[str, str] = ("first player", "second player")
    label_fill = "#00008b"

    def __init__(self, rows: int, cols: int):
        self.rows, self.cols = rows, cols
        self.margin = 0.7 * UNIT
        self.canvas = Canvas(2 * self.margin + cols * UNIT, 2 * self.margin + rows * UNIT)

    @property
    def num_points(self) -> int:
        return self.rows * self.cols

    @property
    def num_areas(self) -> int:
        """How many actions have an area on the board (policy shades, targets)."""
        return self.num_points

    def at(self, point) -> tuple[float, float]:
        """The centre of a cell."""
        row, col = divmod(int(point), self.cols)
        return self.margin + (col + 0.5) * UNIT, self.margin + (row + 0.5) * UNIT

    def area(self, action: int) -> tuple[float, float, float, float]:
        """(x, y, width, height) of an action's shade and target: its cell."""
        x, y = self.at(action)
        return x - UNIT / 2, y - UNIT / 2, UNIT, UNIT

    def label_at(self, action: int, board: np.ndarray) -> tuple[float, float, str]:
        """(x, y, colour) of an action's percentage: its cell's centre."""
        del board
        return *self.at(action), self.label_fill

    def last_point(self, board: np.ndarray, action: int) -> int | None:
        """The cell that the last move's dot marks, or None for a pass."""
        del board
        return action if action < self.num_points else None

    def board(self, state) -> np.ndarray:
        """[rows * cols] the pieces, row-major: > 0 the first player's, < 0 the second's."""
        return np.asarray(state.board)

    def off_board_name(self, action: int) -> str:
        """What the caption calls a last move with no cell to mark (`last_point` None)."""
        del action
        return "pass"

    def decorate(self) -> None:
        """Draws the board under the pieces."""

    def piece(self, x: float, y: float, first: bool) -> str:
        """The SVG element of a piece (class "stone" and its colour) centred on (x, y)."""
        raise NotImplementedError

    def extra(self, policy) -> str:
        """What the caption adds after the status (" · pass 12%")."""
        del policy
        return ""

    def draw(self, state, *, policy, value, last_action, size, targets) -> str:
        """The SVG picture of an unbatched `state` (the overlays are `render.svg`'s)."""
        board = self.board(state)
        canvas = self.canvas
        self.decorate()
        shown = [] if policy is None else np.flatnonzero(policy[: self.num_areas] >= 0.01)
        for action in shown:
            p = float(policy[action])
            canvas.add(
                rect(
                    *self.area(action),
                    fill="#1e90ff",
                    cls="policy-shade",
                    opacity=0.15 + 0.5 * p,
                )
            )
        for point in np.flatnonzero(board[: self.num_points]):
            canvas.add(self.piece(*self.at(point), board[point] > 0))
        for action in shown:
            x, y, fill = self.label_at(action, board)
            canvas.add(policy_label(x, y, policy[action], fill=fill))
        extra = self.extra(policy)
        if last_action is not None:
            action = int(last_action)
            point = self.last_point(board, action)
            if point is None:
                extra += f" · last: {self.off_board_name(action)}"
                canvas.add(f'<g class="last-move" data-action="{action}"/>')
            else:
                x, y = self.at(point)
                canvas.add(
                    circle(x, y, 0.12 * UNIT, cls="last-move", fill="#ff8c00", stroke="#000")
                )
        if targets:
            for action in range(self.num_areas):
                canvas.add(target(*self.area(action), action))
        return canvas.finish(caption(self.players, state, value, extra), size, "#fff")
