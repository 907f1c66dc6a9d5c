"""KataGo's forced playouts and policy target pruning (Wu 2019, "Accelerating Self-Play
Learning in Go", section 3.1), for PUCT search on mctx trees.

Forced playouts: at the root, a child c with prior P(c) (Dirichlet noise included) that has
fewer than n_forced(c) = sqrt(k P(c) N) visits, N the root's children's visits so far, is
visited next, whatever PUCT says; so a move the noise favours gets a real look.

Policy target pruning: the forced visits then come off the policy target. For each child c
but the most visited c*, up to n_forced(c) visits are removed as long as c's PUCT score with
the remaining visits stays below c*'s; a child left with one visit goes to zero. The move
played is still the most visited (unchanged), only the target the network learns from loses
the visits that PUCT alone would not have given.

Both act at the root of a tree that `mctx.muzero_action_selection` searches (the same PUCT
constants and Q transform), batched like mctx's trees: [B, ...] arrays, the root node 0.
"""

import jax
import jax.numpy as jnp
import mctx

from azjax.types import Array


def forced_visits(prior: Array, visits: Array, k: float) -> Array:
    """n_forced = sqrt(k P(c) N) per child, N the children's visits in all ([..., A])."""
    total = jnp.sum(visits, axis=-1, keepdims=True)
    return jnp.sqrt(k * prior * total)


def root_selection(select, k: float):
    """The root's action selection (mctx's signature, one tree of the batch): a child short of
    its forced visits first (the one furthest below), else `select`'s PUCT choice."""

    def selection(rng_key, tree: mctx.Tree, node_index, depth):
        chosen = select(rng_key, tree, node_index, depth)
        prior = jax.nn.softmax(tree.children_prior_logits[node_index])
        visits = tree.children_visits[node_index].astype(prior.dtype)
        missing = forced_visits(prior, visits, k) - visits
        valid = ~tree.root_invalid_actions
        short = valid & (missing > 0)
        forced = jnp.argmax(jnp.where(short, missing, -jnp.inf)).astype(chosen.dtype)
        return jnp.where(jnp.any(short), forced, chosen)

    return selection


def pruned_policy(tree: mctx.Tree, k: float, pb_c_init, pb_c_base, qtransform) -> Array:
    """[B, A] the root's visit distribution with the forced visits pruned (module docstring);
    PUCT's scores as `mctx.muzero_action_selection` computes them at the root."""
    root = mctx.Tree.ROOT_INDEX
    visits = tree.children_visits[:, root].astype(jnp.float32)  # [B, A]
    prior = jax.nn.softmax(tree.children_prior_logits[:, root])
    node_visits = tree.node_visits[:, root].astype(jnp.float32)[:, None]  # [B, 1]
    pb_c = pb_c_init + jnp.log((node_visits + pb_c_base + 1.0) / pb_c_base)
    exploration = jnp.sqrt(node_visits) * pb_c * prior  # U(n) = exploration / (n + 1)
    value = jax.vmap(qtransform, in_axes=(0, None))(tree, root)  # [B, A]
    best = jnp.argmax(visits, axis=-1)[:, None]
    best_visits = jnp.take_along_axis(visits, best, axis=-1)
    best_score = jnp.take_along_axis(value + exploration / (visits + 1.0), best, axis=-1)
    # The fewest visits n' keeping value + exploration / (n' + 1) below c*'s score: n' + 1 >
    # exploration / gap. None when c's value alone reaches c*'s score: then c keeps all.
    gap = best_score - value
    floor = jnp.where(gap > 0, jnp.floor(exploration / jnp.maximum(gap, 1e-12)), visits)
    floor = jnp.clip(floor, 0.0, visits)
    kept = jnp.maximum(visits - jnp.floor(forced_visits(prior, visits, k)), floor)
    kept = jnp.where(kept <= 1.0, 0.0, kept)
    is_best = jnp.arange(visits.shape[-1])[None, :] == best
    kept = jnp.where(is_best, best_visits, kept)
    return kept / jnp.maximum(jnp.sum(kept, axis=-1, keepdims=True), 1.0)
