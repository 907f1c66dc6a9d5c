"""Tree surgery for tree reuse: the subtree under a move, renumbered as the next search's
tree, and the small helpers `search.Search` needs around it (an empty tree of the same
shapes, a row-wise choice between two batched trees). Part of the search layer: with
`search.py` the only module that touches mctx's `Tree`.
"""

import math

import jax
import jax.numpy as jnp
import mctx

from azjax.types import Array

# The arrays of an mctx `Tree` with a node axis (besides the `embeddings` pytree).
NODE_ARRAYS = (
    "node_visits",
    "raw_values",
    "node_values",
    "parents",
    "action_from_parent",
    "children_index",
    "children_prior_logits",
    "children_values",
    "children_visits",
    "children_rewards",
    "children_discounts",
)


def take(values: Array, actions: Array) -> Array:
    """values[b, actions[b]] for [B, A] values."""
    return jnp.take_along_axis(values, actions[:, None], axis=1)[:, 0]


def select_rows(condition: Array, true_tree, false_tree):
    """Row-wise `where` over two batched trees."""
    return jax.tree.map(
        lambda a, b: jnp.where(condition.reshape((-1,) + (1,) * (a.ndim - 1)), a, b),
        true_tree,
        false_tree,
    )


def empty_like(tree: mctx.Tree, num_nodes: int | None = None) -> mctx.Tree:
    """A tree of `tree`'s shapes (with `num_nodes` nodes if given) holding nothing: what
    mctx instantiates before the root. Works on a batched tree or on one row of it (under
    `vmap`), whose node axis is the first."""
    axis = tree.node_visits.ndim - 1
    size = tree.node_visits.shape[axis] if num_nodes is None else num_nodes

    def blank(x, fill=0):
        shape = (*x.shape[:axis], size, *x.shape[axis + 1 :])
        return jnp.full(shape, fill, x.dtype)

    unlinked = {"parents", "action_from_parent", "children_index"}  # no node (-1)
    arrays = {
        name: blank(getattr(tree, name), mctx.Tree.UNVISITED if name in unlinked else 0)
        for name in NODE_ARRAYS
    }
    return tree.replace(**arrays, embeddings=jax.tree.map(blank, tree.embeddings))


def subtree(
    tree: mctx.Tree, node: Array, max_nodes: int, num_nodes: int | None = None
) -> mctx.Tree:
    """The subtrees [B] of a batched tree rooted at `node` [B] (UNVISITED: empty), renumbered
    from 0 in the order of their old indices, in a tree of `num_nodes` nodes (default: the
    same size; another size carries a tree between searches of different budgets).

    A node's parent always has a lower index (mctx numbers nodes as it expands them), so
    renumbering in index order keeps parents before children, and the first `max_nodes` of
    a larger subtree still form a tree: the deeper nodes beyond it are dropped, and the
    edges to them keep their visit counts and values but lose their child, which the next
    search expands again if it goes there. Membership is found by pointer jumping (log2 of
    the tree size passes over the nodes), so the cost per move is O(n log n) in the tree
    size n, never quadratic.
    """

    def one(tree: mctx.Tree, node: Array) -> mctx.Tree:
        size = tree.node_visits.shape[0]
        index = jnp.arange(size, dtype=jnp.int32)
        valid = (node >= 0) & (tree.node_visits[jnp.maximum(node, 0)] > 0)
        up = jnp.where(tree.parents >= 0, tree.parents, index)
        inside = index == node  # becomes: `node` is the node or one of its ancestors
        for _ in range(max(1, math.ceil(math.log2(size)))):
            inside = inside | inside[up]
            up = up[up]
        inside &= valid
        rank = jnp.cumsum(inside, dtype=jnp.int32) - 1
        keep = inside & (rank < min(max_nodes, new_size))
        renumber = jnp.where(keep, rank, mctx.Tree.UNVISITED)  # old index -> new index
        destination = jnp.where(keep, rank, new_size)  # out of range: dropped

        def remap(indices):
            return jnp.where(indices >= 0, renumber[jnp.maximum(indices, 0)], indices)

        is_root = index == node
        moved = tree.replace(
            parents=jnp.where(is_root, mctx.Tree.NO_PARENT, remap(tree.parents)),
            action_from_parent=jnp.where(is_root, mctx.Tree.NO_PARENT, tree.action_from_parent),
            children_index=remap(tree.children_index),
        )
        empty = empty_like(tree, new_size)
        updates = {
            name: jax.tree.map(
                lambda blank, old: blank.at[destination].set(old, mode="drop"),
                getattr(empty, name),
                getattr(moved, name),
            )
            for name in (*NODE_ARRAYS, "embeddings")
        }
        return tree.replace(**updates)

    new_size = tree.node_visits.shape[1] if num_nodes is None else num_nodes
    return jax.vmap(one)(tree, node)
