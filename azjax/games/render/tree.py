"""Drawings of mctx search trees with matplotlib (imported on first use, no graphviz).

    search = make_search(game, evaluate, num_simulations=32, return_tree=True)
    output = search(variables, states, key)
    render.search_tree(output.tree, action_names=notation.of(game).action_to_string)

Each node is a box holding its visit count and its value for the player to move there;
each edge carries the action's name over its prior, and is wider and darker the more it was
visited. Nodes are found by walking `children_index` down from the root; the text artists
carry a gid ("search-node", "search-edge") so that a test can find them.
"""

import dataclasses
from collections.abc import Callable

import numpy as np

_ROOT = 0  # mctx.Tree.ROOT_INDEX
_UNVISITED = -1  # mctx.Tree.UNVISITED


@dataclasses.dataclass
class TreeNode:
    """One drawn node of a search tree.

    Attributes:
      index: the node's index in the mctx tree.
      parent: the position of its parent in the layout list (-1 for the root).
      action: the action from its parent (-1 for the root).
      depth: plies below the root.
      x, y: position in the drawing (leaves 1 apart, y = -depth).
      visits: the node's visit count (the root's counts its own evaluation too).
      value: its searched value for the player to move there; at a terminal node, the
        outcome for that player (minus the reward of the move that ended the game).
      prior: the prior of the edge from its parent, as the search used it (PUCT's root
        priors include its Dirichlet noise); nan for the root.
      terminal: the game is over at the node (its edge's discount is 0); mctx may still
        expand moves below it, which are not drawn.
    """

    index: int
    parent: int
    action: int
    depth: int
    x: float
    y: float
    visits: int
    value: float
    prior: float
    terminal: bool


def _softmax(logits: np.ndarray) -> np.ndarray:
    logits = logits.astype(np.float64)
    shifted = np.exp(logits - logits.max())
    return shifted / shifted.sum()


def _element(tree, index: int) -> dict:
    """The numpy arrays of batch element `index` (or of an unbatched tree)."""
    names = (
        "node_visits",
        "node_values",
        "children_index",
        "children_visits",
        "children_prior_logits",
        "children_rewards",
        "children_discounts",
    )
    batched = np.ndim(tree.node_visits) == 2
    return {
        name: np.asarray(getattr(tree, name)[index] if batched else getattr(tree, name))
        for name in names
    }


def tree_layout(
    tree,
    *,
    index: int = 0,
    max_depth: int = 3,
    min_visits: int = 1,
    max_children: int | None = None,
) -> list[TreeNode]:
    """Positions of the nodes `search_tree` draws, root first.

    A tidy top-down layout: leaves spaced 1 apart from left to right, each parent centred over
    its children, children in action order.

    Args:
      tree: an mctx `Tree`, batched ([B, N, ...], `SearchOutput.tree`) or unbatched.
      index: the batch element to lay out.
      max_depth: the deepest level drawn (the root is depth 0).
      min_visits: children visited fewer times are left out.
      max_children: at most this many children per node, the most visited (default: all).

    Returns:
      The nodes in depth-first order, root first; `parent` indexes this list.

    Raises:
      ValueError: a negative `max_depth`, or `min_visits` or `max_children` below 1.
    """
    if max_depth < 0:
        raise ValueError(f"max_depth must be at least 0, got {max_depth}")
    if min_visits < 1:
        raise ValueError(f"min_visits must be at least 1, got {min_visits}")
    if max_children is not None and max_children < 1:
        raise ValueError(f"max_children must be at least 1, got {max_children}")
    t = _element(tree, index)
    nodes: list[TreeNode] = []
    next_leaf_x = 0.0

    def children(node: int) -> list[int]:
        actions = np.flatnonzero(
            (t["children_index"][node] != _UNVISITED) & (t["children_visits"][node] >= min_visits)
        )
        if max_children is not None and len(actions) > max_children:
            order = np.argsort(-t["children_visits"][node][actions], kind="stable")
            actions = np.sort(actions[order[:max_children]])
        return [int(a) for a in actions]

    def visit(node: int, parent: int, action: int, depth: int, prior: float, terminal: bool):
        nonlocal next_leaf_x
        position = len(nodes)
        value = float(t["node_values"][node])
        if terminal:
            value = -float(t["children_rewards"][nodes[parent].index, action])
        nodes.append(
            TreeNode(
                index=node,
                parent=parent,
                action=action,
                depth=depth,
                x=0.0,
                y=-float(depth),
                visits=int(t["node_visits"][node]),
                value=value,
                prior=prior,
                terminal=terminal,
            )
        )
        below = [] if terminal or depth >= max_depth else children(node)
        if not below:
            nodes[position].x = next_leaf_x
            next_leaf_x += 1.0
            return
        priors = _softmax(t["children_prior_logits"][node])
        xs = []
        for a in below:
            xs.append(len(nodes))
            visit(
                int(t["children_index"][node, a]),
                position,
                a,
                depth + 1,
                float(priors[a]),
                bool(t["children_discounts"][node, a] == 0),
            )
        nodes[position].x = (nodes[xs[0]].x + nodes[xs[-1]].x) / 2

    visit(_ROOT, -1, -1, 0, float("nan"), False)
    return nodes


