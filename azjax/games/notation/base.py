"""The text side of a game: boards drawn as text, action names, moves typed by humans.

A `Notation` wraps a game (`azjax.games.base.Game`) and reads its states on the host; the
game kernels hold the rules only and never import this package. The default draws the
first two observation planes as stones and names actions by their ids; games with their
own notation subclass it (`azjax.games.notation.of` picks the class).
"""

import numpy as np

from azjax.games.base import Game, State
from azjax.types import UserError


class Notation:
    """Text for the states and actions of one game (host-side, not jittable).

    Args:
      game: the game whose (unbatched) states and action ids this notation reads.
    """

    def __init__(self, game: Game):
        self.game = game

    def render(self, state: State) -> str:
        """Draws an unbatched `state` as text for humans.

        The default draws the first two observation planes (the mover's and the opponent's
        stones) as 'X' for player 0, 'O' for player 1 and '.' for empty, one board row per
        line, followed by a status line: "X to move", or once terminated "X wins" / "O wins"
        read from the rewards of the step that ended the game, else "game over" (a draw, or
        a terminated state stepped again). Games override it to add coordinate labels.
        """
        planes = np.asarray(self.game.observe(state))  # [H, W, C]
        mover = int(state.current_player)
        marks = ("X", "O") if mover == 0 else ("O", "X")
        grid = np.where(planes[..., 0] > 0, marks[0], np.where(planes[..., 1] > 0, marks[1], "."))
        return "\n".join([*(" ".join(row) for row in grid), self._status(state)])

    def _status(self, state: State) -> str:
        """The status line of `render`: "X to move", "X wins" / "O wins" (from the rewards of
        the step that ended the game), else "game over"."""
        rewards = np.asarray(state.rewards)  # [2]
        if not bool(state.terminated):
            return f"{'XO'[int(state.current_player)]} to move"
        if rewards[0] != rewards[1]:
            return f"{'XO'[int(np.argmax(rewards))]} wins"
        return "game over"

    def action_to_string(self, action: int, state: State | None = None) -> str:
        """Names an action id the way `render` labels it and `parse_action` reads it back.

        `state` is the (unbatched) position the action is played in; games whose action ids
        are relative to the mover (Xiangqi) need it, the others ignore it.
        """
        return str(int(action))

    def parse_action(self, text: str, state: State) -> int:
        """Reads a move typed by a human in an unbatched `state`.

        Accepts exactly the names `action_to_string` gives (ASCII case-insensitive,
        surrounding blanks ignored). Games explain their notation and their illegal moves through
        `_notation_hint` and `_why_illegal`.

        Returns:
          The action id in [0, A), legal in `state`.

        Raises:
          UserError: `text` names no action, or the action is not legal in `state`.
        """
        if bool(state.terminated):
            raise UserError("the game is over; no more moves can be played")
        typed = text.strip()
        names = {self.action_to_string(a, state).lower(): a for a in range(self.game.num_actions)}
        # ASCII only: str.lower maps other characters onto letters ("\u212a", Kelvin, to "k").
        action = names.get(typed.lower()) if typed.isascii() else None
        if action is None:
            raise UserError(f"{text.strip()!r} is not a move; {self._notation_hint(state)}")
        if not bool(state.legal_action_mask[action]):
            raise UserError(
                f"move {text.strip()} is not legal now: {self._why_illegal(state, action)}"
            )
        return action

    def _legal_names(self, state: State) -> str:
        legal = np.flatnonzero(np.asarray(state.legal_action_mask))
        return " ".join(self.action_to_string(a, state) for a in legal)

    def _notation_hint(self, state: State) -> str:
        """How moves are typed, for the error on a name that is no move (one line)."""
        return f"legal moves: {self._legal_names(state)}"

    def _why_illegal(self, state: State, action: int) -> str:
        """Why a named `action` is not legal in `state`, for the error message (one line)."""
        return f"legal moves: {self._legal_names(state)}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.game!r})"
