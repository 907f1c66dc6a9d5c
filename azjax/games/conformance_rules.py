"""The rules of the game contract, each a function of a game and its random games
(`conformance.Play`), in `CHECKS`; `azjax.games.check` (`conformance.check`) runs them all.
Each raises `ContractError` naming the rule and, where it can, the game and its moves."""

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import notation, render
from azjax.games.base import Game, State

EAGER_GAMES = 2
EAGER_PLIES = 300  # eager steps are slow (ms each): at most this many over the eager games
SYMMETRY_GAMES = 16
SYMMETRY_PLIES = 16 * 400  # replayed plies per symmetry: fewer games for the longest ones
NAMED_POSITIONS = 8  # positions whose every legal action's name is parsed back


class ContractError(AssertionError):
    """A game broke a rule of the contract: the rule and where (game, moves) in one line."""


@dataclasses.dataclass(frozen=True)
class Play:
    """Random games of a game: `init_keys` [B] (typed keys) and, as numpy, `states` [T+1, B]
    (the start position at index 0), `actions` [T, B] int32 and `observations`
    [T+1, B, H, W, C]."""

    init_keys: jax.Array
    states: State
    actions: np.ndarray
    observations: np.ndarray


def compiled(game: Game) -> Callable:
    """`jax.jit`, with XLA's optimisations at their highest for games of 400 plies and more
    (Go 19x19, Xiangqi), whose long programs take longer to run unoptimised than to compile
    optimised."""
    if game.max_episode_length >= 400:
        return lambda fun: jax.jit(fun, compiler_options={"xla_backend_optimization_level": 3})
    return jax.jit


def require(holds, rule: str) -> None:
    """Raises ContractError(rule) unless `holds` (all of it)."""
    if not bool(np.all(holds)):
        raise ContractError(rule)


def _first(bad: np.ndarray, play_: Play, rule: str) -> None:
    """Raises for the first (ply, game) where `bad` [T', B] holds, naming its moves."""
    if bad.any():
        ply, index = (int(i) for i in np.argwhere(bad)[0])
        moves = play_.actions[:ply, index].tolist()
        raise ContractError(f"{rule}: game {index} after the actions {moves}")


def check_init(game: Game, play_: Play) -> None:
    state = game.init(jax.random.key(1))
    require(int(state.current_player) == 0, "init: player 0 moves first")
    require(not bool(state.terminated), "init: the game has not ended")
    require(state.rewards.dtype == jnp.float32, "init: rewards are float32")
    require(np.asarray(state.rewards) == 0, "init: rewards are zero")
    require(int(state.step_count) == 0, "init: step_count is 0")
    require(state.legal_action_mask.shape == (game.num_actions,), "init: a mask of num_actions")
    require(state.legal_action_mask.dtype == jnp.bool_, "init: the mask is bool")
    require(bool(state.legal_action_mask.any()), "init: some action is legal")


def check_state_types(game: Game, play_: Play) -> None:
    state = game.init(jax.random.key(1))
    action = jnp.argmax(state.legal_action_mask).astype(jnp.int32)
    after = jax.jit(game.step)(state, action)
    require(jax.tree.structure(after) == jax.tree.structure(state), "step keeps the state's fields")
    types = [jax.typeof(x) for x in jax.tree.leaves(state)]
    require(
        [jax.typeof(x) for x in jax.tree.leaves(after)] == types,
        "step keeps each field's shape, dtype and weak type (else jit traces again)",
    )


def check_terminal_is_fixed(game: Game, play_: Play) -> None:
    states = play_.states
    ended = states.terminated[:-1]  # [T, B]
    require(ended.any(), "random games end")
    for field in dataclasses.fields(states):
        values = getattr(states, field.name)
        before, after = values[:-1], values[1:]
        if field.name == "rewards":
            bad = ended & (after != 0).reshape(*ended.shape, -1).any(axis=-1)
        else:
            bad = ended & (after != before).reshape(*ended.shape, -1).any(axis=-1)
        _first(bad, play_, f"a step after the end changes nothing ({field.name})")


def check_legal_masks(game: Game, play_: Play) -> None:
    states = play_.states
    ended, mask = states.terminated, states.legal_action_mask  # [T+1, B], [T+1, B, A]
    _first(ended & mask.any(axis=-1), play_, "no action is legal once the game has ended")
    _first(~ended & ~mask.any(axis=-1), play_, "some action is legal while the game runs")
    played = np.take_along_axis(mask[:-1], play_.actions[..., None], axis=-1)[..., 0]
    _first(~ended[:-1] & ~played, play_, "random play chose a legal action")


