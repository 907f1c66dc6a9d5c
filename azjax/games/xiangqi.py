"""Xiangqi (Chinese chess) on 9 files by 10 ranks (FEN and ICCS: `azjax.games.notation.xiangqi`).

Boards are seen from the player to move: the mover's pieces are positive and play upward
(row 0 is the top row, the opponent's back rank). Red sees the board as it stands; Black
sees it mirrored rank for rank (rank r becomes rank 9 - r, files keep their letters) with
the colours swapped. So one set of tables, built once at import (`xiangqi_tables`),
serves both sides.

Move generation is piece-centric (`xiangqi_moves`); king safety (is the mover's general
attacked after a move?) is `xiangqi_check`.
"""

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from azjax.games import base
from azjax.games.xiangqi_check import cycle_checks, in_check
from azjax.games.xiangqi_moves import legal_moves
from azjax.games.xiangqi_tables import (
    _FILE_FLIP,
    _MIRROR_LABELS,
    _MOVE_POINTS,
    _ZOBRIST,
    _ZOBRIST_SIDE,
    FILES,
    HANDICAP_REMOVABLE,
    NUM_ACTIONS,
    POINTS,
    ROWS,
    START_BOARD,
)
from azjax.games.xiangqi_tables import LABELS as LABELS  # re-exported: the action labels
from azjax.types import Array, PRNGKey

# Piece values by code (empty, general, advisor, elephant, horse, chariot, cannon, soldier)
# for `Xiangqi.adjudicate`; a side starts with 48. A chariot up scores tanh(9 / 10) = 0.72.
MATERIAL = (0.0, 0.0, 2.0, 2.0, 4.0, 9.0, 4.5, 1.0)
MATERIAL_SCALE = 10.0


def position_hash(board: Array, player: Array) -> Array:
    """[2] uint32 Zobrist hash of a board ([90], Red positive) with `player` to move."""
    codes = jnp.asarray(board, jnp.int32) + 7
    keys = jnp.asarray(_ZOBRIST)[jnp.arange(POINTS) * 15 + codes]  # [90, 2]
    side = jnp.where(jnp.asarray(player) == 1, jnp.asarray(_ZOBRIST_SIDE), jnp.uint32(0))
    return jax.lax.reduce(keys, np.uint32(0), jax.lax.bitwise_xor, (0,)) ^ side


def view(board: Array, player: Array) -> Array:
    """The board seen by `player` ([90] int8, that player's pieces positive, playing up).

    Red (0) sees the board as it stands; Black (1) sees it with the ranks mirrored and the
    colours swapped. The view is its own inverse.
    """
    flipped = -board.reshape(ROWS, FILES)[::-1].reshape(-1)
    return jnp.where(player == 1, flipped, board)


@struct.dataclass
class XiangqiState(base.State):
    """A Xiangqi position."""

    # [90] int8, row-major from the top-left as Red sees it (point = row * 9 + file, row 0 =
    # rank 9, Black's back rank): Red's pieces positive, Black's negative (codes 1-7:
    # general, advisor, elephant, horse, chariot, cannon, soldier), 0 empty.
    board: Array
    no_capture_plies: Array  # [] int32, plies since the last capture (or the start)
    repetitions: Array  # [] int32, times the current position has stood (1 the first time)
    # [R, 2] uint32, 64-bit hashes of the last R positions (R: the no-capture limit or else
    # max_episode_length; 1 without a repetition rule), position t at t % R.
    history: Array
    # [R] bool, beside `history` (position t at t % R): whether the side to move is in check
    # there, that is whether the move that reached it gave check; [1] without the
    # perpetual-check rule.
    checks: Array


