"""Othello (Reversi): flank the opponent's discs to turn them over; more discs wins.

The game ends as soon as neither side can move, and a pass is legal exactly when the mover
has no move and the opponent has one: the rules of tournament play and of OpenSpiel's
`othello`. (pgx's `othello` differs: where neither side can move, both pass before it ends.)

Move generation works on bitboards: a set of points is a 64-bit word, bit `row * size +
column`, held as two uint32 halves (JAX has no uint64 without x64 mode). Moving a set one
point in a direction is a shift of the word by `row step * size + column step` and a mask
that drops the points that wrapped around the side of the board, so all eight directions
are one [8] uint32 array per half, and a flood fill through the opponent's discs is a few
shifts, ANDs and ORs of it (chessprogramming's "dumb7fill"). The legal moves at every point
and the flips of the move played come from the same fill: `step` has no gather or scatter.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from azjax.games import base
from azjax.types import Array, PRNGKey

# The eight directions as (row step, column step).
_DIRECTIONS = ((0, 1), (1, -1), (1, 0), (1, 1), (0, -1), (-1, 1), (-1, 0), (-1, -1))


class _Bitboard(NamedTuple):
    """A set of points as a 64-bit word (bit `row * size + column`) in two uint32 halves."""

    low: Array  # [...] uint32, points 0-31
    high: Array  # [...] uint32, points 32-63

    def __and__(self, other: "_Bitboard") -> "_Bitboard":
        return _Bitboard(self.low & other.low, self.high & other.high)

    def __or__(self, other: "_Bitboard") -> "_Bitboard":
        return _Bitboard(self.low | other.low, self.high | other.high)

    def __invert__(self) -> "_Bitboard":
        return _Bitboard(~self.low, ~self.high)

    def nonempty(self) -> Array:
        """[...] bool, whether each set holds a point."""
        return (self.low | self.high) != 0

    def union(self) -> "_Bitboard":
        """The union over the leading (direction) axis."""
        return _Bitboard(jax.lax.reduce_or(self.low, (0,)), jax.lax.reduce_or(self.high, (0,)))


def _direction_tables(size: int) -> tuple[np.ndarray, ...]:
    """Per direction: the left shift, the right shift, and the low and high halves of the
    points a disc may land on (on the board, and not wrapped round from the other side), as
    four [8] uint32 tables."""
    left, right, low, high = [], [], [], []
    for row_step, column_step in _DIRECTIONS:
        shift = row_step * size + column_step
        left.append(max(shift, 0))
        right.append(max(-shift, 0))
        wrapped_column = {1: 0, -1: size - 1}.get(column_step)  # where a wrapped disc lands
        landing = sum(
            1 << (row * size + column)
            for row in range(size)
            for column in range(size)
            if column != wrapped_column
        )
        low.append(landing & 0xFFFFFFFF)
        high.append(landing >> 32)
    return tuple(np.array(table, np.uint32) for table in (left, right, low, high))


@struct.dataclass
class OthelloState(base.State):
    """An Othello position."""

    # [size*size] int8, row-major from the top-left (point = row * size + column, row 0 =
    # rank 1): 1 = player 0's disc (X, black), -1 = player 1's disc (O, white), 0 = empty.
    board: Array


class Othello(base.Game):
    """Othello on a size x size board (8 by default; any even size from 4 to 8).

    X (player 0, black) moves first from the standard start: O on d4 and e5, X on d5 and e4
    (rows numbered 1-size from the top, columns lettered from the left). A move places a disc
    that flanks a line of opponent discs in any of the eight directions and turns over every
    flanked line. The game ends as soon as neither side has such a move: the board is full,
    one side has no discs left, or no empty point is a move for either side. A player who
    has no move while the opponent has one must pass, and may pass only then; the opponent
    then moves, so two passes never follow each other.

    - Observation: [size, size, 3] float32 from the mover's view; plane 0 = discs of the
      player to move, plane 1 = the opponent's discs, plane 2 = the mover's legal moves.
    - Action: [] int32 in [0, size*size], a point row-major from the top-left, or
      size*size (64 on 8x8) to pass. Humans type "d3" or "pass" (`azjax.games.notation`).
    - Reward: [2] float32 on the step that ends the game: +1 to the side with more discs
      and -1 to the other; equal counts are a draw, (0, 0).
    - Symmetries: 8 (the dihedral group of the square; the pass maps to itself). Games last
      fewer than 2 * (size*size - 4) plies: at most size*size - 4 placements, and a pass
      only between two of them.
    """

    def __init__(self, size: int = 8):
        """Builds the game.

        Args:
          size: board side, even, from 4 to 8.
        """
        if size % 2 or not 4 <= size <= 8:
            raise ValueError(f"size must be an even number from 4 to 8, got {size}")
        self._size = size
        self.name = "othello" if size == 8 else f"othello_{size}x{size}"
        self.num_actions = size * size + 1
        self.observation_shape = (size, size, 3)
        self.symmetries = 8
        self.max_episode_length = 2 * (size * size - 4)
        self._board_perms = base.dihedral_perms(size, size)  # [8, size*size] int32
        pass_column = np.full((8, 1), size * size, np.int32)
        self._action_perms = np.concatenate([self._board_perms, pass_column], axis=1)  # [8, A]
        # [8] uint32 each: shifts and landing points per direction (`_direction_tables`).
        self._left, self._right, self._landing_low, self._landing_high = _direction_tables(size)

    def init(self, key: PRNGKey) -> OthelloState:
        del key  # The start position is fixed.
        size, centre = self._size, self._size // 2
        board = np.zeros((size, size), np.int8)
        board[centre - 1, centre - 1] = board[centre, centre] = -1
        board[centre - 1, centre] = board[centre, centre - 1] = 1
        board = jnp.asarray(board.reshape(-1))
        moves = self._moves(self._pack(board > 0), self._pack(board < 0))  # X has four.
        return OthelloState(
            current_player=jnp.int32(0),
            legal_action_mask=jnp.append(self._unpack(moves).astype(jnp.bool_), False),
            terminated=jnp.bool_(False),
            rewards=jnp.zeros(2, jnp.float32),
            step_count=jnp.int32(0),
            board=board,
        )

    def _step(self, state: OthelloState, action: Array) -> OthelloState:
        size = self._size
        stone = (1 - 2 * state.current_player).astype(jnp.int8)
        own, opponent = self._pack(state.board == stone), self._pack(state.board == -stone)
        placed = self._pack(jnp.arange(size * size) == action)  # Empty for a pass.
        runs = self._runs(placed, opponent)  # [8]
        flanked = (self._shift(runs) & own).nonempty()  # [8] bool, the run ends on an own disc
        flipped = _Bitboard(*(jnp.where(flanked, half, 0) for half in runs)).union()
        own, opponent = own | placed | flipped, opponent & ~flipped
        board = stone * (self._unpack(own) - self._unpack(opponent))
        next_moves = self._moves(opponent, own)  # The opponent moves next.
        must_pass = ~next_moves.nonempty()
        # A pass never ends the game: it is legal only while the opponent has a move.
        terminated = must_pass & ~self._moves(own, opponent).nonempty()
        score = jnp.sum(board, dtype=jnp.int32)  # X's discs minus O's
        outcome = jnp.sign(jnp.stack([score, -score])).astype(jnp.float32)
        return state.replace(
            current_player=1 - state.current_player,
            legal_action_mask=jnp.append(
                self._unpack(next_moves).astype(jnp.bool_), must_pass & ~terminated
            ),
            terminated=terminated,
            rewards=jnp.where(terminated, outcome, 0.0),
            board=board,
        )

    def observe(self, state: OthelloState) -> Array:
        size = self._size
        mover = (1 - 2 * state.current_player).astype(jnp.int8)
        # Per point: 1 = the mover's disc, -1 = the opponent's, 2 = a legal move (an empty
        # point), 0 = another empty point; one comparison then makes the three planes.
        codes = jnp.where(state.legal_action_mask[: size * size], 2, state.board * mover)
        return (codes.reshape(size, size, 1) == jnp.int8([1, -1, 2])).astype(jnp.float32)

    def _pack(self, points: Array) -> _Bitboard:
        """[size*size] bool -> the set of those points, [] uint32 halves."""
        bits = jnp.pad(points.astype(jnp.uint32), (0, 64 - points.size)).reshape(2, 32)
        words = jnp.sum(bits << jnp.arange(32, dtype=jnp.uint32), axis=-1, dtype=jnp.uint32)
        return _Bitboard(words[0], words[1])

    def _unpack(self, points: _Bitboard) -> Array:
        """A set of points, [] uint32 halves -> [size*size] int8, 1 at its points, else 0."""
        bits = jnp.stack(points)[:, None] >> jnp.arange(32, dtype=jnp.uint32)  # [2, 32]
        return (bits & 1).astype(jnp.int8).reshape(-1)[: self._size * self._size]

    def _shift(self, points: _Bitboard) -> _Bitboard:
        """Moves the points of each set in [8] one step along that entry's direction."""
        low, high = points
        left, right = self._left, self._right
        # One of `left`, `right` is 0 in each direction; shifting by 32 or more gives 0.
        return _Bitboard(
            (((low << left) >> right) | (high << (32 - right))) & self._landing_low,
            (((high << left) >> right) | (low >> (32 - left))) & self._landing_high,
        )

    def _runs(self, start: _Bitboard, opponent: _Bitboard) -> _Bitboard:
        """Per direction [8], the opponent discs reached from a `start` point through an
        unbroken line of opponent discs (the first one next to the start point)."""
        runs = self._shift(_Bitboard(*(jnp.broadcast_to(half, (8,)) for half in start)))
        runs = runs & opponent
        for _ in range(self._size - 3):  # A line of opponent discs is at most size - 2 long.
            runs = runs | (self._shift(runs) & opponent)
        return runs

    def _moves(self, own: _Bitboard, opponent: _Bitboard) -> _Bitboard:
        """The moves of the player owning `own`: the empty points where a run of `opponent`
        discs from an own disc ends."""
        empty = ~(own | opponent)  # Off-board bits too; `_shift` never lands on them.
        return (self._shift(self._runs(own, opponent)) & empty).union()
