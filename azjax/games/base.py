"""The game protocol: static Python attributes, pure functions of a `State` pytree.

Every game method is unbatched; callers `jax.vmap` them. Episode rules shared by all
games (stepping a terminated state is a no-op, masks are all False once terminated,
rewards are nonzero only on the step that ends the game) live here, in `Game.step`, so a
game kernel (`_step`) only implements its own rules.
"""

import abc

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from azjax.types import Array, PRNGKey


@struct.dataclass
class State:
    """Fields every game state has; games subclass it with their own board fields."""

    current_player: Array  # [] int32, 0 or 1, the player to move; player 0 moves first
    legal_action_mask: Array  # [A] bool, True = legal; all False once terminated
    terminated: Array  # [] bool
    rewards: Array  # [2] float32, per player; nonzero only on the step that ends the game
    step_count: Array  # [] int32, plies played


class Game(abc.ABC):
    """A two-player, zero-sum, alternating-turn game.

    Attributes (static Python values, never traced):
      name: registry name.
      num_actions: A; every action id is in [0, A).
      observation_shape: (H, W, C), channels last, from the mover's view.
      symmetries: S, number of board symmetries usable for augmentation (1 = identity only).
      max_episode_length: upper bound on plies in one game (the game ends by then).
    """

    name: str
    num_actions: int
    observation_shape: tuple[int, ...]
    symmetries: int
    max_episode_length: int

    # Symmetry tables, built once at construction: index s maps a transformed position
    # back to the original, `new[i] = old[perm[s, i]]`.
    _board_perms: np.ndarray  # [S, H*W] int32
    _action_perms: np.ndarray  # [S, A] int32

    @abc.abstractmethod
    def init(self, key: PRNGKey) -> State:
        """Returns the start position (player 0 to move). `key` is for games with random starts."""

    @abc.abstractmethod
    def _step(self, state: State, action: Array) -> State:
        """Game kernel: plays a legal `action` in a non-terminated state.

        Sets `current_player`, `legal_action_mask`, `terminated`, `rewards` of the next state.
        `step_count` and the terminal rules are handled by `step`.
        """

    @abc.abstractmethod
    def observe(self, state: State) -> Array:
        """Returns the observation [H, W, C] float32 from the view of the player to move."""

    def encode_observation(self, obs: Array) -> Array:
        """The observation in the smallest dtype that holds it exactly, as replay stores it.

        The default suits observations of 0/1 planes: uint8. A game with other values
        (counters) overrides this and `decode_observation`; `decode_observation(
        encode_observation(observe(s)))` must equal `observe(s)` bit for bit.
        """
        return obs.astype(jnp.uint8)

    def decode_observation(self, stored: Array) -> Array:
        """The float32 observation (the network's input) from `encode_observation`'s form."""
        return stored.astype(jnp.float32)

    def step(self, state: State, action: Array) -> State:
        """Plays `action`; a no-op (with zero rewards) when `state` is already terminated.

        The result of an illegal action is unspecified: callers mask actions with
        `legal_action_mask` (search does at every node; `azjax.games.notation` validates
        human input).
        """
        zero_rewards = jnp.zeros(2, jnp.float32)
        next_state = self._step(state.replace(rewards=zero_rewards), jnp.asarray(action, jnp.int32))
        next_state = next_state.replace(
            step_count=state.step_count + 1,
            legal_action_mask=next_state.legal_action_mask & ~next_state.terminated,
        )
        frozen = state.replace(rewards=zero_rewards)
        return jax.tree.map(
            lambda old, new: jnp.where(state.terminated, old, new), frozen, next_state
        )

    def apply_symmetry(self, obs: Array, policy: Array, index: Array) -> tuple[Array, Array]:
        """Applies board symmetry `index` in [0, S) to an observation and a policy over actions.

        Args:
          obs: [H, W, C] observation.
          policy: [A] distribution (or any per-action values).
          index: [] int32 symmetry index; 0 is the identity.

        Returns:
          The transformed (obs [H, W, C], policy [A]).
        """
        height, width, planes = obs.shape
        board_perm = jnp.asarray(self._board_perms)[index]
        action_perm = jnp.asarray(self._action_perms)[index]
        obs = obs.reshape(height * width, planes)[board_perm].reshape(height, width, planes)
        return obs, policy[action_perm]

    def adjudicate(self, state: State) -> Array:
        """[2] float32 in [-1, 1]: a heuristic score per player (material, say), which
        `selfplay.draw_adjudication` labels a drawn game's positions with instead of 0 and
        `selfplay.win_adjudication` ends self-play games by. Not a rule: results outside
        self-play keep the rules. None here: a game that has one overrides this
        (`adjudicates`)."""
        del state
        return jnp.zeros(2, jnp.float32)

    @property
    def adjudicates(self) -> bool:
        """Whether this game overrides `adjudicate` (the adjudication options need it)."""
        return type(self).adjudicate is not Game.adjudicate

    def handicap_init(self, key: PRNGKey) -> State:
        """A start position with pieces taken off one or both sides at random, which
        `selfplay.handicap_starts` starts that share of self-play games from, so that won
        positions get played out to the end. Not a rule: evaluations start from `init`. None
        here: a game that has one overrides this (`has_handicap_starts`)."""
        return self.init(key)

    @property
    def has_handicap_starts(self) -> bool:
        """Whether this game overrides `handicap_init` (`selfplay.handicap_starts` needs it)."""
        return type(self).handicap_init is not Game.handicap_init

    def ownership(self, state: State) -> Array:
        """[H*W] float32 in {-1, 0, 1}: who owns each board point (the observation's points,
        row-major) from player 0's view at `state`: +1 player 0, -1 player 1, 0 neither (Go:
        Tromp-Taylor area). The learner's ownership target (`learner.ownership_weight`) is
        its value at the end of the game. None here: a game that has it overrides this
        (`has_ownership`)."""
        del state
        height, width = self.observation_shape[:2]
        return jnp.zeros(height * width, jnp.float32)

    @property
    def has_ownership(self) -> bool:
        """Whether this game overrides `ownership` (`learner.ownership_weight` needs it)."""
        return type(self).ownership is not Game.ownership

    def final_score(self, state: State) -> Array:
        """[] float32: player 0's score margin at `state` (Go: black area - white area -
        komi). The learner's score target (`learner.score_weight`) is its value at the end
        of the game. None here: a game that has one overrides this (`has_score`)."""
        del state
        return jnp.zeros((), jnp.float32)

    @property
    def has_score(self) -> bool:
        """Whether this game overrides `final_score` (`learner.score_weight` needs it)."""
        return type(self).final_score is not Game.final_score

    def permute_points(self, values: Array, index: Array) -> Array:
        """Board symmetry `index` in [0, S) applied to per-point values [H*W, ...] (an
        ownership map), as `apply_symmetry` applies it to the observation's points."""
        return values[jnp.asarray(self._board_perms)[index]]

    def action_permutations(self) -> np.ndarray:
        """[S, A] int32: symmetry s takes a policy p over actions to `p[perms[s]]`."""
        return self._action_perms

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def stone_planes(board: Array, current_player: Array, shape: tuple[int, int]) -> Array:
    """Observation planes [H, W, 2] float32 of a stone board from the mover's view.

    Args:
      board: [H*W] int8, +1 for player 0's stones, -1 for player 1's, 0 empty.
      current_player: [] int32 the player to move.
      shape: (H, W).

    Returns:
      Plane 0 holds the mover's stones, plane 1 the opponent's.
    """
    mover = (1 - 2 * current_player).astype(board.dtype)
    board = board.reshape(shape)
    return jnp.stack([board == mover, board == -mover], axis=-1).astype(jnp.float32)


