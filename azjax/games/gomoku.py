"""Gomoku (the m,n,k-game): place stones on a width x height board; k in a row wins."""

import string

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from azjax.games import base
from azjax.types import Array, PRNGKey

RULES = ("freestyle", "standard")
_COLUMN_NAMES = string.ascii_lowercase

# The four line directions as (row step, column step): horizontal, vertical, both diagonals.
_DIRECTIONS = np.array([(0, 1), (1, 0), (1, 1), (1, -1)])  # [4, 2]


def _neighbours(height: int, width: int, reach: int) -> np.ndarray:
    """The points 1..`reach` steps away from each point along each direction, both ways.

    Returns:
      [H*W, 4, 2, reach] int32 point indices: [point, direction, forward/backward, distance-1].
      Steps that leave the board hold the sentinel H*W, one past the last point.
    """
    rows, columns = np.divmod(np.arange(height * width), width)  # [H*W] each
    distances = np.arange(1, reach + 1)
    signed = np.stack([distances, -distances])  # [2, reach]
    steps = _DIRECTIONS[:, None, None, :] * signed[None, :, :, None]  # [4, 2, reach, 2]
    target_rows = rows[:, None, None, None] + steps[..., 0]  # [H*W, 4, 2, reach]
    target_columns = columns[:, None, None, None] + steps[..., 1]
    on_board = (
        (target_rows >= 0)
        & (target_rows < height)
        & (target_columns >= 0)
        & (target_columns < width)
    )
    return np.where(on_board, target_rows * width + target_columns, height * width).astype(np.int32)


@struct.dataclass
class GomokuState(base.State):
    """A Gomoku position."""

    # [H*W] int8, row-major from the top-left (point = row * W + column, row 0 = top):
    # 1 = player 0's stone (X, black), -1 = player 1's stone (O, white), 0 = empty.
    board: Array
    last_move: Array  # [] int32, the point of the last stone placed; -1 before the first


class Gomoku(base.Game):
    """Gomoku on `width` columns x `height` rows; the first to line up `k` stones wins.

    Lines count horizontally, vertically and along both diagonals. Under the "freestyle"
    rule a line of k or more stones wins; under the "standard" rule only a line of exactly
    k does: a move whose lines through the new stone are all overlines (k + 1 or more)
    does not win, but one that makes exactly k in some direction does, whatever the other
    directions hold. A full board without a win is a draw; a win on the last empty point
    is a win.

    - Observation: [H, W, 4] float32 from the mover's view, as in AlphaZero_Gomoku: plane 0
      = stones of the player to move, plane 1 = the opponent's stones, plane 2 = the last
      stone placed (one-hot; all zero at the start), plane 3 = all ones when the player to
      move is player 0 (who moved first), else all zeros. Row 0 is the top row.
    - Action: [] int32 in [0, W*H), the point row-major from the top-left; legal while
      empty. Humans type a column letter and a row number counted from the bottom ("h8"
      is the centre of 15 x 15; `azjax.games.notation.gomoku`).
    - Reward: [2] float32, +1 for the winner and -1 for the loser on the winning move; a
      full board without a win is a draw, (0, 0).
    - Symmetries: 8 on a square board (the dihedral group), 4 on a rectangular one
      (identity, mirrors, half turn). Games last at most W*H plies.

    The win check gathers, for each of the four directions, the k - 1 points (k under the
    standard rule) on either side of the new stone from constant neighbour tables, so a
    step costs the same however many stones are on the board.
    """

    name = "gomoku"

    def __init__(self, width: int = 15, height: int = 15, k: int = 5, rule: str = "freestyle"):
        """Checks the options and builds the constant tables.

        Args:
          width: number of columns, 2 to 26 (columns are named by one letter).
          height: number of rows, at least 2.
          k: stones in a row that win, at least 2 and at most max(width, height).
          rule: "freestyle" (k or more in a row wins) or "standard" (exactly k wins).

        Raises:
          ValueError: an option is out of range.
        """
        for option, value in (("width", width), ("height", height), ("k", k)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{option} must be an integer, got {value!r}")
        if not 2 <= width <= len(_COLUMN_NAMES):
            raise ValueError(f"width must be between 2 and 26 (columns a-z), got {width}")
        if height < 2:
            raise ValueError(f"height must be at least 2, got {height}")
        if k < 2:
            raise ValueError(f"k must be at least 2, got {k}")
        if k > max(width, height):
            raise ValueError(f"k={k} is larger than the {width} x {height} board")
        if rule not in RULES:
            raise ValueError(
                f"unknown rule {rule!r}; choose 'freestyle' (k or more in a row wins) "
                "or 'standard' (exactly k in a row wins)"
            )
        self.width, self.height, self.k, self.rule = width, height, k, rule
        self.num_actions = width * height
        self.observation_shape = (height, width, 4)
        self.max_episode_length = width * height
        self._board_perms = base.dihedral_perms(height, width)  # [S, H*W] int32
        self._action_perms = self._board_perms  # Actions are points.
        self.symmetries = len(self._board_perms)
        # Freestyle asks whether a run reaches k: seeing k - 1 points on either side of the
        # new stone is enough. The standard rule asks whether it is exactly k, so it looks
        # k points each way: a side whose k seen points all hold the mover's stones makes
        # the run at least k + 1 long, both as counted and in truth, and any shorter side
        # is counted exactly.
        reach = k if rule == "standard" else k - 1
        self._neighbours = _neighbours(height, width, reach)  # [H*W, 4, 2, reach] int32

    def init(self, key: PRNGKey) -> GomokuState:
        del key  # The start position is fixed: an empty board.
        return GomokuState(
            current_player=jnp.int32(0),
            legal_action_mask=jnp.ones(self.num_actions, jnp.bool_),
            terminated=jnp.bool_(False),
            rewards=jnp.zeros(2, jnp.float32),
            step_count=jnp.int32(0),
            board=jnp.zeros(self.num_actions, jnp.int8),
            last_move=jnp.int32(-1),
        )

    def _step(self, state: GomokuState, action: Array) -> GomokuState:
        stone = (1 - 2 * state.current_player).astype(jnp.int8)
        board = state.board.at[action].set(stone)
        # Off-board neighbours (the sentinel H*W) read as empty points.
        neighbours = jnp.take(
            board, jnp.asarray(self._neighbours)[action], mode="fill", fill_value=0
        )  # [4, 2, reach] int8
        # Mover's stones adjacent to the new stone on each side: the leading run of matches.
        sides = jnp.cumprod((neighbours == stone).astype(jnp.int32), axis=-1).sum(-1)  # [4, 2]
        runs = 1 + sides.sum(axis=-1)  # [4] int32, run length through the new stone
        won = jnp.any(runs == self.k) if self.rule == "standard" else jnp.any(runs >= self.k)
        legal_action_mask = state.legal_action_mask.at[action].set(False)
        next_state = base.finish_placement(state, board, won, legal_action_mask)
        return next_state.replace(last_move=action)

    def observe(self, state: GomokuState) -> Array:
        shape = (self.height, self.width)
        stones = base.stone_planes(state.board, state.current_player, shape)  # [H, W, 2]
        last_move = jax.nn.one_hot(state.last_move, self.num_actions, dtype=jnp.float32)
        first_player = jnp.full(shape, state.current_player == 0, jnp.float32)
        return jnp.concatenate(
            [stones, last_move.reshape(*shape, 1), first_player[..., None]], axis=-1
        )

    def __repr__(self) -> str:
        return f"Gomoku(width={self.width}, height={self.height}, k={self.k}, rule={self.rule!r})"
