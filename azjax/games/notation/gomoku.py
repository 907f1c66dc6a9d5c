"""Gomoku as text: points named by a column letter and a row number from the bottom."""

import string

from azjax.games.notation.base import Notation

_COLUMN_NAMES = string.ascii_lowercase


class GomokuNotation(Notation):
    """Points are typed as a column letter a-z and a row number counted from the bottom
    ("h8" is the centre of 15 x 15), as `render` labels them."""

    def render(self, state) -> str:
        """Draws the board labelled with the point names that `parse_action` accepts.

        Rows are numbered from 1 at the bottom and columns lettered from a at the left, so
        "c2" is the third column of the second row from the bottom.
        """
        game = self.game
        *rows, status = super().render(state).split("\n")
        label_width = len(str(game.height))
        numbered = [f"{game.height - row:>{label_width}} {cells}" for row, cells in enumerate(rows)]
        letters = " " * label_width + " " + " ".join(_COLUMN_NAMES[: game.width])
        return "\n".join([*numbered, letters, status])

    def action_to_string(self, action: int, state=None) -> str:
        """Names a point by its column letter and its row number counted from the bottom."""
        row, column = divmod(int(action), self.game.width)
        return f"{_COLUMN_NAMES[column]}{self.game.height - row}"

    def _notation_hint(self, state) -> str:
        game = self.game
        last_column = _COLUMN_NAMES[game.width - 1]
        centre = game.height // 2 * game.width + game.width // 2
        return (
            f"type a column a-{last_column} and a row 1-{game.height}, like "
            f"{self.action_to_string(centre)}"
        )

    def _why_illegal(self, state, action: int) -> str:
        return "the point is taken"


NOTATION = GomokuNotation  # what `azjax.games.notation.of` finds for this game