class Xiangqi(base.Game):
    """Xiangqi: checkmate or stalemate the opposing general.

    Red (player 0, at the bottom) moves first from the standard start.
    Pieces move by the usual rules: the chariot along ranks and files; the horse one point
    orthogonally then one diagonally outward, unless a piece stands on that first point (its
    leg); the elephant two points diagonally, unless its eye (the point between) is
    occupied, never across the river; advisor (diagonally) and general (orthogonally) one
    point within the palace; the cannon like a chariot but captures by jumping exactly one
    piece (the screen); the soldier one point forward, and also sideways once across the
    river. The generals may not face each other on a file with nothing between, and no move
    may leave the mover's general attacked. A player with no legal move loses, whether in
    check (checkmate) or not (stalemate).

    Further endings, each a constructor option: a draw after `no_capture_limit` plies
    without a capture or at `max_episode_length` plies, and repetition: a position (board
    and side to move) standing for the `repetition_limit`-th time ends the game, a draw
    unless a side checked perpetually. Leaving the opponent without a move wins even when
    the move also reaches one of these; a perpetual check outranks the draws.

    Perpetual check (`perpetual_check_loses`, on by default) looks at the moves played from
    the first of the `repetition_limit` occurrences of the position up to now: if one side
    gave check with every one of its moves there and the other side did not, the side that
    checked loses; if both sides checked with every move, or neither did, it is a draw. So
    a side that begins to check after the first occurrence draws. This is the rule of
    Fairy-Stockfish's `xiangqi` variant (`perpetualCheckIllegal` with the default
    `nFoldRule` of 3, in `Position::is_optional_game_end`; there too only plies since the
    last capture can repeat) with two differences: its releases before April 2022 (Debian's
    11.1 among them) make the side whose move completes a mutual perpetual check lose,
    where later ones draw as here; and it tests its 50-move rule first, so a move that
    reaches both draws there.

    Perpetual chase (attacking an unprotected piece move after move) stays a draw. The
    Asian rules that forbid it are long lists of cases (which attackers count, the general
    and soldiers not; when a piece is protected; cycles mixing checks and chases), not a
    rule a kernel can state exactly; Fairy-Stockfish 11.1 has no chasing rule either (its
    `xiangqi` variant gained a partial `AXF_CHASING` in April 2022).

    - Observation: [10, 9, 16] float32 from the mover's view (see `view`: Black's board is
      mirrored rank for rank). Planes 0-6: the mover's general, advisors, elephants,
      horses, chariots, cannons, soldiers; planes 7-13: the opponent's; plane 14: plies
      without a capture / the no-capture limit (or / `max_episode_length` without one);
      plane 15: earlier occurrences of the position / (repetition limit - 1) (0 without).
    - Action: [] int32 in [0, 2086), a from-to label seen from the mover (`LABELS`, in
      cchess-zero's order): every move along a rank or file, every horse jump and the
      advisor and elephant diagonals. Humans type ICCS coordinates as Red sees the board
      ("h2e2": files a-i from Red's left, ranks 0-9 from Red's side); for Black the label
      is the move with its ranks mirrored, so Black's "h7e7" is the label "h2e2".
    - Reward: [2] float32 on the step that ends the game: +1 to the player who moved last
      and -1 to the player left without a move; after a perpetual check, -1 to the player
      who gave it and +1 to the other; draws are (0, 0).
    - Symmetries: 2, the identity and the left-right mirror (files a <-> i).
    """

    name = "xiangqi"

    def __init__(
        self,
        max_episode_length: int = 400,
        no_capture_limit: int | None = 120,
        repetition_limit: int | None = 3,
        perpetual_check_loses: bool = True,
    ):
        """Checks the options and builds the symmetry tables.

        Args:
          max_episode_length: plies after which the game is a draw.
          no_capture_limit: plies without a capture after which the game is a draw (the
            usual 60 moves by each side); None for no limit.
          repetition_limit: the occurrence of a position that ends the game (3: threefold
            repetition), a draw unless perpetual check decides it; None for no repetition
            rule.
          perpetual_check_loses: the side that gave check with every move since the
            repeated position first stood, while the other side did not, loses; else every
            repetition draws. No effect without a repetition rule.

        Raises:
          ValueError: an option is out of range.
        """
        for option, value, least in (
            ("max_episode_length", max_episode_length, 1),
            ("no_capture_limit", no_capture_limit, 1),
            ("repetition_limit", repetition_limit, 2),
        ):
            if value is None and option != "max_episode_length":
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"{option} must be an integer >= {least}, got {value!r}")
        if not isinstance(perpetual_check_loses, bool):
            raise ValueError(
                f"perpetual_check_loses must be True or False, got {perpetual_check_loses!r}"
            )
        self.max_episode_length = max_episode_length
        self.no_capture_limit = no_capture_limit
        self.repetition_limit = repetition_limit
        self.perpetual_check_loses = perpetual_check_loses
        self.num_actions = NUM_ACTIONS
        self.observation_shape = (ROWS, FILES, 16)
        self.symmetries = 2
        self._board_perms = np.stack([np.arange(POINTS), _FILE_FLIP]).astype(np.int32)
        self._action_perms = np.stack([np.arange(NUM_ACTIONS), _MIRROR_LABELS]).astype(np.int32)
        # Positions since the last capture are at most the no-capture limit, so a ring of
        # that many hashes sees every earlier occurrence of a position.
        limit = min(no_capture_limit or max_episode_length, max_episode_length)
        self._history_length = limit if repetition_limit else 1
        self._perpetual_rule = bool(repetition_limit) and perpetual_check_loses
        self._checks_length = self._history_length if self._perpetual_rule else 1
        # [2]: observation planes 14 and 15 per ply without capture, per earlier occurrence.
        repeated_scale = 1 / (repetition_limit - 1) if repetition_limit else 0.0
        self._counter_scales = np.float32(
            [1 / (no_capture_limit or max_episode_length), repeated_scale]
        )
        largest = max(no_capture_limit or max_episode_length, repetition_limit or 0)
        self._stored_dtype = jnp.uint8 if largest <= 255 else jnp.uint16

    def init(self, key: PRNGKey) -> XiangqiState:
        del key  # The start position is fixed.
        with jax.ensure_compile_time_eval():  # constants, also when `init` is traced
            return self.setup(START_BOARD)

    def handicap_init(self, key: PRNGKey) -> XiangqiState:
        """The start position with pieces taken off at random (`selfplay.handicap_starts`):
        each side loses each of its pieces but the general and the centre soldier with a
        probability drawn for that side from U(0, 1), so most starts have unequal material.
        Red moves first; the centre soldiers keep the generals apart, so no one is in check
        and Red always has a move."""
        rate_key, piece_key = jax.random.split(key)
        rates = jax.random.uniform(rate_key, (2,))
        board = jnp.asarray(START_BOARD)
        rate = jnp.where(board > 0, rates[0], rates[1])
        taken = jax.random.uniform(piece_key, (POINTS,)) < rate
        return self.setup(jnp.where(taken & jnp.asarray(HANDICAP_REMOVABLE), 0, board))

    def setup(
        self, board: Array, current_player: Array = 0, no_capture_plies: Array = 0
    ) -> XiangqiState:
        """A position with `board` and `current_player` to move, as if it were the start of
        the game: no plies played, the repetition history holding this position only
        (jittable). `azjax.games.notation.xiangqi.from_fen` builds one from a FEN.

        Args:
          board: [90] int8 as `XiangqiState.board` (Red positive, row 0 = rank 9), a
            position a game can reach: piece counts within bounds, pieces on points they
            can stand on, the side not to move not in check (`from_fen` checks these).
          current_player: [] int32, 0 for Red, 1 for Black.
          no_capture_plies: [] int32, plies without a capture so far, below the no-capture
            limit.
        """
        board = jnp.asarray(board, jnp.int8).reshape(POINTS)
        current_player = jnp.asarray(current_player, jnp.int32)
        history = jnp.zeros((self._history_length, 2), jnp.uint32)
        history = history.at[0].set(position_hash(board, current_player))
        mask, in_check = legal_moves(view(board, current_player))
        checks = jnp.zeros(self._checks_length, jnp.bool_).at[0].set(in_check)
        return XiangqiState(
            current_player=current_player,
            legal_action_mask=mask,
            terminated=~jnp.any(mask),
            rewards=jnp.zeros(2, jnp.float32),
            step_count=jnp.int32(0),
            board=board,
            no_capture_plies=jnp.asarray(no_capture_plies, jnp.int32),
            repetitions=jnp.int32(1),
            history=history,
            checks=checks,
        )

    def _step(self, state: XiangqiState, action: Array) -> XiangqiState:
        player = state.current_player
        origin, target = jnp.asarray(_MOVE_POINTS)[player, action]
        piece, captured = state.board[origin], state.board[target]
        board = state.board.at[target].set(piece).at[origin].set(0)
        zobrist = jnp.asarray(_ZOBRIST)
        position = (
            state.history[state.step_count % self._history_length]
            ^ zobrist[origin * 15 + piece + 7]
            ^ zobrist[target * 15 + piece + 7]
            ^ zobrist[target * 15 + captured + 7]
            ^ jnp.asarray(_ZOBRIST_SIDE)
        )
        ply = state.step_count + 1
        history = state.history.at[ply % self._history_length].set(position)
        repetitions = jnp.sum(jnp.all(history == position, axis=-1), dtype=jnp.int32)
        no_capture_plies = jnp.where(captured != 0, 0, state.no_capture_plies + 1)
        mask, gave_check = legal_moves(view(board, 1 - player))
        won = ~jnp.any(mask)
        ended = won | (ply >= self.max_episode_length)
        if self.no_capture_limit:
            ended |= no_capture_plies >= self.no_capture_limit
        outcome = won.astype(jnp.int32)  # for the mover: 1 a win, -1 a loss, 0 a draw
        checks = state.checks
        if self.repetition_limit:
            repeated = repetitions >= self.repetition_limit
            ended |= repeated
            if self._perpetual_rule:
                checks = checks.at[ply % self._checks_length].set(gave_check)
                mover_checked, opponent_checked = cycle_checks(history, checks, ply)
                perpetual = opponent_checked.astype(jnp.int32) - mover_checked.astype(jnp.int32)
                outcome = jnp.where(won | ~repeated, outcome, perpetual)
        red_reward = outcome * (1 - 2 * player)  # in integers: a draw is +0.0 for both
        return state.replace(
            current_player=1 - player,
            legal_action_mask=mask,
            terminated=ended,
            rewards=jnp.stack([red_reward, -red_reward]).astype(jnp.float32),
            board=board,
            no_capture_plies=no_capture_plies,
            repetitions=repetitions,
            history=history,
            checks=checks,
        )

    def observe(self, state: XiangqiState) -> Array:
        board = view(state.board, state.current_player).reshape(ROWS, FILES, 1)
        codes = jnp.int8([*range(1, 8), *range(-1, -8, -1)])
        pieces = (board == codes).astype(jnp.float32)  # [10, 9, 14]
        # Scaled by multiplying with float32 constants: jit and eager calls then agree to
        # the bit (XLA may turn a division by a constant into such a product, or not).
        counts = jnp.stack([state.no_capture_plies, state.repetitions - 1]).astype(jnp.float32)
        counters = jnp.broadcast_to(counts * self._counter_scales, (ROWS, FILES, 2))
        return jnp.concatenate([pieces, counters], axis=-1)

    def encode_observation(self, obs: Array) -> Array:
        """Piece planes as 0/1 and the two counter planes as their counts (integers up to
        the no-capture limit and the repetition limit): uint8, or uint16 past 255."""
        divisors = np.where(self._counter_scales > 0, self._counter_scales, np.float32(1))
        counts = jnp.round(obs[..., 14:] / divisors)
        return jnp.concatenate([obs[..., :14], counts], axis=-1).astype(self._stored_dtype)

    def decode_observation(self, stored: Array) -> Array:
        counters = stored[..., 14:].astype(jnp.float32) * self._counter_scales  # as `observe`
        return jnp.concatenate([stored[..., :14].astype(jnp.float32), counters], axis=-1)

    def legal_action_mask(self, state: XiangqiState) -> Array:
        """[A] bool, the moves of the player to move, recomputed from the board (ignoring the
        draw rules: it may be nonzero in a terminated state)."""
        return legal_moves(view(state.board, state.current_player))[0]

    def adjudicate(self, state: XiangqiState) -> Array:
        """Material: tanh((Red's - Black's) / MATERIAL_SCALE) for Red, its negative for Black,
        with the usual piece values (`MATERIAL`: chariot 9, cannon 4.5, horse 4, advisor and
        elephant 2, soldier 1)."""
        board = state.board.astype(jnp.int32)
        balance = jnp.sum(jnp.sign(board) * jnp.asarray(MATERIAL, jnp.float32)[jnp.abs(board)])
        score = jnp.tanh(balance / MATERIAL_SCALE)
        return jnp.stack([score, -score])

    def in_check(self, state: XiangqiState) -> bool:
        """Whether the general of the player to move is attacked (host-side)."""
        return bool(in_check(view(state.board, state.current_player)))

    def perpetual_checker(self, state: XiangqiState) -> int | None:
        """The player (0 Red, 1 Black) who lost `state`, a game ended by repetition, by
        perpetual check; None when no perpetual check decided it (host-side)."""
        if not (self._perpetual_rule and int(state.repetitions) >= self.repetition_limit):
            return None
        mover_checked, opponent_checked = map(
            bool, cycle_checks(state.history, state.checks, state.step_count)
        )
        if mover_checked == opponent_checked:
            return None
        mover = 1 - int(state.current_player)
        return mover if mover_checked else 1 - mover

    def __repr__(self) -> str:
        return (
            f"Xiangqi(max_episode_length={self.max_episode_length}, "
            f"no_capture_limit={self.no_capture_limit}, repetition_limit={self.repetition_limit}, "
            f"perpetual_check_loses={self.perpetual_check_loses})"
        )