def finish_placement(state: State, board: Array, won: Array, legal_action_mask: Array):
    """The next state of a stone-placing game after the mover's stone is on `board`.

    The turn passes; the game ends when the mover `won` (+1 to the mover, -1 to the
    opponent) or no legal move is left (a draw).

    Args:
      state: the state before the move (a subclass with a `board` field).
      board: [H*W] the board after the move.
      won: [] bool, whether the move completed a winning line.
      legal_action_mask: [A] bool, legal moves on the new board.
    """
    player = state.current_player
    win_rewards = jnp.float32([1.0, -1.0]) * (1 - 2 * player)
    return state.replace(
        current_player=1 - player,
        legal_action_mask=legal_action_mask,
        terminated=won | ~jnp.any(legal_action_mask),
        rewards=jnp.where(won, win_rewards, 0.0),
        board=board,
    )


def dihedral_perms(height: int, width: int) -> np.ndarray:
    """Board-point permutations of the symmetry group of an H x W board.

    Returns [8, H*W] for a square board (rotations and reflections) and [4, H*W] for a
    rectangular one (identity, left-right mirror, up-down mirror, half turn). Row 0 is the
    identity; `new[i] = old[perm[i]]` for row-major point indices.
    """
    index = np.arange(height * width).reshape(height, width)
    transforms = [index, index[:, ::-1], index[::-1, :], index[::-1, ::-1]]
    if height == width:
        transforms += [index.T, index.T[:, ::-1], index.T[::-1, :], index.T[::-1, ::-1]]
    return np.stack([t.reshape(-1) for t in transforms]).astype(np.int32)


def lines(height: int, width: int, k: int) -> np.ndarray:
    """All k-in-a-row windows (horizontal, vertical, both diagonals) as point indices [L, k]."""
    windows = []
    for row in range(height):
        for col in range(width):
            for d_row, d_col in ((0, 1), (1, 0), (1, 1), (1, -1)):
                end_row, end_col = row + (k - 1) * d_row, col + (k - 1) * d_col
                if 0 <= end_row < height and 0 <= end_col < width:
                    windows.append([(row + i * d_row) * width + col + i * d_col for i in range(k)])
    return np.asarray(windows, dtype=np.int32)


def random_legal_action(key: PRNGKey, legal_action_mask: Array) -> Array:
    """A uniformly random legal action per row of `legal_action_mask`.

    One uniform number per game picks the k-th legal action: far cheaper than a categorical
    draw over all A logits when A is large (Xiangqi's 2086).

    Args:
      key: randomness of the draw.
      legal_action_mask: [..., A] bool, True = legal (one game [A], or a batch [B, A]).

    Returns:
      [...] int32 the actions; 0 where no action is legal.
    """
    count = jnp.sum(legal_action_mask, axis=-1)  # [...]
    k = jnp.floor(jax.random.uniform(key, count.shape) * count).astype(jnp.int32)
    chosen = jnp.cumsum(legal_action_mask, axis=-1) > k[..., None]  # [..., A] bool
    return jnp.argmax(chosen, axis=-1).astype(jnp.int32)
