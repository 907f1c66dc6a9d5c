"""Go engines that speak GTP (GNU Go, KataGo, Leela Zero) as host players.

    player = GtpPlayer("gnugo --mode gtp --level 5")
    player.start(game, state)        # boardsize, clear_board, komi (and a set-up position)
    player.observe(state, action)    # play b E5
    action = player.choose(state)    # genmove w -> an action id, RESIGN, or the pass

One engine process serves game after game; after a failure (`EngineError`) it is stopped
and the next `start` runs a fresh one.
"""

import shlex
from collections.abc import Sequence

import numpy as np

from azjax import notation
from azjax.games import Game, State
from azjax.protocols.engine import (
    DEFAULT_TIMEOUT,
    RESIGN,
    EngineError,
    EngineProcess,
    HostPlayer,
)
from azjax.types import UserError

_COLORS = ("b", "w")  # GTP colour of player 0 (black) and player 1 (white)


class GtpPlayer(HostPlayer):
    """A GTP engine playing Go (`go_*` games).

    Args:
      command: the engine's command line (or argv list).
      timeout: seconds the engine may take for one answer (a `genmove` included).
    """

    def __init__(self, command: str | Sequence[str], *, timeout: float = DEFAULT_TIMEOUT):
        self.command = command if isinstance(command, str) else shlex.join(command)
        self.name = f"gtp:{self.command}"
        self.timeout = timeout
        self._process: EngineProcess | None = None
        self._game: Game | None = None
        self._engine_move: int | None = None  # played by the engine's genmove, not observed yet

    def _engine(self) -> EngineProcess:
        if self._process is None or not self._process.alive:
            self._stop()
            self._process = EngineProcess(self.command, name=self.name, timeout=self.timeout)
        return self._process

    def _stop(self) -> None:
        if self._process is not None:
            self._process.close()
            self._process = None

    def _ask(self, command: str) -> str:
        """Sends a command; returns its successful response text.

        Raises:
          EngineError: the engine failed (it is then stopped) or refused the command.
        """
        engine = self._engine()
        try:
            engine.send(command)
            lines = engine.read_until(bool, waiting_for=f"a response to {command!r}")
            status = lines[-1]
            if status[0] not in "=?":
                raise engine.error(f"broke GTP: {status[:80]!r} in response to {command!r}")
            lines = engine.read_until(lambda line: not line.strip(), waiting_for="a blank line")
        except EngineError:
            self._stop()
            raise
        text = " ".join([status[1:].lstrip("0123456789"), *lines[:-1]]).strip()
        if status[0] == "?":
            raise engine.error(f"refused {command!r}: {text}")
        return text

    def start(self, game: Game, state: State) -> None:
        """Sets up the board: boardsize, clear_board, komi (from `state.komi`), then the
        stones of a set-up position as `play` commands."""
        if not game.name.startswith("go_"):
            raise UserError(f"{self.name} plays go over GTP, not {game.name}")
        self._game, self._engine_move = game, None
        self._ask(f"boardsize {game.size}")
        self._ask("clear_board")
        self._ask(f"komi {float(state.komi):g}")
        board = np.asarray(state.board)  # [H*W]: 1 black, -1 white, 0 empty
        for point in np.flatnonzero(board):
            color = _COLORS[0 if board[point] > 0 else 1]
            self._ask(f"play {color} {notation.action_to_string(game, int(point))}")

    def observe(self, state: State, action: int) -> None:
        """Plays the move on the engine's board (unless its own genmove played it)."""
        engine_move, self._engine_move = self._engine_move, None
        if engine_move == action:
            return
        if engine_move is not None:  # the host played something else: take the engine's back
            self._ask("undo")
        color = _COLORS[int(state.current_player)]
        self._ask(f"play {color} {notation.action_to_string(self._game, action)}")

    def choose(self, state: State) -> int:
        """`genmove` for the side to move: an action id, `RESIGN`, or the pass action."""
        color = _COLORS[int(state.current_player)]
        move = self._ask(f"genmove {color}")
        if move.lower() == "resign":
            return RESIGN
        try:
            action = notation.parse_action(self._game, move, state)
        except UserError as error:
            self._stop()  # its board now differs from ours
            raise EngineError(f"engine {self.name} played an illegal move: {error}") from None
        self._engine_move = action
        return action

    def close(self) -> None:
        self._stop()
