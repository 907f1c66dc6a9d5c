"""Go as text: GTP vertices ("A9", "pass") and the board drawn as GTP engines draw it."""

import numpy as np

from azjax.games.notation.base import Notation

COLUMN_LETTERS = "ABCDEFGHJKLMNOPQRST"  # GTP skips the letter I
_MARKS = {1: "X", -1: "O", 0: "."}  # how `render` draws a board value


class GoNotation(Notation):
    """Points are GTP vertices: a column letter A-T without I and a row number counted from
    the bottom ("A9" is point 0 on 9x9), or "pass"."""

    def render(self, state) -> str:
        """Draws the board as GTP engines do: column letters above and below, row numbers
        (counted from the bottom) on both sides, X for black, O for white; then the
        captures and a status line ("X to move", "X wins", "O wins" or "game over")."""
        size = self.game.size
        board = np.asarray(state.board).reshape(size, size)
        width = len(str(size))
        letters = " " * (width + 1) + " ".join(COLUMN_LETTERS[:size])
        rows = []
        for row in range(size):
            cells = " ".join(_MARKS[value] for value in board[row])
            rows.append(f"{size - row:>{width}} {cells} {size - row}")
        captures = np.asarray(state.captures)
        captured = f"captures: X {captures[0]}, O {captures[1]}; komi {float(state.komi):g}"
        return "\n".join([letters, *rows, letters, captured, self._status(state)])

    def action_to_string(self, action: int, state=None) -> str:
        """Names a point as a GTP vertex, column letter (A-T without I) and row counted
        from the bottom ("A9" is point 0 on 9x9), or "pass"."""
        size = self.game.size
        row, column = divmod(int(action), size)
        return "pass" if row == size else f"{COLUMN_LETTERS[column]}{size - row}"

    def _notation_hint(self, state) -> str:
        size = self.game.size
        last = COLUMN_LETTERS[size - 1]
        return (
            f"type a column A-{last} (no I) and a row 1-{size}, like "
            f"{self.action_to_string(0)}, or pass"
        )

    def _why_illegal(self, state, action: int) -> str:
        """Why a point is not a legal move (for `parse_action`)."""
        board, in_atari = np.asarray(state.board), np.asarray(state.in_atari)
        if board[action] != 0:
            return "the point is taken"
        if action == int(state.ko_point):
            return "it retakes a ko at once"
        colour = 1 - 2 * int(state.current_player)
        size = self.game.size
        row, column = divmod(action, size)
        neighbours = [
            r * size + c
            for r, c in ((row - 1, column), (row + 1, column), (row, column - 1), (row, column + 1))
            if 0 <= r < size and 0 <= c < size
        ]
        keeps_a_liberty = any(
            board[n] == 0
            or (board[n] == colour and not in_atari[n])
            or (board[n] == -colour and in_atari[n])
            for n in neighbours
        )
        if not keeps_a_liberty:
            return "it is suicide"
        return "it repeats an earlier position (superko)"


NOTATION = GoNotation  # what `azjax.games.notation.of` finds for this game
