"""mctx's search-loop steps, vendored for tree reuse.

Copied from mctx 0.0.71 (https://github.com/google-deepmind/mctx), files of its private
`_src` package: `search.py` (`simulate`, `expand`, `backward`, `update_tree_node`, `update`,
`batch_update`), `action_selection.py` (`switching_action_selection_wrapper`) and `tree.py`
(`infer_batch_size`). Copyright 2021 DeepMind Technologies Limited; licensed under the
Apache License, Version 2.0 (Apache-2.0, http://www.apache.org/licenses/LICENSE-2.0).

Why: tree reuse (`azjax.core.search`, a search continuing from a carried tree) runs mctx's
simulate/expand/backward loop on that tree, and mctx's public API only exposes the whole
`search`, which always starts from an empty tree; mctx asks users not to import `_src`.
Changes: reformatted (ruff), type annotations through mctx's public names, lint comments
dropped; the code is otherwise unchanged, and tests/core/test_mctx_vendored.py checks every
function against the mctx 0.0.71 original (pyproject.toml pins that version).
"""

import functools
from typing import NamedTuple

import chex  # mctx's own dependency
import jax
import jax.numpy as jnp
import mctx

Tree = mctx.Tree


def infer_batch_size(tree: Tree) -> int:
    """Recovers batch size from `Tree` data structure."""
    if tree.node_values.ndim != 2:
        raise ValueError("Input tree is not batched.")
    chex.assert_equal_shape_prefix(jax.tree_util.tree_leaves(tree), 1)
    return tree.node_values.shape[0]


def switching_action_selection_wrapper(
    root_action_selection_fn: mctx.RootActionSelectionFn,
    interior_action_selection_fn: mctx.InteriorActionSelectionFn,
) -> mctx.InteriorActionSelectionFn:
    """Wraps root and interior action selection fns in a conditional statement."""

    def switching_action_selection_fn(
        rng_key: chex.PRNGKey, tree: Tree, node_index: chex.Array, depth: chex.Array
    ) -> chex.Array:
        return jax.lax.cond(
            depth == 0,
            lambda x: root_action_selection_fn(*x[:3]),
            lambda x: interior_action_selection_fn(*x),
            (rng_key, tree, node_index, depth),
        )

    return switching_action_selection_fn


class _SimulationState(NamedTuple):
    """The state for the simulation while loop."""

    rng_key: chex.PRNGKey
    node_index: int
    action: int
    next_node_index: int
    depth: int
    is_continuing: bool


@functools.partial(jax.vmap, in_axes=[0, 0, None, None], out_axes=0)
def simulate(
    rng_key: chex.PRNGKey,
    tree: Tree,
    action_selection_fn: mctx.InteriorActionSelectionFn,
    max_depth: int,
) -> tuple[chex.Array, chex.Array]:
    """Traverses the tree until reaching an unvisited action or `max_depth`.

    Each simulation starts from the root and keeps selecting actions traversing
    the tree until a leaf or `max_depth` is reached.

    Args:
      rng_key: random number generator state, the key is consumed.
      tree: _unbatched_ MCTS tree state.
      action_selection_fn: function used to select an action during simulation.
      max_depth: maximum search tree depth allowed during simulation.

    Returns:
      `(parent_index, action)` tuple, where `parent_index` is the index of the
      node reached at the end of the simulation, and the `action` is the action to
      evaluate from the `parent_index`.
    """

    def cond_fun(state):
        return state.is_continuing

    def body_fun(state):
        # Preparing the next simulation state.
        node_index = state.next_node_index
        rng_key, action_selection_key = jax.random.split(state.rng_key)
        action = action_selection_fn(action_selection_key, tree, node_index, state.depth)
        next_node_index = tree.children_index[node_index, action]
        # The returned action will be visited.
        depth = state.depth + 1
        is_before_depth_cutoff = depth < max_depth
        is_visited = next_node_index != Tree.UNVISITED
        is_continuing = jnp.logical_and(is_visited, is_before_depth_cutoff)
        return _SimulationState(
            rng_key=rng_key,
            node_index=node_index,
            action=action,
            next_node_index=next_node_index,
            depth=depth,
            is_continuing=is_continuing,
        )

    node_index = jnp.array(Tree.ROOT_INDEX, dtype=jnp.int32)
    depth = jnp.zeros((), dtype=tree.children_prior_logits.dtype)
    initial_state = _SimulationState(
        rng_key=rng_key,
        node_index=tree.NO_PARENT,
        action=tree.NO_PARENT,
        next_node_index=node_index,
        depth=depth,
        is_continuing=jnp.array(True),
    )
    end_state = jax.lax.while_loop(cond_fun, body_fun, initial_state)

    # Returning a node with a selected action.
    # The action can be already visited, if the max_depth is reached.
    return end_state.node_index, end_state.action


