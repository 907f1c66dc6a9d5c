"""Othello as text: points named as in Othello notation ("d3"), or "pass"."""

from azjax.games.notation.base import Notation

_COLUMN_LETTERS = "abcdefgh"


class OthelloNotation(Notation):
    """Points are typed as a column letter and a row number from the top ("d3"), or
    "pass"; `render` labels the columns above and the rows on the right."""

    def render(self, state) -> str:
        """Draws the board with the column letters above and the row numbers on the right, the
        names `parse_action` reads."""
        *rows, status = super().render(state).split("\n")
        header = " ".join(_COLUMN_LETTERS[: self._size])
        return "\n".join([header, *(f"{row} {i + 1}" for i, row in enumerate(rows)), status])

    def action_to_string(self, action: int, state=None) -> str:
        """Names points as in Othello notation ("d3": column d, row 3 from the top), or "pass"."""
        row, column = divmod(int(action), self._size)
        return "pass" if row == self._size else f"{_COLUMN_LETTERS[column]}{row + 1}"

    @property
    def _size(self) -> int:
        """The board side, read from the observation shape [size, size, 3]."""
        return self.game.observation_shape[0]


NOTATION = OthelloNotation  # what `azjax.games.notation.of` finds for this game
