"""Tic-tac-toe as text: cells numbered 1-9, the board drawn beside a key of the numbers."""

from azjax.games.notation.base import Notation

_SIZE = 3


class TicTacToeNotation(Notation):
    """Cells are typed 1-9, row-major from the top-left (action id + 1)."""

    def render(self, state) -> str:
        """Draws the board with a key of the cell numbers 1-9 that `parse_action` accepts."""
        *rows, status = super().render(state).split("\n")
        key = [
            " ".join(self.action_to_string(row * _SIZE + col) for col in range(_SIZE))
            for row in range(_SIZE)
        ]
        return "\n".join(
            [*(f"{row}    {cells}" for row, cells in zip(rows, key, strict=True)), status]
        )

    def action_to_string(self, action: int, state=None) -> str:
        """Cells are numbered 1-9 for humans, row-major from the top-left (action id + 1)."""
        return str(int(action) + 1)


NOTATION = TicTacToeNotation  # what `azjax.games.notation.of` finds for this game
