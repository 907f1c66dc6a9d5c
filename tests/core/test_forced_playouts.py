"""KataGo's forced playouts and policy target pruning (`azjax.core.forced_playouts`): every root
child gets its forced visits, and the pruned target equals a one-visit-at-a-time reference
of KataGo's rule written here from the paper, on real searches of Connect Four."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import small_network_search, tiny_config

from azjax import games
from azjax.config import build, validate
from azjax.core.networks import make_network
from azjax.core.search import SearchParams, make_search, network_evaluator, qtransform_parent_value
from azjax.types import UserError

# The options of self-play, search and the learner are checked in the slow set (CI runs
# it): the quick tier (`pytest tests/games tests/core`) keeps the rules and the pipeline.
pytestmark = pytest.mark.slow

K = 2.0
C4 = games.make("connect_four")
PARAMS = SearchParams(dirichlet_alpha=0.5, dirichlet_fraction=0.25)


def searched(forced: float, *, simulations: int = 64, seed: int = 0):
    search, variables = small_network_search(
        C4, num_simulations=simulations, params=PARAMS, return_tree=True, forced_playouts=forced
    )
    states = jax.vmap(C4.init)(jax.random.split(jax.random.PRNGKey(seed), 8))
    states = jax.vmap(C4.step)(states, jnp.array([0, 1, 2, 3, 3, 4, 5, 6]))  # 8 positions
    return search(variables, states, jax.random.PRNGKey(seed)), states


def reference_pruning(tree, row: int) -> np.ndarray:
    """KataGo's rule, one visit at a time: for each child but the most visited, remove
    visits while fewer than n_forced are removed and its PUCT score (with the visits left)
    stays below the best child's; a child left with one visit goes to zero."""
    visits = np.asarray(tree.children_visits[row, 0], np.float64)
    prior = np.asarray(jax.nn.softmax(tree.children_prior_logits[row, 0]), np.float64)
    one = jax.tree.map(lambda x: x[row], tree)
    value = np.asarray(qtransform_parent_value(one, 0), np.float64)
    node = float(tree.node_visits[row, 0])
    pb_c = PARAMS.pb_c_init + np.log((node + PARAMS.pb_c_base + 1.0) / PARAMS.pb_c_base)

    def score(child, n):
        return value[child] + np.sqrt(node) * pb_c * prior[child] / (n + 1.0)

    best = int(np.argmax(visits))
    forced = np.floor(np.sqrt(K * prior * visits.sum()))
    kept = visits.copy()
    for child in range(len(visits)):
        if child == best:
            continue
        removed = 0
        while removed < forced[child] and kept[child] > 0:
            if score(child, kept[child] - 1) >= score(best, visits[best]):
                break
            kept[child] -= 1
            removed += 1
        if kept[child] <= 1:
            kept[child] = 0
    return kept / kept.sum()


@pytest.mark.parametrize("seed", [0, 1])
def test_each_root_child_gets_its_forced_visits(seed):
    output, states = searched(K, seed=seed)
    visits = np.asarray(output.tree.children_visits[:, 0], np.float64)
    prior = np.asarray(jax.nn.softmax(output.tree.children_prior_logits[:, 0]))
    legal = np.asarray(states.legal_action_mask)
    needed = np.sqrt(K * prior * visits.sum(axis=1, keepdims=True))
    # Forcing is checked before each simulation, so a child trails its due by at most one.
    assert (visits[legal] >= needed[legal] - 1.0).all()
    plain, _ = searched(0.0, seed=seed)
    plain_visits = np.asarray(plain.tree.children_visits[:, 0], np.float64)
    least = lambda v: np.where(legal, v, np.inf).min(axis=1)  # noqa: E731
    assert (least(visits) >= least(plain_visits)).all()  # forcing spreads the visits


@pytest.mark.parametrize("seed", [0, 1])
def test_the_pruned_target_follows_katagos_rule(seed):
    output, states = searched(K, seed=seed)
    weights = np.asarray(output.action_weights, np.float64)
    legal = np.asarray(states.legal_action_mask)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-6)
    assert (weights[~legal] == 0).all()
    visits = np.asarray(output.tree.children_visits[:, 0])
    # The move played is still the most visited one.
    np.testing.assert_array_equal(output.action, visits.argmax(axis=1))
    pruned_any = False
    for row in range(weights.shape[0]):
        expected = reference_pruning(output.tree, row)
        np.testing.assert_allclose(weights[row], expected, rtol=1e-5, atol=1e-7)
        pruned_any |= bool((expected < visits[row] / visits[row].sum() - 1e-9).any())
    assert pruned_any  # the rule removed visits somewhere (not a no-op)


def test_off_changes_nothing():
    output, _ = searched(0.0)
    visits = np.asarray(output.tree.children_visits[:, 0], np.float64)
    np.testing.assert_allclose(
        output.action_weights, visits / visits.sum(axis=1, keepdims=True), rtol=1e-6
    )


def test_self_play_forces_and_agents_do_not():
    config = tiny_config("connect_four")
    config.search.forced_playouts = K
    validate(config)
    game = build.make_game(config)
    network = build.make_network_for(config, game)
    assert build.make_searcher(config, game, network, explore=True).forced_playouts == K
    assert build.make_searcher(config, game, network, explore=False).forced_playouts == 0.0


def test_gumbel_search_refuses_forced_playouts():
    config = tiny_config("connect_four")
    config.search.forced_playouts = K
    config.search.algorithm = "gumbel"
    with pytest.raises(UserError, match="forced_playouts' needs search.algorithm=puct"):
        validate(config)
    network = make_network(C4.observation_shape, C4.num_actions, channels=4, num_blocks=1)
    with pytest.raises(ValueError, match="forced playouts need PUCT"):
        make_search(
            C4, network_evaluator(C4, network), num_simulations=4, algorithm="gumbel",
            forced_playouts=K,
        )  # fmt: skip
