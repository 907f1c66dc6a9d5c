"""Engines that speak GTP as host players: Go (GNU Go, KataGo, Leela Zero) and Othello
(GRhino's `gtp-rhino`, GTP as Quarry speaks it for Othello).

    player = GtpPlayer("gnugo --mode gtp --level 5")
    player.start(game, state)        # boardsize, clear_board, komi (and a set-up position)
    player.observe(state, action)    # play b E5
    action = player.choose(state)    # genmove w -> an action id, RESIGN, or the pass

One engine process serves game after game; after a failure (`EngineError`) it is stopped
and the next `start` runs a fresh one.

azjax referees by Tromp-Taylor rules: the game ends after two passes in a row and every stone
on the board counts, dead or not. Engines that pass once the game is decided by their own
rules (GNU Go, with dead stones left for a scoring phase that never comes) would hand the
opponent's dead stones to it as living ones. So where the engine lists
`kgs-genmove_cleanup` (GNU Go, KataGo, Leela Zero: KGS's command for the cleanup phase, which
does not pass while dead opponent stones remain on the board), the player asks for every move
with it instead of `genmove` (`cleanup=False` turns this off). In GNU Go the two differ only
where `genmove` would pass (`capture_all_dead`): the play before is the same.

In Othello the engine keeps the turn by the rules itself: a side without a legal move is
skipped on its board, so azjax's pass is not sent (`play w pass` is no GTP move there), and
`genmove` answers `pass` only for a side that has none.
"""

import shlex
from collections.abc import Sequence

import numpy as np

from azjax import games
from azjax.games import Game, State, notation
from azjax.matches.engines.base import (
    DEFAULT_TIMEOUT,
    RESIGN,
    EngineError,
    EngineProcess,
    HostPlayer,
)
from azjax.types import UserError

_COLORS = ("b", "w")  # GTP colour of player 0 (black) and player 1 (white)


class GtpPlayer(HostPlayer):
    """A GTP engine playing Go (`go_*` games) or Othello.

    Args:
      command: the engine's command line (or argv list).
      timeout: seconds the engine may take for one answer (a `genmove` included).
      cleanup: generate moves with `kgs-genmove_cleanup` where the engine lists it (so that
        it captures dead stones before passing, as Tromp-Taylor scoring needs); False:
        always `genmove`.
    """

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        cleanup: bool = True,
    ):
        self.command = command if isinstance(command, str) else shlex.join(command)
        self.name = f"gtp:{self.command}"
        self.timeout = timeout
        self.cleanup = cleanup
        self._process: EngineProcess | None = None
        self._game: Game | None = None
        self._engine_move: int | None = None  # played by the engine's genmove, not observed yet
        self._genmove: str | None = None  # the move command for this process (after `start`)

    def _engine(self) -> EngineProcess:
        if self._process is None or not self._process.alive:
            self._stop()
            self._process = EngineProcess(self.command, name=self.name, timeout=self.timeout)
        return self._process

    def _stop(self) -> None:
        self._genmove = None
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
        stones of a set-up position as `play` commands. A new engine process is first asked
        for its `list_commands` (see `genmove_command`)."""
        family = games.family_of(game)
        if family not in ("go", "othello"):
            raise UserError(f"{self.name} plays go or othello over GTP, not {game.name}")
        self._game, self._engine_move = game, None
        if self._genmove is None or self._process is None or not self._process.alive:
            self._genmove = genmove_command(self._list_commands(), cleanup=self.cleanup)
        self._ask(f"boardsize {round(np.sqrt(game.num_actions - 1))}")
        self._ask("clear_board")
        if family == "othello":  # the standard start, which `clear_board` sets up
            return
        self._ask(f"komi {float(state.komi):g}")
        board = np.asarray(state.board)  # [H*W]: 1 black, -1 white, 0 empty
        for point in np.flatnonzero(board):
            color = _COLORS[0 if board[point] > 0 else 1]
            self._ask(f"play {color} {notation.action_to_string(game, int(point))}")

    def _list_commands(self) -> list[str]:
        """The engine's `list_commands`; none where it refuses the command (it is alive)."""
        try:
            return self._ask("list_commands").split()
        except EngineError:
            if self._process is None:  # it failed, not refused
                raise
            return []

    def observe(self, state: State, action: int) -> None:
        """Plays the move on the engine's board (unless its own genmove played it)."""
        engine_move, self._engine_move = self._engine_move, None
        if engine_move == action:
            return
        if engine_move is not None:  # the host played something else: take the engine's back
            self._ask("undo")
        if action == self._game.num_actions - 1 and games.family_of(self._game) == "othello":
            return  # a forced pass: the engine's board skips the side itself
        color = _COLORS[int(state.current_player)]
        self._ask(f"play {color} {notation.action_to_string(self._game, action)}")

    def choose(self, state: State) -> int:
        """`kgs-genmove_cleanup` (see the module docstring) or `genmove` for the side to
        move: an action id, `RESIGN`, or the pass action."""
        color = _COLORS[int(state.current_player)]
        move = self._ask(f"{self._genmove or 'genmove'} {color}")
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


def genmove_command(commands: Sequence[str], *, cleanup: bool = True) -> str:
    """The GTP command that asks an engine listing `commands` for its moves in a game that
    azjax scores by Tromp-Taylor rules: `kgs-genmove_cleanup` where it is listed and
    `cleanup` holds, else `genmove`."""
    return "kgs-genmove_cleanup" if cleanup and "kgs-genmove_cleanup" in commands else "genmove"
