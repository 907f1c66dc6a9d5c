"""Golden search trees pin the search's behaviour, as mctx's own tests do: fixed positions, a
fixed network-free evaluator and fixed keys give trees whose every node (parent, action,
visits, value) is stored in `golden/search_trees.json`. A change that alters what the
search computes fails here, however good the moves it still finds.

The golden file was written by the code it pins; regenerate it only for an intended change
of behaviour, and say so in the commit:

    AZJAX_REGENERATE_GOLDEN=1 pytest tests/core/test_search_golden.py
"""

import json
import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import games
from azjax.core.search import SearchParams, make_search

GOLDEN = Path(__file__).parent / "golden" / "search_trees.json"
C4 = games.make("connect_four")
# Two Connect Four positions, the start and a middle game, whose games go on for a while.
POSITIONS = ([], [3, 3, 4, 2, 2, 4])
_WEIGHTS = np.random.default_rng(0).normal(size=(2, 6, 7, C4.num_actions + 1)) * 0.3


def evaluate(params, states, key):
    """A deterministic stand-in for a network: prior logits and value are fixed linear
    functions of the observation (so the search's arithmetic, not a network's, is pinned)."""
    del params, key
    out = jnp.einsum("bhwc,chwo->bo", jax.vmap(C4.observe)(states), jnp.asarray(_WEIGHTS))
    return out[:, :-1], jnp.tanh(out[:, -1])


def positions():
    def play(moves):
        state = C4.init(jax.random.PRNGKey(0))
        for move in moves:
            state = C4.step(state, move)
        return state

    return jax.tree.map(lambda *xs: jnp.stack(xs), *(play(m) for m in POSITIONS))


# name -> (make_search keywords, SearchParams keywords)
CASES = {
    "puct": (dict(algorithm="puct", num_simulations=24), dict(dirichlet_fraction=0.0)),
    "puct_noise": (dict(algorithm="puct", num_simulations=24), dict(dirichlet_alpha=0.5)),
    "gumbel": (
        dict(algorithm="gumbel", num_simulations=16, max_num_considered_actions=4),
        dict(gumbel_scale=1.0),
    ),
    "puct_reuse": (
        dict(algorithm="puct", num_simulations=16, tree_reuse=True),
        dict(dirichlet_fraction=0.0),
    ),
}


def _summary(output):
    tree = output.tree
    return {
        "action": output.action.tolist(),
        "action_weights": np.round(np.asarray(output.action_weights), 5).tolist(),
        "value": np.round(np.asarray(output.value), 5).tolist(),
        "parents": np.asarray(tree.parents).tolist(),
        "action_from_parent": np.asarray(tree.action_from_parent).tolist(),
        "node_visits": np.asarray(tree.node_visits).tolist(),
        "node_values": np.round(np.asarray(tree.node_values), 5).tolist(),
    }


def run_case(name):
    search_kwargs, params = CASES[name]
    search = make_search(
        C4, evaluate, params=SearchParams(**params), return_tree=True, **search_kwargs
    )
    states = positions()
    key = jax.random.PRNGKey(7)
    if not search.tree_reuse:
        return [_summary(jax.jit(search)(None, states, key))]
    # Two moves: the second search starts from the subtree under the move played and a reply.
    first = jax.jit(search)(None, states, key, None, search.empty_tree(states))
    tree = search.advance(first.tree, first.action)
    states = jax.vmap(C4.step)(states, first.action)
    # The reply the first tree searched most, so the second search starts from a grown subtree.
    rows = jnp.arange(len(POSITIONS))
    child = first.tree.children_index[rows, 0, first.action]
    reply = jnp.argmax(first.tree.children_visits[rows, child], axis=-1).astype(jnp.int32)
    tree = search.advance(tree, reply)
    states = jax.vmap(C4.step)(states, reply)
    second = jax.jit(search)(None, states, jax.random.PRNGKey(8), None, tree)
    return [_summary(first), _summary(second)]


@pytest.fixture(scope="module")
def golden():
    if os.environ.get("AZJAX_REGENERATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps({name: run_case(name) for name in CASES}, indent=None))
    return json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("name", list(CASES))
def test_search_tree_matches_golden(golden, name):
    for got, want in zip(run_case(name), golden[name], strict=True):
        for field in ("action", "parents", "action_from_parent", "node_visits"):
            assert got[field] == want[field], field
        for field in ("action_weights", "value", "node_values"):
            np.testing.assert_allclose(got[field], want[field], atol=2e-5, err_msg=field)
