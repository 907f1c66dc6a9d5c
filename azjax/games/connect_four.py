"""Connect Four: drop stones into a 6 x 7 grid; four in a row wins."""

import jax.numpy as jnp
import numpy as np
from flax import struct

from azjax.games import base
from azjax.types import Array, PRNGKey

_ROWS, _COLUMNS, _K = 6, 7, 4


def _lines_through(height: int, width: int, k: int) -> np.ndarray:
    """The k-in-a-row windows through each point, [H*W, M, k] point indices.

    M is the most windows through any one point; points with fewer repeat their first
    window, which changes no "any window complete" test.
    """
    windows = base.lines(height, width, k)  # [L, k]
    through = [windows[(windows == point).any(axis=1)] for point in range(height * width)]
    most = max(len(point_windows) for point_windows in through)
    return np.stack(
        [np.concatenate([w, np.repeat(w[:1], most - len(w), axis=0)]) for w in through]
    ).astype(np.int32)


_LINES_THROUGH = _lines_through(_ROWS, _COLUMNS, _K)  # [42, 13, 4] int32


@struct.dataclass
class ConnectFourState(base.State):
    """A Connect Four position."""

    # [42] int8, row-major from the top-left (point = row * 7 + column, row 0 = top):
    # 1 = player 0's stone (X), -1 = player 1's stone (O), 0 = empty.
    board: Array


class ConnectFour(base.Game):
    """Connect Four on 6 rows x 7 columns; the first to line up four stones wins.

    - Observation: [6, 7, 2] float32 from the mover's view; plane 0 = stones of the player
      to move, plane 1 = the opponent's stones; row 0 is the top row.
    - Action: [] int32 in [0, 7), the column (left to right) to drop a stone into; legal
      while the column has room. Humans type columns 1-7 (`azjax.games.notation`).
    - Reward: [2] float32, +1 for the winner and -1 for the loser on the winning move; a
      full board without four in a row is a draw, (0, 0).
    - Symmetries: 2 (identity, left-right mirror). Games last at most 42 plies.
    """

    name = "connect_four"
    num_actions = _COLUMNS
    observation_shape = (_ROWS, _COLUMNS, 2)
    symmetries = 2
    max_episode_length = _ROWS * _COLUMNS

    def __init__(self):
        self._board_perms = base.dihedral_perms(_ROWS, _COLUMNS)[:2]  # [2, 42] int32
        self._action_perms = np.stack([np.arange(_COLUMNS), np.arange(_COLUMNS)[::-1]]).astype(
            np.int32
        )  # [2, 7] int32

    def init(self, key: PRNGKey) -> ConnectFourState:
        del key  # The start position is fixed.
        return ConnectFourState(
            current_player=jnp.int32(0),
            legal_action_mask=jnp.ones(_COLUMNS, jnp.bool_),
            terminated=jnp.bool_(False),
            rewards=jnp.zeros(2, jnp.float32),
            step_count=jnp.int32(0),
            board=jnp.zeros(_ROWS * _COLUMNS, jnp.int8),
        )

    def _step(self, state: ConnectFourState, action: Array) -> ConnectFourState:
        player = state.current_player
        stone = (1 - 2 * player).astype(jnp.int8)
        column = state.board.reshape(_ROWS, _COLUMNS)[:, action]  # [6]
        row = jnp.sum(column == 0) - 1  # The lowest empty cell; empty cells sit on top.
        point = row * _COLUMNS + action
        board = state.board.at[point].set(stone)
        windows = board[jnp.asarray(_LINES_THROUGH)[point]]  # [M, 4]
        won = jnp.any(jnp.all(windows == stone, axis=-1))
        legal_action_mask = board[:_COLUMNS] == 0  # Room left at the top of the column.
        return base.finish_placement(state, board, won, legal_action_mask)

    def observe(self, state: ConnectFourState) -> Array:
        return base.stone_planes(state.board, state.current_player, (_ROWS, _COLUMNS))