def check_rewards(game: Game, play_: Play) -> None:
    states = play_.states
    rewards = states.rewards  # [T+1, B, 2]
    _first(rewards.sum(axis=-1) != 0, play_, "rewards sum to zero")
    ends_here = ~states.terminated[:-1] & states.terminated[1:]  # [T, B]
    require(not rewards[0].any(), "no reward at the start")
    _first(~ends_here & rewards[1:].any(axis=-1), play_, "rewards come on the final ply only")
    _first(~np.isin(rewards, (-1.0, 0.0, 1.0)).all(axis=-1), play_, "rewards are -1, 0 or 1")


def check_turns(game: Game, play_: Play) -> None:
    states = play_.states
    live = ~states.terminated[:-1]  # [T, B]
    require(states.current_player[0] == 0, "player 0 moves first")
    require(states.step_count[0] == 0, "step_count starts at 0")
    turned = states.current_player[1:] == 1 - states.current_player[:-1]
    _first(live & ~turned, play_, "players alternate")
    counted = states.step_count[1:] == states.step_count[:-1] + 1
    _first(live & ~counted, play_, "step_count counts the plies")


def check_episode_length(game: Game, play_: Play) -> None:
    states = play_.states
    _first(
        ~states.terminated[game.max_episode_length][None],
        play_,
        f"every game ends within max_episode_length ({game.max_episode_length})",
    )
    require(states.step_count.max() <= game.max_episode_length, "step_count stays within it")


def check_observations(game: Game, play_: Play) -> None:
    observations = play_.observations
    require(
        observations.shape[2:] == game.observation_shape,
        f"observations are {game.observation_shape}, not {observations.shape[2:]}",
    )
    require(observations.dtype == np.float32, "observations are float32")
    require(np.isfinite(observations), "observations are finite")


def check_stored_observations(game: Game, play_: Play) -> None:
    flat = play_.observations.reshape(-1, *game.observation_shape)
    stored = jax.jit(jax.vmap(game.encode_observation))(flat)
    require(
        stored.dtype.itemsize <= 2 and jnp.issubdtype(stored.dtype, jnp.integer),
        "encode_observation stores integers of at most 2 bytes",
    )
    decoded = np.asarray(jax.jit(jax.vmap(game.decode_observation))(stored))
    require(np.array_equal(decoded, flat), "decode_observation gives back every observation")


def check_eager_matches_compiled(game: Game, play_: Play) -> None:
    budget = EAGER_PLIES
    for index in range(min(EAGER_GAMES, len(play_.init_keys))):
        state = game.init(play_.init_keys[index])
        types = [jax.typeof(x) for x in jax.tree.leaves(state)]
        for ply in range(min(play_.actions.shape[0], budget)):
            budget -= 1
            expected = jax.tree.map(lambda x, p=ply, i=index: x[p, i], play_.states)
            same = jax.tree.map(np.array_equal, jax.device_get(state), expected)
            where = f": game {index} after the actions {play_.actions[:ply, index].tolist()}"
            require(all(jax.tree.leaves(same)), "eager steps give the compiled states" + where)
            observed = np.asarray(game.observe(state))
            require(
                np.array_equal(observed, play_.observations[ply, index]),
                "eager observe gives the compiled observations" + where,
            )
            require(
                [jax.typeof(x) for x in jax.tree.leaves(state)] == types,
                "every step keeps the state's types (else jit traces again)" + where,
            )
            if bool(state.terminated):
                break
            state = game.step(state, play_.actions[ply, index])


def check_symmetry_inverses(game: Game, play_: Play) -> None:
    obs_key, policy_key = jax.random.split(jax.random.key(3))
    obs = jax.random.normal(obs_key, game.observation_shape)
    policy = jax.random.normal(policy_key, (game.num_actions,))
    apply = jax.jit(game.apply_symmetry)

    def equal(a, b) -> bool:
        return all(jax.tree.leaves(jax.tree.map(np.array_equal, a, b)))

    require(equal(apply(obs, policy, 0), (obs, policy)), "symmetry 0 is the identity")
    for index in range(game.symmetries):
        transformed = apply(obs, policy, index)
        inverses = [
            k for k in range(game.symmetries) if equal(apply(*transformed, k), (obs, policy))
        ]
        require(len(inverses) == 1, f"symmetry {index} has one inverse, not {inverses}")