def search_tree(
    tree,
    *,
    index: int = 0,
    action_names: Callable[[int], str] | None = None,
    max_depth: int = 3,
    min_visits: int = 1,
    max_children: int | None = None,
    axes=None,
):
    """Draws the search tree of batch element `index` top-down with matplotlib.

    Each node shows its visit count and its value for the player to move there ("end" marks
    a finished game: the value is then its outcome for that player), on a red (lost) to
    green (won) box. Each edge shows the action's name over its prior, past its middle; its
    width and colour grow with the child's visits. The root's count includes its own
    evaluation: mctx gives it num_simulations + 1 visits.

    Args:
      tree: an mctx `Tree` (`SearchOutput.tree` of a search built with `return_tree=True`),
        batched or unbatched.
      index: the batch element to draw.
      action_names: names an action id (e.g. `notation.of(game).action_to_string`); default
        the id.
      max_depth: the deepest level drawn (the root is depth 0).
      min_visits: children visited fewer times are left out.
      max_children: at most this many children per node, the most visited (default: all).
      axes: matplotlib axes to draw on (default: a new figure sized to the tree).

    Returns:
      The matplotlib axes.

    Raises:
      ValueError: as `tree_layout`.
    """
    import matplotlib.pyplot as plt  # noqa: PLC0415  (slow import; the caller picks a backend)

    nodes = tree_layout(
        tree, index=index, max_depth=max_depth, min_visits=min_visits, max_children=max_children
    )
    name = action_names or str
    leaves = max(node.x for node in nodes) + 1
    depth = max(node.depth for node in nodes)
    if axes is None:
        _, axes = plt.subplots(figsize=(max(4.0, 0.9 * leaves), 0.6 + 1.3 * (depth + 1)))
    edge_colours = plt.get_cmap("Blues")
    value_colours = plt.get_cmap("RdYlGn")
    total = max(nodes[0].visits - 1, 1)
    for node in nodes[1:]:
        parent = nodes[node.parent]
        share = min(node.visits / total, 1.0)
        axes.plot(
            [parent.x, node.x],
            [parent.y, node.y],
            color=edge_colours(0.3 + 0.7 * share),
            linewidth=0.6 + 6.0 * share,
            solid_capstyle="round",
            zorder=1,
        )
        axes.text(
            0.4 * parent.x + 0.6 * node.x,
            0.4 * parent.y + 0.6 * node.y,
            f"{name(node.action)}\n{node.prior:.2f}",
            ha="center",
            va="center",
            fontsize=7,
            gid="search-edge",
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85},
            zorder=2,
        )
    for node in nodes:
        label = f"{node.visits}\n{node.value:+.2f}" + (" end" if node.terminal else "")
        axes.text(
            node.x,
            node.y,
            label,
            ha="center",
            va="center",
            fontsize=8,
            gid="search-node",
            bbox={
                "boxstyle": "round,pad=0.3",
                "fc": value_colours(0.5 + 0.38 * float(np.clip(node.value, -1, 1))),
                "ec": "black" if node.terminal else "grey",
                "lw": 1.2 if node.terminal else 0.6,
            },
            zorder=3,
        )
    axes.set_xlim(-0.6, leaves - 0.4)
    axes.set_ylim(-depth - 0.5, 0.5)
    axes.set_axis_off()
    return axes
