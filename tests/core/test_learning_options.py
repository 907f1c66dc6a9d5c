"""The learning-speed options of self-play and the learner on small games: playout cap
randomization stores only the full searches' positions, resignation ends games as losses for
the resigner, measures false positives and adapts v_resign, the KL-adaptive learning rate
follows AlphaZero_Gomoku's rule, value targets mix the root value in, and tree reuse plays
matches."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import games
from azjax.config import base_config, from_dict, to_json
from azjax.core import replay, selfplay
from azjax.core import resignation as resignation_lib
from azjax.core.search import SearchParams, make_search, rollout_evaluator
from azjax.core.steps import adapt_learning_rate
from azjax.matches import arena
from azjax.types import SearchOutput

# The options of self-play, search and the learner are checked in the slow set (CI runs
# it): the quick tier (`pytest tests/games tests/core`) keeps the rules and the pipeline.
pytestmark = pytest.mark.slow

TTT = games.make("tic_tac_toe")
BATCH, STEPS = 8, 12


def _buffer(game, capacity):
    stored = game.encode_observation(game.observe(game.init(jax.random.PRNGKey(0))))
    return replay.init(capacity, stored.shape, game.num_actions, stored.dtype)


@functools.cache
def _capped_run():
    search = make_search(TTT, rollout_evaluator(TTT), num_simulations=16)
    rules = selfplay.SelfPlayRules(playout_cap=selfplay.PlayoutCap(0.5, search.with_simulations(2)))
    run = jax.jit(
        functools.partial(
            selfplay.run, TTT, search, num_steps=STEPS, temperature_moves=2, rules=rules
        )
    )
    state = selfplay.init(TTT, jax.random.PRNGKey(0), batch_size=BATCH, rules=rules)
    return run(None, state, _buffer(TTT, 4096), jax.random.PRNGKey(1))


def test_playout_cap_stores_only_full_searches():
    state, buffer, output = _capped_run()
    full = int(output.num_full_plies)
    assert 0 < full < STEPS  # both kinds of plies were played
    # Only the full plies wrote positions: B per full ply, in order in the ring.
    assert int(output.num_stored) == BATCH * full
    assert int(buffer.next_index) == BATCH * full
    assert int(np.sum(np.asarray(buffer.player) >= 0)) == BATCH * full
    # Each stored position is labelled once its game ends, or waits in its running game.
    labelled = int(np.sum(~np.isnan(np.asarray(buffer.value))))
    assert labelled == int(output.num_labelled)
    assert labelled + int(jnp.sum(state.num_pending)) == BATCH * full
    # Full searches (16 simulations) wrote policies over 16 visits, never a 2-visit one.
    policy = np.asarray(buffer.policy[: BATCH * full], np.float32)
    visits = policy * 16
    np.testing.assert_allclose(visits, np.round(visits), atol=0.05)
    assert np.all(policy.max(axis=1) < 0.99)  # 2 visits on one move would show 1.0 / 0.5


def test_resigned_game_is_a_loss_for_the_resigner():
    states = jax.vmap(TTT.init)(jax.random.split(jax.random.PRNGKey(0), 3))
    action = jnp.array([0, 0, 0], jnp.int32)
    next_games = jax.vmap(TTT.step)(states, action)
    output = SearchOutput(
        action=action,
        action_weights=jax.nn.one_hot(action, TTT.num_actions),
        value=jnp.array([-0.95, -0.95, 0.3]),
        action_value=jnp.array([-0.95, -0.8, 0.3]),
    )
    rule = selfplay.ResignRule(initial=-0.9)
    resignation = selfplay.Resignation(
        allowed=jnp.array([True, False, True]),
        would_resign=jnp.full((3, len(selfplay.RESIGN_THRESHOLDS)), -1, jnp.int8),
        threshold=jnp.float32(-0.9),
        checked=jnp.float32(0),
        false_positives=jnp.zeros(len(selfplay.RESIGN_THRESHOLDS)),
    )
    resignation, resigned, after = resignation_lib.resign(
        resignation, states, next_games, output, rule
    )
    # Slot 0 may resign and both values are below -0.9: X (player 0) resigns.
    np.testing.assert_array_equal(resigned, [True, False, False])
    assert bool(after.terminated[0]) and not bool(after.terminated[1])
    np.testing.assert_array_equal(after.rewards[0], [-1.0, 1.0])
    assert int(after.step_count[0]) == 1 and not bool(jnp.any(after.legal_action_mask[0]))
    # Slot 1 may not resign: its value max(-0.95, -0.8) = -0.8 is below the thresholds
    # above -0.8, where X is noted as the would-be resigner; slot 2 is noted nowhere.
    thresholds = np.asarray(selfplay.RESIGN_THRESHOLDS)
    expected = np.where(thresholds > -0.8, 0, -1)
    np.testing.assert_array_equal(resignation.would_resign[1], expected)
    assert np.all(np.asarray(resignation.would_resign[2]) == -1)


def test_false_positives_are_counted_when_the_checked_game_ends():
    # A checked game whose would-be resigner X goes on to win: a false positive at every
    # threshold where X was noted.
    thresholds = np.asarray(selfplay.RESIGN_THRESHOLDS)
    noted = jnp.asarray(np.where(thresholds > -0.8, 0, -1)[None], jnp.int8)
    resignation = selfplay.Resignation(
        allowed=jnp.array([False]),
        would_resign=noted,
        threshold=jnp.float32(-0.9),
        checked=jnp.float32(0),
        false_positives=jnp.zeros(len(thresholds)),
    )
    state = TTT.init(jax.random.PRNGKey(0))
    for action in (0, 3, 1, 4):  # X to play 2 and win on the top row
        state = TTT.step(state, jnp.int32(action))
    states = jax.tree.map(lambda x: x[None], state)
    win = jax.vmap(TTT.step)(states, jnp.array([2], jnp.int32))
    assert bool(win.terminated[0]) and float(win.rewards[0, 0]) == 1.0
    output = SearchOutput(
        action=jnp.array([2]),
        action_weights=jax.nn.one_hot(jnp.array([2]), 9),
        value=jnp.array([0.9]),
        action_value=jnp.array([1.0]),
    )
    resignation, _, _ = resignation_lib.resign(
        resignation, states, win, output, selfplay.ResignRule()
    )
    assert float(resignation.checked) == 1.0
    np.testing.assert_array_equal(resignation.false_positives, (thresholds > -0.8).astype(float))
    rates = selfplay.false_positive_rates(resignation)
    np.testing.assert_array_equal(rates, (thresholds > -0.8).astype(float))


def test_threshold_adapts_to_the_false_positive_target():
    thresholds = np.asarray(selfplay.RESIGN_THRESHOLDS)
    # 100 checked games; false positives grow with the threshold: 1% at the lowest, +1%
    # per step, so the rate passes 5% after the 5th threshold (index 4: 5%).
    false_positives = jnp.asarray(1.0 + np.arange(len(thresholds)), jnp.float32)
    rule = selfplay.ResignRule(target=0.05, min_games=20, decay=0.5)
    state = selfplay.Resignation(
        allowed=jnp.array([True]),
        would_resign=jnp.full((1, len(thresholds)), -1, jnp.int8),
        threshold=jnp.float32(-0.9),
        checked=jnp.float32(100),
        false_positives=false_positives,
    )
    adapted = selfplay.adapt_threshold(state, rule)
    assert float(adapted.threshold) == np.float32(thresholds[4])
    assert float(adapted.checked) == 50.0  # decayed
    # Too few checked games: v_resign stays; all false positives: resignation stops.
    few = selfplay.adapt_threshold(state.replace(checked=jnp.float32(10)), rule)
    assert float(few.threshold) == np.float32(-0.9)
    bad = selfplay.adapt_threshold(
        state.replace(false_positives=jnp.full(len(thresholds), 50.0)), rule
    )
    assert float(bad.threshold) == selfplay.NO_RESIGN


def test_selfplay_with_resignation_labels_resigned_games():
    search = make_search(TTT, rollout_evaluator(TTT), num_simulations=8)
    rule = selfplay.ResignRule(initial=0.99, no_resign_fraction=0.5, min_games=1)
    rules = selfplay.SelfPlayRules(resign=rule)
    run = jax.jit(
        functools.partial(
            selfplay.run, TTT, search, num_steps=STEPS, temperature_moves=2, rules=rules
        )
    )
    state = selfplay.init(TTT, jax.random.PRNGKey(0), batch_size=BATCH, rules=rules)
    state, buffer, output = run(None, state, _buffer(TTT, 4096), jax.random.PRNGKey(2))
    assert int(output.num_resigned) > 0
    # Resigned games end at once: at v_resign 0.99 every allowed game resigns on its first
    # move, and its one position is labelled -1 (a loss for the resigner).
    assert int(output.num_labelled) == int(output.total_game_length)
    assert float(state.resignation.checked) > 0  # checked games ended and were measured
    assert float(state.resignation.threshold) in [
        *map(np.float32, selfplay.RESIGN_THRESHOLDS),
        -1.0,
    ]


def test_kl_adaptive_learning_rate_rule():
    target = 0.02
    assert np.isclose(adapt_learning_rate(jnp.float32(1.0), jnp.float32(0.05), target), 1 / 1.5)
    assert np.isclose(adapt_learning_rate(jnp.float32(1.0), jnp.float32(0.005), target), 1.5)
    assert adapt_learning_rate(jnp.float32(1.0), jnp.float32(0.02), target) == 1.0
    assert adapt_learning_rate(jnp.float32(0.09), jnp.float32(1.0), target) == np.float32(0.09)
    assert adapt_learning_rate(jnp.float32(10.5), jnp.float32(0.0), target) == np.float32(10.5)


def test_value_targets_mix_the_root_value():
    buffer = replay.init(4, (1, 1, 1), 2, root_value=True)
    entry = replay.Entry(
        obs=jnp.zeros((2, 1, 1, 1)),
        policy=jnp.full((2, 2), 0.5),
        player=jnp.array([0, 1]),
        ended=jnp.array([True, True]),
        result=jnp.array([[1.0, -1.0], [1.0, -1.0]]),
        lengths=jnp.array([1, 1]),
        root_value=jnp.array([0.2, 0.6]),
    )
    buffer, _ = replay.write(buffer, entry, max_length=9)
    batch = replay.sample(buffer, jax.random.PRNGKey(0), 64, value_mix=0.25)
    # Position 0: z = +1, v = 0.2 -> 0.8; position 1: z = -1, v = 0.6 -> -0.6.
    np.testing.assert_allclose(np.unique(np.round(np.asarray(batch.value), 5)), [-0.6, 0.8])


def test_old_configs_keep_the_old_behaviour():
    data = __import__("json").loads(to_json(base_config()))
    for group, key in (
        ("search", "tree_reuse"),
        ("selfplay", "resign"),
        ("selfplay", "full_search_fraction"),
        ("learner", "kl_target"),
        ("learner", "value_target_mix"),
    ):
        del data[group][key]
    config = from_dict(data, source="test")
    assert config.search.tree_reuse is False and config.selfplay.resign is False
    assert config.selfplay.full_search_fraction == 1.0
    assert config.learner.kl_target == 0.0 and config.learner.value_target_mix == 0.0


def test_reusing_players_play_a_match():
    reuse = make_search(
        TTT,
        rollout_evaluator(TTT),
        num_simulations=16,
        tree_reuse=True,
        params=SearchParams(dirichlet_fraction=0.0),
    )
    player = arena.search_player(reuse)
    assert isinstance(player, arena.ReusingPlayer)
    match = jax.jit(arena.make_match(TTT, player, arena.random_player(TTT), num_games=4))
    result = match(None, None, jax.random.PRNGKey(0))
    assert np.all(np.asarray(result.lengths) >= 5)
    assert np.all(np.asarray(result.outcomes) >= 0)  # 16-simulation MCTS never loses to random here
