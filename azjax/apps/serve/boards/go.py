"""Go's web board: a komi for each game, the score in the result, SGF records."""

import math

import jax.numpy as jnp

from azjax.apps.serve.session import Board, Session
from azjax.games.records import sgf
from azjax.types import UserError


class GoBoard(Board):
    """A `Board` whose games may start with their own komi and end with a score."""

    def info(self) -> dict:
        return {"komi": self.game.komi, "options": ["komi"]}

    def start(self, key, *, komi: float | None = None, fen: str | None = None):
        """The start position, with `komi` (from -size² to size²) if given.

        Raises:
          UserError: a komi out of range, or a `fen`.
        """
        state = super().start(key, fen=fen)
        if komi is not None:
            limit = self.game.size * self.game.size
            if not (isinstance(komi, int | float) and math.isfinite(komi) and abs(komi) <= limit):
                raise UserError(f"komi must be a number from -{limit} to {limit}")
            state = state.replace(komi=jnp.float32(komi))
        return state

    def score(self, session: Session) -> str:
        """The score, " (B+3.5)"."""
        return f" ({sgf.result_string(float(self.game.score(session.state)))})"

    def record(self, session: Session, player_names: tuple[str, str]) -> tuple[str, str]:
        """The game's SGF record (file name, text), with its komi and result."""
        if session.resigned is not None:
            result = f"{'WB'[session.resigned]}+R"
        elif session.over:
            result = sgf.result_string(float(self.game.score(session.state)))
        else:
            result = None
        text = sgf.game_record(
            self.game,
            session.actions,
            result=result,
            black=player_names[0],
            white=player_names[1],
            komi=float(session.states[0].komi),
        )
        return f"{session.id}.sgf", text


BOARD = GoBoard  # what `azjax.apps.serve.boards.of` finds for this game
