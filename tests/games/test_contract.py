"""The game protocol's contract, checked for every registered game by random play.

Each game plays `num_games(game)` random games (uniform over legal actions) as one jitted scan of
vmapped steps; the tests then check the episode rules of `azjax.games.base` on the recorded
trajectory, that jit and vmap agree with eager calls, that stepping never retraces, and
that the declared symmetries are symmetries of the game.
"""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import jit_for, marked

import azjax.games

NUM_GAMES = 256
OBSERVATION_BUDGET = 256 * 2**20  # bytes of recorded observations; fewer games for big ones
MIN_GAMES = 16
NUM_EAGER_GAMES = 2
EAGER_PLIES = 300  # eager steps are slow (ms each): at most this many over the eager games
NUM_SYMMETRY_GAMES = 16
SYMMETRY_PLIES = 16 * 400  # replayed plies per symmetry: fewer games for the longest ones


def num_games(game) -> int:
    """NUM_GAMES, or fewer where their observations would exceed OBSERVATION_BUDGET (Go 19x19
    records 724 plies of 19x19x17 planes per game), but at least MIN_GAMES."""
    per_game = (game.max_episode_length + 3) * int(np.prod(game.observation_shape)) * 4
    return int(min(NUM_GAMES, max(MIN_GAMES, OBSERVATION_BUDGET // per_game)))


def num_symmetry_games(game) -> int:
    """NUM_SYMMETRY_GAMES, or fewer (at least 4) where they would replay more than
    SYMMETRY_PLIES plies per symmetry (Go 19x19's games run to 722 plies: 8 games)."""
    return max(4, min(NUM_SYMMETRY_GAMES, SYMMETRY_PLIES // game.max_episode_length))


def random_legal_action(key: jax.Array, legal_action_mask: jax.Array) -> jax.Array:
    """A uniform legal action; action 0 when none is legal (stepping is then a no-op)."""
    logits = jnp.where(legal_action_mask, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits).astype(jnp.int32)


# Presets whose code paths the other presets of their game already cover (time budget).
COVERED = {"go_13x13": "go_9x9 and go_19x19 run the same code"}


def distinct_game_names() -> list[str]:
    """Registered names, keeping one name per distinct game (presets may alias `make` calls),
    without the presets in COVERED."""
    seen, distinct = set(), []
    for name in azjax.games.names():
        if name in COVERED:
            continue
        described = repr(vars(azjax.games.make(name)))
        if described not in seen:
            seen.add(described)
            distinct.append(name)
    return distinct


# Presets checked only under `pytest -m deep` (CI time budget): Go 19x19 runs go_9x9's code,
# and its random games are compared with pgx's in CI (test_go.py).
DEEP = ("go_19x19",)
# Presets checked in the slow set (CI runs it): their long programs take most of the
# contract's time to compile (docs/testing.md).
SLOW = ("go_9x9", "xiangqi")


@pytest.fixture(
    scope="module",
    params=marked(distinct_game_names(), slow=SLOW, deep=DEEP),
)
def game(request):
    return azjax.games.make(request.param)


@pytest.fixture(scope="module")
def rollout(game):
    """`num_games(game)` random games, two plies past `max_episode_length`.

    Returns a dict: `init_keys` [B], `states` [T+1, B] (a State with the start position at
    index 0), `actions` [T, B] int32 and `observations` [T+1, B, H, W, C], as numpy.
    """
    num_plies = game.max_episode_length + 2
    init_key, play_key = jax.random.split(jax.random.key(0))
    batch = num_games(game)
    init_keys = jax.random.split(init_key, batch)

    def play(init_keys, play_key):
        states = jax.vmap(game.init)(init_keys)

        def ply(states, key):
            action_keys = jax.random.split(key, batch)
            actions = jax.vmap(random_legal_action)(action_keys, states.legal_action_mask)
            next_states = jax.vmap(game.step)(states, actions)
            return next_states, (next_states, actions)

        _, (trajectory, actions) = jax.lax.scan(ply, states, jax.random.split(play_key, num_plies))
        trajectory = jax.tree.map(lambda x, xs: jnp.concatenate([x[None], xs]), states, trajectory)
        observations = jax.vmap(jax.vmap(game.observe))(trajectory)
        return trajectory, actions, observations

    trajectory, actions, observations = jax.device_get(jit_for(game)(play)(init_keys, play_key))
    return {
        "init_keys": init_keys,
        "states": trajectory,
        "actions": actions,
        "observations": observations,
    }


def test_init(game):
    state = game.init(jax.random.key(1))
    assert int(state.current_player) == 0
    assert not bool(state.terminated)
    np.testing.assert_array_equal(state.rewards, np.zeros(2, np.float32))
    assert state.rewards.dtype == jnp.float32
    assert int(state.step_count) == 0
    assert state.legal_action_mask.shape == (game.num_actions,)
    assert state.legal_action_mask.dtype == jnp.bool_
    assert bool(state.legal_action_mask.any())


def test_step_preserves_state_types(game):
    state = game.init(jax.random.key(1))
    action = jnp.argmax(state.legal_action_mask).astype(jnp.int32)
    next_state = jax.jit(game.step)(state, action)
    assert jax.tree.structure(next_state) == jax.tree.structure(state)
    assert [jax.typeof(x) for x in jax.tree.leaves(next_state)] == [
        jax.typeof(x) for x in jax.tree.leaves(state)
    ]


def test_stepping_a_terminated_state_is_a_noop(rollout):
    states = rollout["states"]
    was_terminated = states.terminated[:-1]  # [T, B]
    assert was_terminated.any()
    for name in (field.name for field in dataclasses.fields(states)):
        field = getattr(states, name)
        before, after = field[:-1][was_terminated], field[1:][was_terminated]
        if name == "rewards":
            np.testing.assert_array_equal(after, 0.0)
        else:
            np.testing.assert_array_equal(after, before, err_msg=name)


def test_legal_action_mask(rollout):
    states = rollout["states"]
    terminated, mask = states.terminated, states.legal_action_mask  # [T+1, B], [T+1, B, A]
    assert not mask[terminated].any()
    assert mask[~terminated].any(axis=-1).all()
    played = np.take_along_axis(mask[:-1], rollout["actions"][..., None], axis=-1)[..., 0]
    assert played[~terminated[:-1]].all()


def test_rewards(rollout):
    states = rollout["states"]
    rewards = states.rewards  # [T+1, B, 2]
    np.testing.assert_array_equal(rewards.sum(axis=-1), 0.0)
    ends_here = ~states.terminated[:-1] & states.terminated[1:]  # [T, B]
    assert not rewards[0].any()
    assert not rewards[1:][~ends_here].any()
    assert set(np.unique(rewards)) <= {-1.0, 0.0, 1.0}


def test_players_alternate_and_plies_count(rollout):
    states = rollout["states"]
    live = ~states.terminated[:-1]  # [T, B]
    np.testing.assert_array_equal(states.current_player[0], 0)
    np.testing.assert_array_equal(states.step_count[0], 0)
    np.testing.assert_array_equal(
        states.current_player[1:][live], 1 - states.current_player[:-1][live]
    )
    np.testing.assert_array_equal(states.step_count[1:][live], states.step_count[:-1][live] + 1)


def test_games_end_within_max_episode_length(game, rollout):
    states = rollout["states"]
    assert states.terminated[game.max_episode_length].all()
    assert states.step_count.max() <= game.max_episode_length


def test_observation_shape_and_dtype(game, rollout):
    observations = rollout["observations"]
    assert observations.shape[2:] == game.observation_shape
    assert observations.dtype == np.float32
    assert np.isfinite(observations).all()


def test_stored_observations_decode_to_the_observations_exactly(game, rollout):
    """Replay stores `encode_observation`'s compact form; decoding gives back every
    observation of the random games bit for bit, in at most 2 bytes per value."""
    observations = rollout["observations"]
    flat = observations.reshape(-1, *game.observation_shape)
    stored = jax.jit(jax.vmap(game.encode_observation))(flat)
    assert stored.dtype.itemsize <= 2 and jnp.issubdtype(stored.dtype, jnp.integer)
    np.testing.assert_array_equal(jax.jit(jax.vmap(game.decode_observation))(stored), flat)


def test_jit_and_vmap_match_eager(game, rollout):
    states, actions = rollout["states"], rollout["actions"]
    budget = EAGER_PLIES
    for index in range(NUM_EAGER_GAMES):
        state = game.init(rollout["init_keys"][index])
        for ply in range(min(actions.shape[0], budget)):
            budget -= 1
            expected = jax.tree.map(lambda x, ply=ply, index=index: x[ply, index], states)
            chex.assert_trees_all_equal(jax.device_get(state), expected)
            np.testing.assert_array_equal(game.observe(state), rollout["observations"][ply, index])
            if bool(state.terminated):
                break
            state = game.step(state, actions[ply, index])


def test_step_does_not_retrace(game):
    chex.clear_trace_counter()  # The trace counter keys on source code, shared by all games.
    step = jax.jit(chex.assert_max_traces(game.step, n=1))
    state = game.init(jax.random.key(1))
    key = jax.random.key(2)
    for _ in range(game.max_episode_length + 1):
        key, action_key = jax.random.split(key)
        state = step(state, random_legal_action(action_key, state.legal_action_mask))
    assert bool(state.terminated)


def test_symmetry_zero_is_identity_and_each_has_an_inverse(game):
    obs_key, policy_key = jax.random.split(jax.random.key(3))
    obs = jax.random.normal(obs_key, game.observation_shape)
    policy = jax.random.normal(policy_key, (game.num_actions,))
    apply = jax.jit(game.apply_symmetry)
    chex.assert_trees_all_equal(apply(obs, policy, 0), (obs, policy))
    for index in range(game.symmetries):
        transformed = apply(obs, policy, index)
        inverses = [
            other
            for other in range(game.symmetries)
            if all(jax.tree.map(np.array_equal, apply(*transformed, other), (obs, policy)))
        ]
        assert len(inverses) == 1, f"symmetry {index} has inverses {inverses}"


def test_symmetries_commute_with_play(game, rollout):
    """Playing the transformed actions gives the transformed observations and masks.

    Holds for each symmetry under which the start position is invariant; the others (if a
    game has any) are skipped.
    """
    num_plies = rollout["actions"].shape[0]
    count = num_symmetry_games(game)
    actions = jnp.asarray(rollout["actions"][:, :count])  # [T, B]
    observations = jnp.asarray(rollout["observations"][:, :count])  # [T+1, B, ...]
    masks = jnp.asarray(rollout["states"].legal_action_mask[:, :count])
    init_keys = rollout["init_keys"][:count]

    def transform(obs, policy, index):
        return game.apply_symmetry(obs, policy, index)

    def replay(index):
        no_obs = jnp.zeros(game.observation_shape)
        one_hot = jax.nn.one_hot(actions, game.num_actions)  # [T, B, A]
        apply = jax.vmap(jax.vmap(transform, (None, 0, None)), (None, 0, None))
        mapped_actions = jnp.argmax(apply(no_obs, one_hot, index)[1], axis=-1)
        states = jax.vmap(game.init)(init_keys)

        def ply(states, actions):
            next_states = jax.vmap(game.step)(states, actions)
            return next_states, next_states

        _, trajectory = jax.lax.scan(ply, states, mapped_actions)
        trajectory = jax.tree.map(lambda x, xs: jnp.concatenate([x[None], xs]), states, trajectory)
        got_obs = jax.vmap(jax.vmap(game.observe))(trajectory)
        want_obs, want_masks = jax.vmap(jax.vmap(transform, (0, 0, None)), (0, 0, None))(
            observations, masks, index
        )
        return got_obs, want_obs, trajectory.legal_action_mask, want_masks

    replay = jit_for(game)(replay)
    start = jax.vmap(game.observe)(jax.vmap(game.init)(init_keys))
    checked = 0
    for index in range(game.symmetries):
        if not np.array_equal(jax.vmap(transform, (0, 0, None))(start, masks[0], index)[0], start):
            continue
        # The index as an array: one compiled replay for every symmetry, not one each.
        got_obs, want_obs, got_masks, want_masks = replay(jnp.int32(index))
        assert got_obs.shape[0] == num_plies + 1
        np.testing.assert_array_equal(got_obs, want_obs, err_msg=f"symmetry {index}")
        np.testing.assert_array_equal(got_masks, want_masks, err_msg=f"symmetry {index}")
        checked += 1
    assert checked >= 1
