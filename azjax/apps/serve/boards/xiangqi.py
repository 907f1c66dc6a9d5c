"""Xiangqi's web board: a start position as FEN, pieces as letters, the FEN in records."""

import jax

from azjax.apps.serve.session import Board, Session


class XiangqiBoard(Board):
    """A `Board` whose games may start from a FEN and whose pieces may be drawn as letters
    (for fonts without Chinese characters)."""

    def info(self) -> dict:
        start = self.game.init(jax.random.PRNGKey(0))
        return {"fen": self.notation.to_fen(start), "options": ["fen", "piece_letters"]}

    def start(self, key, *, komi: float | None = None, fen: str | None = None):
        """The position `fen` (the game's start if None).

        Raises:
          UserError: a `fen` that is no legal position, or a komi.
        """
        if fen is not None:
            return self.notation.from_fen(fen)
        return super().start(key, komi=komi)

    def record_header(self, session: Session) -> list[str]:
        """The start position's FEN."""
        return [f"fen: {self.notation.to_fen(session.states[0])}"]


BOARD = XiangqiBoard  # what `azjax.apps.serve.boards.of` finds for this game
