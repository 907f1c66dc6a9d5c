"""Go with Tromp-Taylor rules: area scoring, no suicide, simple ko and positional superko.

Every stone carries the label of its chain (the point of one of its stones), so a move
joins chains by one relabelling `where` over the board and removes captured chains by
another. After each move one pass over the board finds, for the player to move next, the
chains in atari: per chain, the largest and the smallest number of an empty point next to
its stones (one `segment_max` over the chain labels); a chain is in atari when they agree.
An empty point is then a legal move when it has an empty neighbour, an own neighbour chain
not in atari or an opponent neighbour chain in atari (a capture), and is not the simple-ko
point. A step costs a few passes over the board (pgx counts the liberties of every chain
by comparing every point with every other); only the final one adds the area count, a
flood fill on one uint32 word per row (`go_area`).

Positional superko is checked for all moves at once with Zobrist hashes that add up (mod
2^32, in two uint32 words): a position's hash is the sum of one value per (point, colour)
of its stones, so a move changes it by its stone's value minus those of the stones it
captures, and the chains a move captures are those in atari whose liberty it fills (one
scatter-add over those liberties gives every move's change). The hashes of all earlier
positions are kept in ply order, and each names the one move that could recreate it: a
move adds one stone of the mover's colour and removes only opponent stones, so the low 9
bits of the mover's word, which add up the point numbers of its stones, grow by exactly
the move's point number. One pass over the earlier positions thus finds every repeating
move, however many moves there are, each confirmed by comparing its hash change with the
difference in all 64 bits. The other 46 bits are random, so a legal move is masked by a
hash collision with odds of about 2^-46 per earlier position.

State size per game (the bytes of one state's arrays; pgx 2.6's states in brackets, the
same sum): 2,319 B on 9x9 (5,718 B) and 10,159 B on 19x19 (25,318 B) at the default move
limit, of which 1,304 B and 5,784 B are the superko hash history (8 B per ply), which a
game with `superko=False` does not keep (1,015 B and 4,375 B).

Speed, `azjax bench --game go_9x9 --batch-sizes 1,64,1024 --env-only` (random play with
observations, steps per second, pgx 2.6 in the same run) on 2 shared CPU cores: at batch
1024 about 6-8x pgx on 9x9 (480k steps/s) and about 20x pgx on 19x19 (98k steps/s); see
docs/results.md for the tables. The figures vary by a third from run to run on that machine.
"""

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from azjax.games import base, go_area
from azjax.games.go_chains import OFF_BOARD, label_chains, neighbour_values
from azjax.types import Array, PRNGKey

_POINT_BITS = 9  # low bits of a Zobrist word that count point numbers (N < 2**9)
_POINT_MASK = (1 << _POINT_BITS) - 1


def _mix(x: Array) -> Array:
    """A bijective integer hash of uint32 values (Wellons' lowbias32); numpy or jax."""
    x = x ^ (x >> 16)
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> 16)


def _zobrist_words(points: np.ndarray, colour: int) -> np.ndarray:
    """Zobrist values [2, N] uint32 of a stone of `colour` (0 black, 1 white) on `points`.

    The high bits are random. The low `_POINT_BITS` bits of word `colour` hold the point
    number plus one and those of the other word are zero, so the low bits of word k of a
    position's hash (a sum of values) add up the point numbers of colour k's stones.
    """
    codes = (points + colour * len(points)).astype(np.uint32)
    random = np.stack([_mix(codes ^ np.uint32(0x9E3779B9)), _mix(codes ^ np.uint32(0x85EBCA6B))])
    words = random << np.uint32(_POINT_BITS)
    words[colour] |= (points + 1).astype(np.uint32)
    return words


