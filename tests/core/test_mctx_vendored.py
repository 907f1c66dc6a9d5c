"""`azjax.core.mctx_vendored` against the mctx 0.0.71 originals it copies (tests may import
`mctx._src`; the package may not): the same outputs, bit for bit, on trees grown by real
mctx searches and then searched further, as tree reuse does."""

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest
from mctx._src import action_selection as mctx_action_selection
from mctx._src import search as mctx_search
from mctx._src import tree as mctx_tree

from azjax.core import mctx_vendored
from azjax.core.search_tree import NODE_ARRAYS, empty_like

BATCH, ACTIONS, DIM = 3, 4, 5
SIMULATIONS, MORE = 10, 8  # the carried tree's search, then the continued one
WEIGHTS = jax.random.normal(jax.random.PRNGKey(0), (DIM, ACTIONS))
MOVES = jax.random.normal(jax.random.PRNGKey(1), (ACTIONS, DIM))
PARAMS = jnp.float32(1.5)


def recurrent_fn(params, key, action, embedding):
    """A toy model: its outputs depend on the embedding, the action and the key."""
    embedding = jnp.tanh(embedding + params * MOVES[action])
    output = mctx.RecurrentFnOutput(
        reward=jnp.cos(embedding.sum(-1)) + 0.1 * jax.random.normal(key, action.shape),
        discount=jnp.where(embedding[:, 0] > 0.8, 0.0, -1.0),
        prior_logits=embedding @ WEIGHTS,
        value=jnp.sin(embedding.sum(-1)),
    )
    return output, embedding


@functools.cache
def _carried():
    """A batch of trees from `mctx.muzero_policy` (one root action masked), with room for
    MORE nodes, as tree reuse carries them."""
    embedding = jax.random.normal(jax.random.PRNGKey(2), (BATCH, DIM))
    root = mctx.RootFnOutput(
        prior_logits=embedding @ WEIGHTS, value=jnp.sin(embedding.sum(-1)), embedding=embedding
    )
    invalid = jnp.zeros((BATCH, ACTIONS), bool).at[0, ACTIONS - 1].set(True)
    tree = jax.jit(
        lambda key: (
            mctx.muzero_policy(
                PARAMS, key, root, recurrent_fn, SIMULATIONS, invalid_actions=invalid
            ).search_tree
        )
    )(jax.random.PRNGKey(3))
    nodes = SIMULATIONS + 1
    room = empty_like(tree, nodes + MORE)
    arrays = {
        name: getattr(room, name).at[:, :nodes].set(getattr(tree, name)) for name in NODE_ARRAYS
    }
    return room.replace(**arrays, embeddings=room.embeddings.at[:, :nodes].set(tree.embeddings))


def _grow(simulate, expand, backward, wrapper, tree, key, max_depth):
    """MORE simulations from `tree` with the given steps (azjax's `Search._grow` loop);
    the tree and every simulation's (parent, action, node)."""
    select = mctx.muzero_action_selection
    action_selection = wrapper(
        root_action_selection_fn=functools.partial(select, depth=0),
        interior_action_selection_fn=select,
    )
    used = jnp.sum(tree.node_visits > 0, axis=1, dtype=jnp.int32)
    batch_range = jnp.arange(BATCH)

    def simulation(loop_state, index):
        key, tree = loop_state
        key, simulate_key, expand_key = jax.random.split(key, 3)
        parent, action = simulate(
            jax.random.split(simulate_key, BATCH), tree, action_selection, max_depth
        )
        node = tree.children_index[batch_range, parent, action]
        node = jnp.where(node == mctx.Tree.UNVISITED, used + index, node)
        tree = expand(PARAMS, expand_key, tree, recurrent_fn, parent, action, node)
        return (key, backward(tree, node)), (parent, action, node)

    (_, tree), steps = jax.lax.scan(simulation, (key, tree), jnp.arange(MORE))
    return tree, steps


STEPS = {
    "mctx": (
        mctx_search.simulate,
        mctx_search.expand,
        mctx_search.backward,
        mctx_action_selection.switching_action_selection_wrapper,
    ),
    "vendored": (
        mctx_vendored.simulate,
        mctx_vendored.expand,
        mctx_vendored.backward,
        mctx_vendored.switching_action_selection_wrapper,
    ),
}


def assert_same(got, want):
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for have, expected in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        assert have.dtype == expected.dtype
        np.testing.assert_array_equal(have, expected)


@pytest.mark.parametrize("max_depth", [SIMULATIONS + MORE, 2])  # 2: leaves expanded again
def test_search_steps_continue_a_tree_exactly_like_mctx(max_depth):
    tree = _carried()
    grow = jax.jit(_grow, static_argnums=(0, 1, 2, 3, 6))
    key = jax.random.PRNGKey(4)
    want = grow(*STEPS["mctx"], tree, key, max_depth)
    got = grow(*STEPS["vendored"], tree, key, max_depth)
    assert_same(got, want)
    assert int(jnp.sum(want[0].node_visits[:, 0] - tree.node_visits[:, 0])) == BATCH * MORE
    if max_depth == 2:  # some simulations stopped at the cutoff on a visited node
        assert np.any(np.asarray(want[1][2]) <= SIMULATIONS)


@functools.partial(jax.jit, static_argnums=0)
def _each_step(module, tree, key):
    """Every step of `module` (mctx's `_src` modules or the vendored one) once on `tree`."""
    simulate_keys = jax.random.split(key, BATCH)
    select = mctx.muzero_action_selection
    wrapper = STEPS[module][3]
    switching = jax.vmap(
        wrapper(
            root_action_selection_fn=functools.partial(select, depth=0),
            interior_action_selection_fn=select,
        ),
        in_axes=(0, 0, None, None),
    )
    search = mctx_vendored if module == "vendored" else mctx_search
    out = {
        f"select {node} {depth}": switching(simulate_keys, tree, node, depth)
        for node in range(3)
        for depth in (0.0, 1.0)
    }
    parent, action = out["simulate"] = search.simulate(simulate_keys, tree, select, SIMULATIONS)
    node = jnp.full(BATCH, SIMULATIONS + 1, jnp.int32)
    out["expand"] = search.expand(PARAMS, key, tree, recurrent_fn, parent, action, node)
    out["backward"] = search.backward(out["expand"], node)
    logits = jax.random.normal(key, (BATCH, ACTIONS))
    value = jnp.arange(BATCH, dtype=jnp.float32)
    embedding = jnp.ones((BATCH, DIM))
    for node in (0, SIMULATIONS + 1):  # the root, a free node
        index = jnp.full(BATCH, node, jnp.int32)
        out[f"update {node}"] = search.update_tree_node(tree, index, logits, value, embedding)
    return out


def test_each_step_matches_mctx():
    tree = _carried()
    assert mctx_vendored.infer_batch_size(tree) == mctx_tree.infer_batch_size(tree) == BATCH
    with pytest.raises(ValueError, match="not batched"):
        mctx_vendored.infer_batch_size(jax.tree.map(lambda x: x[0], tree))
    key = jax.random.PRNGKey(5)
    assert_same(_each_step("vendored", tree, key), _each_step("mctx", tree, key))
