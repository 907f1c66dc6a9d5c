"""Drawings of search trees (`azjax.games.render.search_tree`) on small Tic-tac-toe searches."""

import functools

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np
import pytest

from azjax import games
from azjax.core.search import SearchParams, make_search
from azjax.games import notation, render
from azjax.games.render.tree import tree_layout

matplotlib.use("Agg")

GAME = games.make("tic_tac_toe")
NUM_SIMULATIONS = 24
# X to move wins at cell 2:   X X .   O O .   . . .
WIN = [0, 3, 1, 4]


def play(moves):
    state = GAME.init(jax.random.PRNGKey(0))
    for move in moves:
        state = GAME.step(state, move)
    return state


def uniform(params, states, key):
    del params, key
    batch_size = states.terminated.shape[0]
    return jnp.zeros((batch_size, GAME.num_actions)), jnp.zeros(batch_size)


@functools.cache
def searched():
    """A batch of two searches: the empty board (0) and a one-move win for X (1)."""
    search = make_search(
        GAME,
        uniform,
        num_simulations=NUM_SIMULATIONS,
        params=SearchParams(dirichlet_fraction=0.0),
        return_tree=True,
    )
    states = jax.tree.map(lambda *xs: jnp.stack(xs), play([]), play(WIN))
    return jax.jit(search)(None, states, jax.random.PRNGKey(0)).tree


def texts(axes, gid):
    return [text.get_text() for text in axes.texts if text.get_gid() == gid]


def depths(tree, index):
    parents = np.asarray(tree.parents[index])
    depth = np.zeros(len(parents), int)
    for node in range(1, len(parents)):  # mctx adds a node's parent before the node
        depth[node] = depth[parents[node]] + 1
    return depth


def test_every_visited_node_is_drawn_within_the_limits():
    import matplotlib.pyplot as plt

    tree = searched()
    depth = depths(tree, 0)
    visits = np.asarray(tree.node_visits[0])
    expanded = np.asarray(tree.children_index[0]) != -1
    assert np.all(np.asarray(tree.children_discounts[0])[expanded] == -1), "no game ended"
    for max_depth, min_visits in [(9, 1), (1, 1), (2, 2), (0, 1)]:
        axes = render.search_tree(tree, max_depth=max_depth, min_visits=min_visits)
        expected = np.sum((visits >= min_visits) & (depth <= max_depth))
        assert len(texts(axes, "search-node")) == expected
        assert len(texts(axes, "search-edge")) == expected - 1
        plt.close(axes.figure)
    # Without limits the drawing holds every node mctx created: one per simulation + the root.
    assert len(tree_layout(tree, max_depth=9)) == NUM_SIMULATIONS + 1


def test_root_label_counts_the_root_evaluation():
    import matplotlib.pyplot as plt

    tree = searched()
    assert int(tree.node_visits[0, 0]) == NUM_SIMULATIONS + 1
    assert int(tree.children_visits[0, 0].sum()) == NUM_SIMULATIONS
    axes = render.search_tree(tree, max_depth=1)
    root = texts(axes, "search-node")[0]
    assert root.split("\n")[0] == str(NUM_SIMULATIONS + 1)
    plt.close(axes.figure)


def test_edges_are_named_and_nothing_is_drawn_below_a_finished_game():
    import matplotlib.pyplot as plt

    tree = searched()
    names = notation.of(GAME).action_to_string
    nodes = tree_layout(tree, index=1, max_depth=9)
    win = [node for node in nodes if node.action == 2]
    assert len(win) == 1 and win[0].terminal and win[0].value == -1.0  # O, to move, has lost
    assert win[0].visits > 1, "mctx goes on visiting the finished game"
    assert not any(nodes[node.parent].terminal for node in nodes[1:])
    assert nodes[0].value > 0.3
    axes = render.search_tree(tree, index=1, action_names=names, max_depth=9)
    edges = texts(axes, "search-edge")
    assert sorted(edge.split("\n")[0] for edge in edges) == sorted(
        names(node.action) for node in nodes[1:]
    )
    assert all(edge.split("\n")[1] == "0.20" for edge in edges)  # uniform over 5 moves
    plt.close(axes.figure)


def test_max_children_keeps_the_most_visited():
    tree = searched()
    nodes = tree_layout(tree, index=1, max_depth=1, max_children=1)
    assert [node.action for node in nodes[1:]] == [2]
    with pytest.raises(ValueError, match="min_visits"):
        tree_layout(tree, min_visits=0)


def test_layout_centres_parents_over_their_children():
    nodes = tree_layout(searched(), max_depth=2)
    children = [[child.x for child in nodes if child.parent == i] for i in range(len(nodes))]
    leaves = sorted(node.x for node, xs in zip(nodes, children, strict=True) if not xs)
    np.testing.assert_array_equal(leaves, np.arange(len(leaves)))
    for node, xs in zip(nodes, children, strict=True):
        if xs:
            assert node.x == (min(xs) + max(xs)) / 2