@struct.dataclass
class GoState(base.State):
    """A Go position and what the rules need of its history."""

    # [N] int8, N = size*size points row-major from the top-left (point = row * size +
    # column, row 0 = the top row): +1 black stone, -1 white stone, 0 empty.
    board: Array
    chain: Array  # [N] int16, a stone's chain label (the point of one of its stones); N if empty
    in_atari: Array  # [N] bool, the stone's chain has exactly one liberty
    ko_point: Array  # [] int32, the point the mover may not play by the simple-ko rule; -1 none
    passed: Array  # [] bool, whether the last action was a pass
    captures: Array  # [2] int32, stones captured so far by black and by white
    previous_boards: Array  # [history-1, N] int8, the boards before the last 1..history-1 plies
    hash: Array  # [2] uint32, Zobrist hash of `board` (sum of its stones' values)
    # [2, L] uint32, column t the hash after ply t (column 0: the start), zeros after the
    # current ply; L = max_moves + 1 when superko is on, else 0 (no history kept).
    hashes: Array
    # [] float32, points added to white's score; the game's `komi` at the start, a field so
    # that one compiled function serves every komi (a GTP controller may change it).
    komi: Array


class Go(base.Game):
    """Go on a size x size board, Tromp-Taylor rules, black (player 0, X) first.

    A stone is placed on an empty point; opponent chains left without liberties are
    captured; a move that would leave its own chain without liberties (suicide, one stone
    or many) is illegal. Simple ko: after a single-stone capture by a stone played where
    all its neighbours were opponent stones or the edge, the captured point may not be
    played at once. Positional superko (`superko=True`): a move that would recreate any
    earlier board of the game is illegal (masked out of `legal_action_mask`; pgx instead
    ends the game as a loss for the player who repeats). Passing is always legal. The game
    ends after two passes in a row or at `max_moves` plies, and is scored by area: stones
    plus empty regions that reach only that colour's stones, minus komi for black (the
    state's `komi`, which starts as the game's `komi`).

    - Observation: [size, size, 2 * history + 1] float32 from the mover's view, as in
      AlphaGo Zero and pgx (`pgx.make("go_9x9")`): planes 2i and 2i+1 hold the mover's and
      the opponent's stones i plies ago (i < history; zeros before the start); the last
      plane is all ones when white is to move.
    - Action: [] int32 in [0, size*size], a point row-major from the top-left, or
      size*size to pass. Humans type GTP vertices: a column letter A-T without I and a row
      number counted from the bottom ("A9" is point 0 on 9x9), or "pass".
    - Reward: [2] float32 on the step that ends the game: +1 for the winner, -1 for the
      loser, by the sign of `score` (black area - white area - komi); (0, 0) when it is 0.
    - Symmetries: 8 (the dihedral group of the square; the pass maps to itself).
    """

    def __init__(
        self,
        size: int = 9,
        komi: float = 7.5,
        superko: bool = True,
        max_moves: int | None = None,
        history: int = 8,
    ):
        """Checks the options and builds the constant tables.

        Args:
          size: board side, 2 to 19.
          komi: points added to white's score (a whole number allows draws).
          superko: forbid moves that recreate an earlier board (positional superko); else
            only the simple-ko recapture is forbidden.
          max_moves: plies after which the game ends and is scored; 2 * size * size if None.
          history: positions in the observation (the current one and history - 1 before).

        Raises:
          ValueError: an option is out of range.
        """
        if not isinstance(size, int) or not 2 <= size <= 19:
            raise ValueError(f"size must be an integer from 2 to 19, got {size!r}")
        max_moves = 2 * size * size if max_moves is None else max_moves
        if not isinstance(max_moves, int) or max_moves < 1:
            raise ValueError(f"max_moves must be a positive integer, got {max_moves!r}")
        if not isinstance(history, int) or history < 1:
            raise ValueError(f"history must be a positive integer, got {history!r}")
        self.size, self.komi, self.superko = size, float(komi), bool(superko)
        self.max_moves, self.history = max_moves, history
        self.name = f"go_{size}x{size}"
        num_points = size * size
        self.num_actions = num_points + 1
        self.observation_shape = (size, size, 2 * history + 1)
        self.max_episode_length = max_moves
        self.symmetries = 8
        self._board_perms = base.dihedral_perms(size, size)  # [8, N] int32
        pass_column = np.full((8, 1), num_points, np.int32)
        self._action_perms = np.concatenate([self._board_perms, pass_column], axis=1)  # [8, A]
        rows, columns = np.divmod(np.arange(num_points), size)
        steps = np.array([(-1, 0), (1, 0), (0, -1), (0, 1)])  # up, down, left, right
        nb_rows, nb_columns = rows[:, None] + steps[:, 0], columns[:, None] + steps[:, 1]
        on_board = (nb_rows >= 0) & (nb_rows < size) & (nb_columns >= 0) & (nb_columns < size)
        neighbours = np.where(on_board, nb_rows * size + nb_columns, num_points)
        # [N+1, 4] int32: the points next to each point, N off the board; row N (the pass)
        # has none, so a pass flows through the stone-placing code as a no-op.
        self._neighbours = np.concatenate([neighbours, np.full((1, 4), num_points)]).astype(
            np.int32
        )
        points = np.arange(num_points)
        words = np.stack([_zobrist_words(points, colour) for colour in (0, 1)])
        # [2 colours (black, white), 2 words, N+1] uint32, zero at N (the pass).
        self._zobrist = np.pad(words, ((0, 0), (0, 0), (0, 1)))

    def init(self, key: PRNGKey) -> GoState:
        del key  # The start position is fixed: an empty board.
        return self.setup(np.zeros(self.size * self.size, np.int8))

    def setup(self, board: Array, current_player: Array = 0) -> GoState:
        """A position with `board` ([N] int8, +1 black, -1 white) and `current_player` to
        move, as if it were the start of the game: no ko, no earlier positions (jittable).

        Every chain on `board` must have a liberty.
        """
        size, num_points = self.size, self.size * self.size
        board = jnp.asarray(board, jnp.int8).reshape(num_points)
        current_player = jnp.asarray(current_player, jnp.int32)
        hash_ = self._hash(board)
        num_hashes = self.max_moves + 1 if self.superko else 0
        hashes = jnp.zeros((2, num_hashes), jnp.uint32).at[:, :1].set(hash_[:, None])
        state = GoState(
            current_player=current_player,
            legal_action_mask=jnp.zeros(self.num_actions, jnp.bool_),
            terminated=jnp.bool_(False),
            rewards=jnp.zeros(2, jnp.float32),
            step_count=jnp.int32(0),
            board=board,
            chain=label_chains(board, size),
            in_atari=jnp.zeros(num_points, jnp.bool_),
            ko_point=jnp.int32(-1),
            passed=jnp.bool_(False),
            captures=jnp.zeros(2, jnp.int32),
            previous_boards=jnp.zeros((self.history - 1, num_points), jnp.int8),
            hash=hash_,
            hashes=hashes,
            komi=jnp.float32(self.komi),
        )
        return self._analyse(state)

    def _step(self, state: GoState, action: Array) -> GoState:
        num_points = self.size * self.size
        player = state.current_player
        colour = (1 - 2 * player).astype(jnp.int8)  # the mover's stones
        points = jnp.arange(num_points)
        # A pass is point N: no neighbours, nothing placed, captured or merged.
        neighbours = jnp.asarray(self._neighbours)[action]  # [4] int32
        nb_colour = jnp.take(state.board, neighbours, mode="fill", fill_value=OFF_BOARD)
        nb_chain = jnp.take(state.chain, neighbours, mode="fill", fill_value=num_points)
        nb_atari = jnp.take(state.in_atari, neighbours, mode="fill", fill_value=False)
        captures = (nb_colour == -colour) & nb_atari  # [4] chains whose last liberty it fills
        joins = nb_colour == colour  # [4] own chains the stone connects
        same_chain = state.chain[:, None] == nb_chain  # [N, 4]
        captured = jnp.any(same_chain & captures, axis=1)  # [N] bool
        placed = points == action
        joined = jnp.any(same_chain & joins, axis=1) | placed
        chain = jnp.where(captured, num_points, jnp.where(joined, action, state.chain))
        board = jnp.where(captured, 0, jnp.where(placed, colour, state.board))
        num_captured = jnp.sum(captured, dtype=jnp.int32)
        zobrist = jnp.asarray(self._zobrist)
        mover_values, opponent_values = zobrist[player], zobrist[1 - player]  # [2, N+1] each
        captured_hash = jnp.sum(
            jnp.where(captured, opponent_values[:, :num_points], 0), axis=1, dtype=jnp.uint32
        )
        hash_ = state.hash + mover_values[:, action] - captured_hash
        # Simple ko: one stone captured by a stone played into an eye of the opponent's.
        in_eye = jnp.all((nb_colour == -colour) | (nb_colour == OFF_BOARD))
        captured_point = jnp.sum(jnp.where(captured, points, 0))
        is_pass = action == num_points
        step_count = state.step_count + 1
        terminated = (is_pass & state.passed) | (step_count >= self.max_moves)
        state = state.replace(
            current_player=1 - player,
            terminated=terminated,
            board=board,
            chain=chain.astype(jnp.int16),
            ko_point=jnp.where(in_eye & (num_captured == 1), captured_point, -1),
            passed=is_pass,
            captures=state.captures.at[player].add(num_captured),
            previous_boards=jnp.concatenate([state.board[None], state.previous_boards])[:-1],
            hash=hash_,
            hashes=state.hashes.at[:, step_count].set(hash_) if self.superko else state.hashes,
        )
        state = self._analyse(state, step_count)
        score = go_area.area_difference(board, self.size, terminated) - state.komi
        outcome = jnp.sign(jnp.stack([score, -score])).astype(jnp.float32)
        return state.replace(rewards=jnp.where(terminated, outcome, 0.0))

    def observe(self, state: GoState) -> Array:
        size = self.size
        boards = jnp.concatenate([state.board[None], state.previous_boards])  # [history, N]
        mover = (1 - 2 * state.current_player).astype(jnp.int8)
        planes = jnp.stack([boards == mover, boards == -mover], axis=-1)  # [history, N, 2]
        planes = planes.transpose(1, 0, 2).reshape(size, size, 2 * self.history)
        to_play = jnp.full((size, size, 1), state.current_player == 1)
        return jnp.concatenate([planes, to_play], axis=-1).astype(jnp.float32)

    def score(self, state: GoState) -> Array:
        """Black's area minus white's area minus komi, Tromp-Taylor: [] float32 (jittable).

        An area is the stones of a colour plus the empty points whose region (connected
        through empty points) reaches stones of that colour only. Every stone counts,
        dead or not.
        """
        return go_area.area_difference(state.board, self.size, jnp.bool_(True)) - state.komi

    def ownership(self, state: GoState) -> Array:
        """[N] float32 per point from black's (player 0's) view: +1 in black's area, -1 in
        white's, 0 in neither (dame, a seki's shared liberties, a region reaching no stone);
        the area of `score`, so `score = sum(ownership) - komi` (jittable)."""
        return go_area.ownership(state.board, self.size)

    def final_score(self, state: GoState) -> Array:
        """[] float32 black's margin: `score` (black area - white area - komi)."""
        return self.score(state)

    def _hash(self, board: Array) -> Array:
        """[2] uint32: the Zobrist hash of a board [N] (the sum of its stones' values)."""
        values = jnp.asarray(self._zobrist)[:, :, :-1]  # [colour, word, N]
        stones = jnp.where(board == 1, values[0], jnp.where(board == -1, values[1], 0))
        return jnp.sum(stones, axis=1, dtype=jnp.uint32)

    def _analyse(self, state: GoState, step_count: Array | None = None) -> GoState:
        """Fills in `in_atari` and the legal moves of the player to move.

        Args:
          state: a position whose `board`, `chain`, `ko_point` and hashes are up to date.
          step_count: plies played in it (`state.step_count` if None), which sets how many
            of `hashes` are filled.
        """
        size, num_points = self.size, self.size * self.size
        board, chain = state.board, state.chain.astype(jnp.int32)
        colour = (1 - 2 * state.current_player).astype(jnp.int8)  # the next mover's stones
        points = jnp.arange(num_points, dtype=jnp.int32)
        empty = board == 0
        # Per stone: the largest index of an empty neighbour and minus the smallest.
        empty_index = jnp.where(empty, points, -1).reshape(size, size)
        negative_index = jnp.where(empty, -points, -num_points).reshape(size, size)
        largest = jnp.max(neighbour_values(empty_index, -1), axis=0).reshape(-1)
        negative_smallest = jnp.max(neighbour_values(negative_index, -num_points), axis=0)
        local = jnp.stack([largest, negative_smallest.reshape(-1)], axis=1)  # [N, 2]
        liberties = jax.ops.segment_max(local, chain, num_segments=num_points + 1)[chain]
        in_atari = ~empty & (liberties[:, 0] + liberties[:, 1] == 0)
        # A neighbour that makes a move legal: an empty point, an own chain keeping a
        # liberty, or an opponent chain in atari (captured).
        supports = empty | ((board == colour) & ~in_atari) | ((board == -colour) & in_atari)
        supported = jnp.any(neighbour_values(supports.reshape(size, size), False), axis=0)
        legal = empty & supported.reshape(-1) & (points != state.ko_point)
        if self.superko:
            count = (state.step_count if step_count is None else step_count) + 1
            legal = legal & ~self._repeats(state, in_atari, liberties[:, 0], count)
        return state.replace(
            in_atari=in_atari, legal_action_mask=jnp.concatenate([legal, jnp.ones(1, bool)])
        )

    def _repeats(self, state: GoState, in_atari: Array, liberty: Array, count: Array) -> Array:
        """[N] bool: the points where a stone of the player to move would recreate one of
        the first `count` positions of `state.hashes` (points that are no legal move aside).

        Each earlier position names the one move that could recreate it: a move adds one
        stone of the mover's colour and removes only opponent stones, so the low bits of the
        mover's hash word (the sum of point + 1 over its stones, see `_zobrist_words`) grow
        by exactly the move's point + 1. The move's full hash change (its stone minus the
        chains it captures) then confirms the match.

        Args:
          state: the position, with `hash` and `hashes` up to date.
          in_atari: [N] bool, the stones of chains with one liberty.
          liberty: [N] int32, that liberty for such a stone.
          count: [] int32, how many of `hashes` are filled.
        """
        num_points = self.size * self.size
        player = state.current_player
        zobrist = jnp.asarray(self._zobrist)  # [colour, word, N+1]
        # A chain in atari is captured by a stone on its one liberty: per point, the hash
        # of the stones a move there captures.
        capturable = (state.board == 2 * player - 1) & in_atari  # [N] opponent stones
        target = jnp.where(capturable, liberty, num_points)
        values = zobrist[1 - player, :, :num_points]  # [2, N]
        captured = jnp.zeros((2, num_points + 1), jnp.uint32).at[:, target].add(values)
        change = zobrist[player] - captured  # [2, N+1] hash change of a move at each point
        difference = state.hashes - state.hash[:, None]  # [2, L] earlier minus current
        point = (difference[player] & _POINT_MASK).astype(jnp.int32) - 1  # [L]
        expected = jnp.take(change, point, axis=1, mode="clip")  # [2, L]
        match = jnp.all(expected == difference, axis=0) & (point >= 0) & (point < num_points)
        match &= jnp.arange(state.hashes.shape[1]) < count
        return (
            jnp.zeros(num_points, jnp.bool_)
            .at[jnp.where(match, point, num_points)]
            .set(True, mode="drop")
        )

    def __repr__(self) -> str:
        return (
            f"Go(size={self.size}, komi={self.komi:g}, superko={self.superko}, "
            f"max_moves={self.max_moves}, history={self.history})"
        )
