"""Tic-tac-toe: three in a row on a 3 x 3 board."""

import jax.numpy as jnp
from flax import struct

from azjax.games import base
from azjax.types import Array, PRNGKey

_SIZE = 3
_LINES = base.lines(_SIZE, _SIZE, _SIZE)  # [8, 3] int32


@struct.dataclass
class TicTacToeState(base.State):
    """A Tic-tac-toe position."""

    # [9] int8, row-major from the top-left (cell = row * 3 + column):
    # 1 = player 0's mark (X), -1 = player 1's mark (O), 0 = empty.
    board: Array


class TicTacToe(base.Game):
    """Tic-tac-toe; X (player 0) moves first, three in a row wins.

    - Observation: [3, 3, 2] float32 from the mover's view; plane 0 = marks of the player
      to move, plane 1 = the opponent's marks.
    - Action: [] int32 in [0, 9), the cell row-major from the top-left; legal while empty.
      Humans type cells 1-9 (`azjax.games.notation`).
    - Reward: [2] float32, +1 for the winner and -1 for the loser on the winning move; a
      full board without three in a row is a draw, (0, 0).
    - Symmetries: 8 (the dihedral group of the square). Games last at most 9 plies.
    """

    name = "tic_tac_toe"
    num_actions = _SIZE * _SIZE
    observation_shape = (_SIZE, _SIZE, 2)
    symmetries = 8
    max_episode_length = _SIZE * _SIZE

    def __init__(self):
        self._board_perms = base.dihedral_perms(_SIZE, _SIZE)  # [8, 9] int32
        self._action_perms = self._board_perms  # Actions are cells.

    def init(self, key: PRNGKey) -> TicTacToeState:
        del key  # The start position is fixed.
        return TicTacToeState(
            current_player=jnp.int32(0),
            legal_action_mask=jnp.ones(_SIZE * _SIZE, jnp.bool_),
            terminated=jnp.bool_(False),
            rewards=jnp.zeros(2, jnp.float32),
            step_count=jnp.int32(0),
            board=jnp.zeros(_SIZE * _SIZE, jnp.int8),
        )

    def _step(self, state: TicTacToeState, action: Array) -> TicTacToeState:
        player = state.current_player
        mark = (1 - 2 * player).astype(jnp.int8)
        board = state.board.at[action].set(mark)
        won = jnp.any(jnp.all(board[_LINES] == mark, axis=-1))
        legal_action_mask = board == 0
        return base.finish_placement(state, board, won, legal_action_mask)

    def observe(self, state: TicTacToeState) -> Array:
        return base.stone_planes(state.board, state.current_player, (_SIZE, _SIZE))
