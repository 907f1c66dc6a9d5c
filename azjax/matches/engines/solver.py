"""Perfect Connect Four play: the bitbully solver (the `solver` extra) as a player.

    solver = Solver()                       # bitbully with its opening book
    board = solver.board(state.board)       # an azjax ConnectFourState's, as bitbully's
    solver.scores(board)                    # {column: score} of the legal columns
    solver.best(board)                      # a best column

A score is positive where the mover wins (the larger, the sooner), 0 for a draw and negative
where it loses (the more negative, the sooner). `SolverPlayer` is the opponent spec `solver`
(`engines.open_player`): a `HostPlayer` that runs no program, played like the outside
engines in host games (`arena.play_host_game`). `azjax.matches.mistakes` measures agents
against it.
"""

import numpy as np

from azjax import extras, games
from azjax.games import Game, State
from azjax.matches.engines.base import HostPlayer
from azjax.types import UserError

_ROWS, _COLUMNS = 6, 7


class Solver:
    """bitbully's solver of Connect Four with its shipped opening book, on bitbully's boards.

    Raises:
      ModuleNotFoundError: bitbully is not installed (the message names the solver extra).
    """

    def __init__(self):
        extras.require("bitbully")
        import bitbully  # noqa: PLC0415  (optional: the solver extra)

        self.version = getattr(bitbully, "__version__", "unknown")
        self._board = bitbully.Board
        self._solver = bitbully.BitBully()

    def board(self, cells=None):
        """A bitbully board: empty, or that of an azjax board (`cells` [42] int8, row 0 at
        the top; 1: the first player's stone, -1: the second's)."""
        if cells is None:
            return self._board()
        cells = np.asarray(cells).reshape(_ROWS, _COLUMNS)
        return self._board.from_array(np.where(cells == 1, 1, np.where(cells == -1, 2, 0)).tolist())

    def scores(self, board, max_depth: int | None = None) -> dict[int, int]:
        """The score of each legal column of a bitbully board that has not ended: solved, or
        searched `max_depth` plies deep (then bitbully's rollouts)."""
        return self._solver.score_all_moves(board, max_depth=max_depth)

    def best(self, board) -> int:
        """A best column: the highest score (a win before a draw before a loss, the fastest
        win, the slowest loss); among equals the one nearest the centre, then the left one."""
        scores = self.scores(board)
        return max(scores, key=lambda c: (scores[c], -abs(c - _COLUMNS // 2), -c))


class SolverPlayer(HostPlayer):
    """The opponent `solver`: perfect Connect Four play, in this process.

    Args:
      command, timeout: unused (the engine specs' arguments: the solver runs no program).
    """

    name = "solver"

    def __init__(self, command: str = "", *, timeout: float | None = None):
        del command, timeout
        self._solver = Solver()

    def start(self, game: Game, state: State) -> None:
        if games.family_of(game) != "connect_four":
            raise UserError(f"the solver plays connect_four only, not {game.name}")

    def observe(self, state: State, action: int) -> None:
        del state, action

    def choose(self, state: State) -> int:
        return self._solver.best(self._solver.board(state.board))

    def close(self) -> None:
        pass
