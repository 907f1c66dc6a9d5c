"""Hex: place stones on an n x n rhombus of hexagons; join your two sides to win.

The board, its cells and the players follow OpenSpiel's `hex` (so its games replay here
action for action): a cell is row * n + column, row 0 the top row, and each row sits half
a cell to the right of the row above it, so cell (r, c) touches (r, c - 1), (r, c + 1),
(r - 1, c), (r - 1, c + 1), (r + 1, c - 1) and (r + 1, c). Player 0 (Black, "x") moves
first and joins the top row to the bottom row; player 1 (White, "o") joins the left
column to the right column. A full board always holds exactly one of the two chains, so
Hex has no draws.
"""

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from azjax.games import base
from azjax.types import Array, PRNGKey

MAX_SIZE = 26  # columns are named by one letter, a-z

# The six neighbours of a cell as (row step, column step).
_STEPS = ((-1, 0), (-1, 1), (0, 1), (1, 0), (1, -1), (0, -1))


def neighbours(size: int) -> np.ndarray:
    """[P, 6] int32: the neighbours of each cell; the sentinel P (one past the last cell)
    where a step leaves the board."""
    rows, columns = np.divmod(np.arange(size * size), size)  # [P] each
    steps = np.asarray(_STEPS)  # [6, 2]
    target_rows = rows[:, None] + steps[:, 0]  # [P, 6]
    target_columns = columns[:, None] + steps[:, 1]
    inside = (
        (target_rows >= 0) & (target_rows < size) & (target_columns >= 0) & (target_columns < size)
    )
    return np.where(inside, target_rows * size + target_columns, size * size).astype(np.int32)


def sides(size: int) -> np.ndarray:
    """[2, 2, P] bool: each player's two sides, the cells on them (player 0: the top and
    the bottom row; player 1: the left and the right column)."""
    rows, columns = np.divmod(np.arange(size * size), size)
    last = size - 1
    return np.stack([[rows == 0, rows == last], [columns == 0, columns == last]])


def transposed(size: int) -> np.ndarray:
    """[P] int32: the cell (c, r) of each cell (r, c), where the swap rule moves the first
    stone (the board's mirror in its long diagonal, which keeps the neighbours)."""
    return np.arange(size * size).reshape(size, size).T.reshape(-1).astype(np.int32)


@struct.dataclass
class HexState(base.State):
    """A Hex position."""

    # [P] int8, row-major from the top-left (cell = row * n + column, row 0 = top):
    # 1 = player 0's stone (Black), -1 = player 1's stone (White), 0 = empty.
    board: Array
    # [P] int16: each stone's chain, named by one of its cells (chains never break up:
    # Hex has no captures); -1 on empty cells.
    chains: Array


