"""Hex's web board: records that say which sides each colour joins and whether the swap
rule is on (the swap is a button: it has no cell to click)."""

from azjax.apps.serve.session import Board, Session


class HexBoard(Board):
    """A `Board` whose records name the board, each colour's sides and the swap rule, so
    that a record of moves ("c3 swap d4 ...") reads alone."""

    def record_header(self, session: Session) -> list[str]:
        """The rules: "rules: 7x7, Black joins top and bottom, White left and right, swap"."""
        del session
        size, swap = self.game.size, ", swap" if self.game.swap else ", no swap"
        return [f"rules: {size}x{size}, Black joins top and bottom, White left and right{swap}"]


BOARD = HexBoard  # what `azjax.apps.serve.boards.of` finds for this game
