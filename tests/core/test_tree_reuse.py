"""PUCT's one path (`search.Search.puct`, with and without tree reuse): from an empty tree it
searches exactly like mctx's `muzero_policy` (on positions where mctx's rule selects no
illegal move below the root: tests/core/test_search.py), and the subtree under a move carries
its statistics over exactly."""

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from azjax import games
from azjax.core.search import SearchParams, make_search, mask_logits, rollout_evaluator
from azjax.core.search_tree import NODE_ARRAYS

SIMULATIONS = 24
NOISY = SearchParams(dirichlet_alpha=0.5, dirichlet_fraction=0.25)


@functools.cache
def _setup(game_name: str = "connect_four"):
    game = games.make(game_name)
    evaluate = rollout_evaluator(game)
    plain = make_search(game, evaluate, num_simulations=SIMULATIONS, return_tree=True)
    reuse = make_search(game, evaluate, num_simulations=SIMULATIONS, tree_reuse=True)
    states = jax.vmap(game.init)(jax.random.split(jax.random.PRNGKey(1), 4))
    # Different positions in the batch: a few random moves into each game.
    for ply in range(3):
        actions = jax.vmap(
            lambda s, k: jax.random.categorical(k, jnp.where(s.legal_action_mask, 0.0, -jnp.inf))
        )(states, jax.random.split(jax.random.PRNGKey(ply), 4))
        states = jax.vmap(game.step)(states, actions.astype(jnp.int32))
    return game, jax.jit(plain), reuse, jax.jit(reuse), states


_JITTED = {}


def jitted(search, method: str):
    """`search.method` jitted once per search (eager, `subtree` runs op by op: seconds)."""
    key = (id(search), method)  # the searches of `_setup` live as long as its cache
    if key not in _JITTED:
        _JITTED[key] = jax.jit(getattr(search, method))
    return _JITTED[key]


def _tree_arrays(tree):
    return {name: np.asarray(getattr(tree, name)) for name in NODE_ARRAYS}


def _muzero_policy(search, states, key, params):
    """mctx's own PUCT search from the root `Search.__call__` makes."""
    root_key, search_key = jax.random.split(key)
    logits, value = search.evaluate(None, states, root_key)
    root = mctx.RootFnOutput(
        prior_logits=mask_logits(logits, states.legal_action_mask),
        value=jnp.where(states.terminated, 0.0, value),
        embedding=states,
    )
    return mctx.muzero_policy(
        None,
        search_key,
        root,
        search.recurrent_fn,
        search.num_simulations,
        invalid_actions=~states.legal_action_mask,
        dirichlet_alpha=params.dirichlet_alpha,
        dirichlet_fraction=params.dirichlet_fraction,
        pb_c_init=params.pb_c_init,
        pb_c_base=params.pb_c_base,
        qtransform=search.qtransform,
    )


def test_every_puct_search_is_mctx_muzero_policy_from_an_empty_tree():
    """With and without tree reuse: the same move, policy target, value and tree as mctx."""
    game, plain, reuse, reuse_jit, states = _setup()
    key = jax.random.PRNGKey(7)
    mctx_search = make_search(game, rollout_evaluator(game), num_simulations=SIMULATIONS)
    expected = jax.jit(_muzero_policy, static_argnums=0)(mctx_search, states, key, NOISY)
    summary = expected.search_tree.summary()
    policy = np.where(np.asarray(states.legal_action_mask), np.asarray(summary.visit_probs), 0)
    nodes = SIMULATIONS + 1
    for got in (plain(None, states, key, NOISY), reuse_jit(None, states, key, NOISY)):
        np.testing.assert_array_equal(got.action, np.argmax(policy, axis=-1))
        np.testing.assert_array_equal(got.action_weights, policy)
        np.testing.assert_array_equal(got.value, summary.value)
        for name, want in _tree_arrays(expected.search_tree).items():
            have = np.asarray(getattr(got.tree, name))
            np.testing.assert_array_equal(have[:, :nodes], want, err_msg=name)
        assert not np.any(np.asarray(got.tree.node_visits)[:, nodes:])  # nothing beyond
    assert reuse_jit(None, states, key, NOISY).tree.node_visits.shape[1] == 2 * SIMULATIONS + 1


