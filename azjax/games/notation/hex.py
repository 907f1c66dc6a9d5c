"""Hex as text: cells named by a column letter and a row number from the top, as OpenSpiel
and HexGui write them ("a1" is the top-left corner); "swap" under the swap rule."""

import string

from azjax.games.notation.base import Notation

_COLUMN_NAMES = string.ascii_lowercase
SWAP = "swap"


class HexNotation(Notation):
    """Cells are typed as a column letter a-z and a row number counted from the top, as
    `render` labels them; the swap (with `swap=True`) as "swap"."""

    def render(self, state) -> str:
        """Draws the rhombus, each row half a cell right of the row above (X: Black, who
        joins top and bottom; O: White, who joins left and right), labelled with the cell
        names that `parse_action` accepts (the letters under the last row)."""
        size = self.game.size
        *rows, status = super().render(state).split("\n")
        width = len(str(size))
        lines = [" " * row + f"{row + 1:>{width}} {cells}" for row, cells in enumerate(rows)]
        letters = " " * (size + width) + " ".join(_COLUMN_NAMES[:size])  # under the last row
        return "\n".join([*lines, letters, status])

    def action_to_string(self, action: int, state=None) -> str:
        """Names a cell by its column letter and its row number counted from the top."""
        if int(action) == self.game.swap_action:
            return SWAP
        row, column = divmod(int(action), self.game.size)
        return f"{_COLUMN_NAMES[column]}{row + 1}"

    def _notation_hint(self, state) -> str:
        size = self.game.size
        swap = ', or "swap" as White\'s first move' if self.game.swap else ""
        return (
            f"type a column a-{_COLUMN_NAMES[size - 1]} and a row 1-{size}, like "
            f"{self.action_to_string(size // 2 * size + size // 2)}{swap}"
        )

    def _why_illegal(self, state, action: int) -> str:
        if action == self.game.swap_action:
            return "the swap is White's first move only"
        return "the cell is taken"


NOTATION = HexNotation  # what `azjax.games.notation.of` finds for this game