class Hex(base.Game):
    """Hex on `size` x `size` cells; Black (player 0) joins top and bottom, White left and
    right.

    - Observation: [n, n, 3] float32 from the mover's view (4 planes with the swap rule):
      plane 0 = the mover's stones, plane 1 = the opponent's stones, plane 2 = all ones
      when the mover is Black (who joins top and bottom), else all zeros; with `swap`,
      plane 3 = all ones while the swap is legal. Row 0 is the top row.
    - Action: [] int32: a cell in [0, n*n), row-major from the top-left, legal while empty;
      with `swap`, action n*n is the swap. Humans type a column letter and a row number
      counted from the top ("a1" is the top-left corner, "c2" the third cell of the second
      row), as OpenSpiel and HexGui write them, and "swap" (`azjax.games.notation.hex`).
    - Swap rule (`swap=True`, OpenSpiel's `swap` option): White's first move may be the
      swap instead of a cell: Black's first stone leaves the board and a White stone takes
      the mirror cell (c, r) of its cell (r, c), so White now holds the stone that Black
      chose, turned to join White's sides; then Black moves. The players keep their colours
      and their sides. Black thus has a reason to open with a fair move.
    - Reward: [2] float32, +1 for the player whose stone joins their sides and -1 for the
      other, on that move; there are no draws.
    - Symmetries: 2 (identity and the half turn, which keeps every player's sides; the
      mirror in a diagonal swaps the sides, so it is no symmetry of a position with a
      player to move). Games last at most n*n plies (n*n + 1 with the swap).

    Each stone's chain is kept in the state (`chains`), so a move merges the chains of its
    neighbours into one with a fixed number of array operations and wins when that chain
    touches both of the mover's sides: a step costs the same however full the board is.
    """

    name = "hex"

    def __init__(self, size: int = 11, swap: bool = False):
        """Checks the options and builds the constant tables.

        Args:
          size: cells on a side, 2 to 26 (columns are named by one letter).
          swap: the swap rule (White's first move may take Black's first stone).

        Raises:
          ValueError: an option is out of range.
        """
        if not isinstance(size, int) or isinstance(size, bool):
            raise ValueError(f"size must be an integer, got {size!r}")
        if not 2 <= size <= MAX_SIZE:
            raise ValueError(f"size must be between 2 and {MAX_SIZE} (columns a-z), got {size}")
        if not isinstance(swap, bool):
            raise ValueError(f"swap must be true or false, got {swap!r}")
        self.size, self.swap = size, swap
        self.num_points = size * size
        self.swap_action = self.num_points if swap else None
        self.num_actions = self.num_points + swap
        self.observation_shape = (size, size, 3 + swap)
        self.max_episode_length = self.num_actions
        half_turn = np.arange(self.num_points)[::-1].astype(np.int32)  # [P] cell P-1-i
        self._board_perms = np.stack([np.arange(self.num_points), half_turn]).astype(np.int32)
        extra = np.full((2, int(swap)), self.num_points, np.int32)  # the swap maps to itself
        self._action_perms = np.concatenate([self._board_perms, extra], axis=1)  # [2, A]
        self.symmetries = 2
        self._neighbours = neighbours(size)  # [P, 6] int32
        self._sides = sides(size)  # [2, 2, P] bool
        self._transposed = transposed(size)  # [P] int32

    def init(self, key: PRNGKey) -> HexState:
        del key  # The start position is fixed: an empty board.
        return HexState(
            current_player=jnp.int32(0),
            legal_action_mask=jnp.ones(self.num_actions, jnp.bool_)
            .at[self.num_points :]
            .set(False),
            terminated=jnp.bool_(False),
            rewards=jnp.zeros(2, jnp.float32),
            step_count=jnp.int32(0),
            board=jnp.zeros(self.num_points, jnp.int8),
            chains=jnp.full(self.num_points, -1, jnp.int16),
        )

    def _step(self, state: HexState, action: Array) -> HexState:
        placed = self._place(state, jnp.minimum(action, self.num_points - 1))
        if not self.swap:
            return placed
        return jax.tree.map(
            lambda swapped, other: jnp.where(action == self.num_points, swapped, other),
            self._swapped(state),
            placed,
        )

    def _place(self, state: HexState, cell: Array) -> HexState:
        """The mover's stone on `cell`: its neighbours' chains of the mover's colour and the
        stone become one chain, named by `cell`; it wins when that chain touches both of the
        mover's sides."""
        player = state.current_player
        stone = (1 - 2 * player).astype(jnp.int8)
        board = state.board.at[cell].set(stone)
        around = jnp.asarray(self._neighbours)[cell]  # [6], off the board: the sentinel P
        own = jnp.take(board, around, mode="fill", fill_value=0) == stone  # [6] bool
        joined = jnp.where(own, jnp.take(state.chains, around, mode="clip"), -2)  # [6] int16
        merged = jnp.any(state.chains[:, None] == joined[None, :], axis=1)  # [P] bool
        chain = merged.at[cell].set(True)
        chains = jnp.where(chain, cell.astype(jnp.int16), state.chains)
        reached = jnp.any(chain[None, :] & jnp.asarray(self._sides)[player], axis=1)  # [2]
        legal_action_mask = state.legal_action_mask.at[cell].set(False)
        if self.swap:  # legal on the second ply alone
            legal_action_mask = legal_action_mask.at[self.num_points].set(state.step_count == 0)
        next_state = base.finish_placement(state, board, jnp.all(reached), legal_action_mask)
        return next_state.replace(chains=chains)

    def _swapped(self, state: HexState) -> HexState:
        """The swap: Black's one stone leaves, a White stone takes its mirror cell; Black
        to move."""
        cell = jnp.asarray(self._transposed)[jnp.argmax(state.board != 0)]
        mask = jnp.ones(self.num_actions, jnp.bool_).at[cell].set(False)
        return state.replace(
            current_player=jnp.int32(0),
            legal_action_mask=mask.at[self.num_points].set(False),
            board=jnp.zeros_like(state.board).at[cell].set(-1),
            chains=jnp.full_like(state.chains, -1).at[cell].set(cell.astype(jnp.int16)),
        )

    def observe(self, state: HexState) -> Array:
        shape = (self.size, self.size)
        planes = [
            base.stone_planes(state.board, state.current_player, shape),  # [n, n, 2]
            jnp.full((*shape, 1), state.current_player == 0, jnp.float32),
        ]
        if self.swap:
            planes.append(jnp.full((*shape, 1), state.legal_action_mask[-1], jnp.float32))
        return jnp.concatenate(planes, axis=-1)

    def __repr__(self) -> str:
        return f"Hex(size={self.size}, swap={self.swap})"