def _walk(tree, row, node):
    """The subtree at `node` of batch row `row` as nested (statistics, children) tuples."""
    arrays = _tree_arrays(tree)
    stats = tuple(
        float(arrays[name][row, node]) for name in ("node_visits", "raw_values", "node_values")
    )
    edges = tuple(
        np.asarray(arrays[name][row, node]).tolist()
        for name in (
            "children_prior_logits",
            "children_values",
            "children_visits",
            "children_rewards",
            "children_discounts",
        )
    )
    children = tuple(
        (action, _walk(tree, row, int(child)))
        for action, child in enumerate(arrays["children_index"][row, node])
        if child >= 0
    )
    return stats, edges, children


def test_advance_carries_the_subtree_exactly():
    game, _, reuse, reuse_jit, states = _setup()
    output = reuse_jit(None, states, jax.random.PRNGKey(3), NOISY, reuse.empty_tree(states))
    carried = jitted(reuse, "advance")(output.tree, output.action)
    for row in range(states.terminated.shape[0]):
        child = int(output.tree.children_index[row, 0, output.action[row]])
        assert child > 0
        assert _walk(carried, row, 0) == _walk(output.tree, row, child)
        visits = int(output.tree.node_visits[row, child])
        assert int(jnp.sum(carried.node_visits[row] > 0)) == visits  # one node per visit
        assert int(carried.parents[row, 0]) == mctx.Tree.NO_PARENT
        # The root's game state is the position after the move.
        after = jax.tree.map(lambda x, row=row: x[row], jax.vmap(game.step)(states, output.action))
        root = jax.tree.map(lambda x, row=row: x[row, 0], carried.embeddings)
        for a, b in zip(jax.tree.leaves(after), jax.tree.leaves(root), strict=True):
            np.testing.assert_array_equal(a, b)


def test_next_search_adds_to_the_carried_visits():
    game, _, reuse, reuse_jit, states = _setup()
    output = reuse_jit(None, states, jax.random.PRNGKey(3), NOISY, reuse.empty_tree(states))
    carried = jitted(reuse, "advance")(output.tree, output.action)
    next_states = jax.vmap(game.step)(states, output.action)
    again = reuse_jit(None, next_states, jax.random.PRNGKey(4), NOISY, carried)
    carried_visits = np.asarray(carried.node_visits[:, 0])
    np.testing.assert_array_equal(again.tree.node_visits[:, 0], carried_visits + SIMULATIONS)
    np.testing.assert_array_equal(
        jnp.sum(again.tree.node_visits > 0, axis=1), carried_visits + SIMULATIONS
    )
    # Without noise the root's children keep their carried visits as a floor.
    assert np.all(
        np.asarray(again.tree.children_visits[:, 0]) >= np.asarray(carried.children_visits[:, 0])
    )


def test_unexpanded_move_gives_an_empty_tree():
    _, _, reuse, reuse_jit, states = _setup()
    output = reuse_jit(None, states, jax.random.PRNGKey(3), NOISY, reuse.empty_tree(states))
    empty = jitted(reuse, "advance")(
        output.tree.replace(children_index=output.tree.children_index.at[:, 0, :].set(-1)),
        output.action,
    )
    assert not np.any(np.asarray(empty.node_visits))


def test_truncation_keeps_a_consistent_tree():
    game = games.make("connect_four")
    reuse = make_search(
        game, rollout_evaluator(game), num_simulations=40, tree_reuse=True, reuse_nodes=6
    )
    states = jax.vmap(game.init)(jax.random.split(jax.random.PRNGKey(0), 2))
    output = jax.jit(reuse)(
        None,
        states,
        jax.random.PRNGKey(0),
        SearchParams(dirichlet_fraction=0.0),
        reuse.empty_tree(states),
    )
    carried = jitted(reuse, "advance")(output.tree, output.action)
    for row in range(2):
        child = int(output.tree.children_index[row, 0, output.action[row]])
        size = int(output.tree.node_visits[row, child])
        kept = int(jnp.sum(carried.node_visits[row] > 0))
        assert kept == min(size, 6)
        parents = np.asarray(carried.parents[row, :kept])
        assert parents[0] == -1 and np.all(parents[1:] < np.arange(1, kept))
        children = np.asarray(carried.children_index[row])
        for node in range(kept):
            for action, c in enumerate(children[node]):
                if c >= 0:
                    assert c < kept and parents[c] == node
                    assert int(carried.action_from_parent[row, c]) == action