def check_symmetries_commute(game: Game, play_: Play) -> None:
    count = max(4, min(SYMMETRY_GAMES, SYMMETRY_PLIES // game.max_episode_length))
    count = min(count, len(play_.init_keys))
    actions = jnp.asarray(play_.actions[:, :count])  # [T, B]
    observations = jnp.asarray(play_.observations[:, :count])  # [T+1, B, ...]
    masks = jnp.asarray(play_.states.legal_action_mask[:, :count])
    init_keys = jnp.asarray(play_.init_keys[:count])
    each = jax.vmap(jax.vmap(game.apply_symmetry, (0, 0, None)), (0, 0, None))

    def replay(index):
        no_obs = jnp.zeros(game.observation_shape)
        one_hot = jax.nn.one_hot(actions, game.num_actions)  # [T, B, A]
        on_actions = jax.vmap(jax.vmap(game.apply_symmetry, (None, 0, None)), (None, 0, None))
        mapped = jnp.argmax(on_actions(no_obs, one_hot, index)[1], axis=-1)
        states = jax.vmap(game.init)(init_keys)

        def ply(states, actions):
            next_states = jax.vmap(game.step)(states, actions)
            return next_states, next_states

        _, trajectory = jax.lax.scan(ply, states, mapped)
        trajectory = jax.tree.map(lambda x, xs: jnp.concatenate([x[None], xs]), states, trajectory)
        got = jax.vmap(jax.vmap(game.observe))(trajectory)
        want_obs, want_masks = each(observations, masks, index)
        return got, want_obs, trajectory.legal_action_mask, want_masks

    replay = compiled(game)(replay)
    start = jax.vmap(game.observe)(jax.vmap(game.init)(init_keys))
    checked = 0
    for index in range(game.symmetries):
        moved = jax.vmap(game.apply_symmetry, (0, 0, None))(start, masks[0], index)[0]
        if not np.array_equal(moved, start):
            continue  # a symmetry that moves the start position
        # The index as an array: one compiled replay for every symmetry, not one each.
        got_obs, want_obs, got_masks, want_masks = replay(jnp.int32(index))
        require(
            np.array_equal(got_obs, want_obs), f"symmetry {index} commutes with play (observations)"
        )
        require(
            np.array_equal(got_masks, want_masks),
            f"symmetry {index} commutes with play (legal masks)",
        )
        checked += 1
    require(checked >= 1, "the identity keeps the start position")


def _positions(play_: Play, count: int) -> list[tuple[int, int]]:
    """(ply, game) of `count` unfinished positions spread over the first game's plies."""
    live = np.argwhere(~play_.states.terminated[:, 0])[:, 0]
    picks = np.unique(np.linspace(0, len(live) - 1, count).astype(int))
    return [(int(live[p]), 0) for p in picks]


def check_notation(game: Game, play_: Play) -> None:
    text = notation.of(game)
    for ply, index in _positions(play_, NAMED_POSITIONS):
        state = jax.tree.map(lambda x, p=ply, i=index: x[p, i], play_.states)
        text.render(state)  # the board as text draws
        for action in np.flatnonzero(state.legal_action_mask).tolist():
            name = text.action_to_string(action, state)
            require(
                text.parse_action(name, state) == action,
                f"the name {name!r} of action {action} parses back to it",
            )


def check_picture(game: Game, play_: Play) -> None:
    ended = int(np.argmax(play_.states.terminated[:, 0]))
    for ply in (0, ended):
        state = jax.tree.map(lambda x, p=ply: x[p, 0], play_.states)
        picture = str(render.svg(game, state))  # the game's module, or the fallback
        require(
            picture.lstrip().startswith("<svg") and picture.rstrip().endswith("</svg>"),
            f"the position at ply {ply} draws as SVG",
        )


CHECKS: dict[str, Callable[[Game, Play], None]] = {
    "init": check_init,
    "state_types": check_state_types,
    "terminal_is_fixed": check_terminal_is_fixed,
    "legal_masks": check_legal_masks,
    "rewards": check_rewards,
    "turns": check_turns,
    "episode_length": check_episode_length,
    "observations": check_observations,
    "stored_observations": check_stored_observations,
    "eager_matches_compiled": check_eager_matches_compiled,
    "symmetry_inverses": check_symmetry_inverses,
    "symmetries_commute": check_symmetries_commute,
    "notation": check_notation,
    "picture": check_picture,
}
