"""Connect Four as text: columns numbered 1-7, the board drawn under its column numbers."""

from azjax.games.notation.base import Notation


class ConnectFourNotation(Notation):
    """Columns are typed 1-7 (action id + 1); `render` numbers them above the board."""

    def render(self, state) -> str:
        """Draws the board with the column numbers 1-7 that `parse_action` accepts."""
        labels = " ".join(self.action_to_string(a) for a in range(self.game.num_actions))
        return f"{labels}\n{super().render(state)}"

    def action_to_string(self, action: int, state=None) -> str:
        """Columns are numbered 1-7 for humans (action id + 1)."""
        return str(int(action) + 1)


NOTATION = ConnectFourNotation  # what `azjax.games.notation.of` finds for this game