def expand(
    params: chex.Array,
    rng_key: chex.PRNGKey,
    tree: Tree,
    recurrent_fn: mctx.RecurrentFn,
    parent_index: chex.Array,
    action: chex.Array,
    next_node_index: chex.Array,
) -> Tree:
    """Create and evaluate child nodes from given nodes and unvisited actions.

    Args:
      params: params to be forwarded to recurrent function.
      rng_key: random number generator state.
      tree: the MCTS tree state to update.
      recurrent_fn: a callable to be called on the leaf nodes and unvisited
        actions retrieved by the simulation step, which takes as args
        `(params, rng_key, action, embedding)` and returns a `RecurrentFnOutput`
        and the new state embedding. The `rng_key` argument is consumed.
      parent_index: the index of the parent node, from which the action will be
        expanded. Shape `[B]`.
      action: the action to expand. Shape `[B]`.
      next_node_index: the index of the newly expanded node. This can be the index
        of an existing node, if `max_depth` is reached. Shape `[B]`.

    Returns:
      tree: updated MCTS tree state.
    """
    batch_size = infer_batch_size(tree)
    batch_range = jnp.arange(batch_size)
    chex.assert_shape([parent_index, action, next_node_index], (batch_size,))

    # Retrieve states for nodes to be evaluated.
    embedding = jax.tree.map(lambda x: x[batch_range, parent_index], tree.embeddings)

    # Evaluate and create a new node.
    step, embedding = recurrent_fn(params, rng_key, action, embedding)
    chex.assert_shape(step.prior_logits, [batch_size, tree.num_actions])
    chex.assert_shape(step.reward, [batch_size])
    chex.assert_shape(step.discount, [batch_size])
    chex.assert_shape(step.value, [batch_size])
    tree = update_tree_node(tree, next_node_index, step.prior_logits, step.value, embedding)

    # Return updated tree topology.
    return tree.replace(
        children_index=batch_update(tree.children_index, next_node_index, parent_index, action),
        children_rewards=batch_update(tree.children_rewards, step.reward, parent_index, action),
        children_discounts=batch_update(
            tree.children_discounts, step.discount, parent_index, action
        ),
        parents=batch_update(tree.parents, parent_index, next_node_index),
        action_from_parent=batch_update(tree.action_from_parent, action, next_node_index),
    )


@jax.vmap
def backward(tree: Tree, leaf_index: chex.Numeric) -> Tree:
    """Goes up and updates the tree until all nodes reached the root.

    Args:
      tree: the MCTS tree state to update, without the batch size.
      leaf_index: the node index from which to do the backward.

    Returns:
      Updated MCTS tree state.
    """

    def cond_fun(loop_state):
        _, _, index = loop_state
        return index != Tree.ROOT_INDEX

    def body_fun(loop_state):
        # Here we update the value of our parent, so we start by reversing.
        tree, leaf_value, index = loop_state
        parent = tree.parents[index]
        count = tree.node_visits[parent]
        action = tree.action_from_parent[index]
        reward = tree.children_rewards[parent, action]
        leaf_value = reward + tree.children_discounts[parent, action] * leaf_value
        parent_value = (tree.node_values[parent] * count + leaf_value) / (count + 1.0)
        children_values = tree.node_values[index]
        children_counts = tree.children_visits[parent, action] + 1

        tree = tree.replace(
            node_values=update(tree.node_values, parent_value, parent),
            node_visits=update(tree.node_visits, count + 1, parent),
            children_values=update(tree.children_values, children_values, parent, action),
            children_visits=update(tree.children_visits, children_counts, parent, action),
        )

        return tree, leaf_value, parent

    leaf_index = jnp.asarray(leaf_index, dtype=jnp.int32)
    loop_state = (tree, tree.node_values[leaf_index], leaf_index)
    tree, _, _ = jax.lax.while_loop(cond_fun, body_fun, loop_state)

    return tree


# Utility function to set the values of certain indices to prescribed values.
# This is vmapped to operate seamlessly on batches.
def update(x, vals, *indices):
    return x.at[indices].set(vals)


batch_update = jax.vmap(update)


def update_tree_node(
    tree: Tree,
    node_index: chex.Array,
    prior_logits: chex.Array,
    value: chex.Array,
    embedding: chex.Array,
) -> Tree:
    """Updates the tree at node index.

    Args:
      tree: `Tree` to whose node is to be updated.
      node_index: the index of the expanded node. Shape `[B]`.
      prior_logits: the prior logits to fill in for the new node, of shape
        `[B, num_actions]`.
      value: the value to fill in for the new node. Shape `[B]`.
      embedding: the state embeddings for the node. Shape `[B, ...]`.

    Returns:
      The new tree with updated nodes.
    """
    batch_size = infer_batch_size(tree)
    batch_range = jnp.arange(batch_size)
    chex.assert_shape(prior_logits, (batch_size, tree.num_actions))

    # When using max_depth, a leaf can be expanded multiple times.
    new_visit = tree.node_visits[batch_range, node_index] + 1
    updates = dict(
        children_prior_logits=batch_update(tree.children_prior_logits, prior_logits, node_index),
        raw_values=batch_update(tree.raw_values, value, node_index),
        node_values=batch_update(tree.node_values, value, node_index),
        node_visits=batch_update(tree.node_visits, new_visit, node_index),
        embeddings=jax.tree.map(
            lambda t, s: batch_update(t, s, node_index), tree.embeddings, embedding
        ),
    )

    return tree.replace(**updates)