def test_reroot_finds_a_grandchild():
    game, _, reuse, reuse_jit, states = _setup()
    output = reuse_jit(None, states, jax.random.PRNGKey(3), NOISY, reuse.empty_tree(states))
    first = output.action
    child_tree = jitted(reuse, "advance")(output.tree, first)
    second = jnp.argmax(child_tree.children_visits[:, 0], axis=-1).astype(jnp.int32)
    by_moves = jitted(reuse, "advance")(child_tree, second)
    position = jax.vmap(game.step)(jax.vmap(game.step)(states, first), second)
    by_state = jitted(reuse, "reroot")(output.tree, position)
    for name, want in _tree_arrays(by_moves).items():
        np.testing.assert_array_equal(np.asarray(getattr(by_state, name)), want, err_msg=name)
    assert np.all(np.asarray(by_state.node_visits[:, 0]) > 0)
    # The root's own position finds the tree back, cut to the nodes a search carries.
    same = jitted(reuse, "reroot")(output.tree, states)
    np.testing.assert_array_equal(
        same.node_visits[:, :SIMULATIONS], output.tree.node_visits[:, :SIMULATIONS]
    )
    assert not np.any(np.asarray(same.node_visits[:, SIMULATIONS:]))


def test_reroot_carries_a_tree_to_a_search_of_another_budget():
    """The protocols search with budgets of their `go`: a tree of one budget reroots into
    the shape of another, the same subtree as far as the smaller tree holds it."""
    game, _, reuse, reuse_jit, states = _setup()
    output = reuse_jit(None, states, jax.random.PRNGKey(3), NOISY, reuse.empty_tree(states))
    child_tree = jitted(reuse, "advance")(output.tree, output.action)
    position = jax.vmap(game.step)(states, output.action)
    for simulations in (8, 40):  # smaller and larger than SIMULATIONS
        other = make_search(
            game, rollout_evaluator(game), num_simulations=simulations, tree_reuse=True
        )
        moved = jax.jit(other.reroot)(output.tree, position)
        assert moved.node_visits.shape[1] == other.num_nodes == 2 * simulations + 1
        kept = min(simulations, SIMULATIONS)  # reuse_nodes = the budget
        for name, want in _tree_arrays(child_tree).items():
            if name == "children_index":  # edges to dropped nodes keep no child
                want = np.where(want < kept, want, -1)
            have = np.asarray(getattr(moved, name))
            np.testing.assert_array_equal(have[:, :kept], want[:, :kept], err_msg=name)
        assert not np.any(np.asarray(moved.node_visits)[:, kept:])
        np.testing.assert_array_equal(moved.node_visits[:, 0], child_tree.node_visits[:, 0])
        # and the next search grows from it
        grown = jax.jit(other)(None, position, jax.random.PRNGKey(4), NOISY, moved)
        np.testing.assert_array_equal(
            grown.tree.node_visits[:, 0], moved.node_visits[:, 0] + simulations
        )


def test_gumbel_refuses_reuse():
    game = games.make("tic_tac_toe")
    with pytest.raises(ValueError, match="PUCT"):
        make_search(
            game, rollout_evaluator(game), num_simulations=8, algorithm="gumbel", tree_reuse=True
        )


def test_tree_memory_reroots_at_the_position_after_the_reply():
    from azjax.matches.agent import TreeMemory

    game, _, reuse, _, states = _setup()
    memory = TreeMemory(reuse.with_params(SearchParams(dirichlet_fraction=0.0)))
    first = memory(None, states, jax.random.PRNGKey(0))
    np.testing.assert_array_equal(first.tree.node_visits[:, 0], SIMULATIONS + 1)
    advanced = jitted(reuse, "advance")(first.tree, first.action)
    reply = jnp.argmax(advanced.children_visits[:, 0], axis=-1)
    position = jax.vmap(game.step)(jax.vmap(game.step)(states, first.action), reply)
    carried = jitted(reuse, "reroot")(first.tree, position).node_visits[:, 0]
    assert np.all(np.asarray(carried) > 0)
    second = memory(None, position, jax.random.PRNGKey(1))
    np.testing.assert_array_equal(second.tree.node_visits[:, 0], carried + SIMULATIONS)
    # A position the tree does not hold (a new game) starts afresh.
    fresh = jax.vmap(game.init)(jax.random.split(jax.random.PRNGKey(9), 4))
    third = memory(None, fresh, jax.random.PRNGKey(2))
    np.testing.assert_array_equal(third.tree.node_visits[:, 0], SIMULATIONS + 1)
