"""Shared records, callable types and the shape legend used across azjax (the errors are
`azjax.errors`, which loads no jax; they are here too).

Shape legend (used in comments next to array fields):
  B  batch of games or samples     T  time (plies in a scan)
  A  number of actions             S  number of board symmetries
  H, W  board height and width     C  observation planes
  N  replay-buffer capacity        D  devices
  L  longest game (plies)
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
from flax import struct

from azjax.errors import RunError, StorageLost, UserError

__all__ = [
    "Array",
    "Batch",
    "Evaluator",
    "PRNGKey",
    "Player",
    "RunError",
    "SearchOutput",
    "Searcher",
    "StorageLost",
    "UserError",
]

Array = jax.Array
PRNGKey = jax.Array


class Batch(struct.PyTreeNode):
    """Labelled training samples: a minibatch and its targets (`core/targets.py`)."""

    obs: Array  # [B, H, W, C] observation from the mover's view
    policy: Array  # [B, A] float32 search policy target
    value: Array  # [B] float32 game outcome for the mover
    # KataGo's auxiliary targets (None when off), from the mover's view at the game's end:
    ownership: Array | None = None  # [B, P] float32 in {-1, 0, 1} per board point
    score: Array | None = None  # [B] float32 the final score margin


class SearchOutput(NamedTuple):
    """Result of a batched search."""

    action: Array  # [B] int32, the move the search chooses (deterministic when noise is off)
    action_weights: Array  # [B, A] float32, the policy target (visits or improved policy)
    value: Array  # [B] float32, searched root value for the player to move
    # mctx's search `Tree` ([B, ...]) when the search was built with `return_tree=True`, else
    # None: node_visits [B, N], node_values [B, N] for the player to move at each node,
    # children_* [B, N, A], the game states as `embeddings`; N = num_simulations + 1.
    tree: Any = None
    # [B] float32 searched value (Q) of the chosen action for the player to move, or None
    action_value: Any = None


# evaluate(params, states [B], key) -> (prior logits [B, A], value [B] for the player to move)
Evaluator = Callable[[Any, Any, PRNGKey], tuple[Array, Array]]
# search(params, states [B], key) -> SearchOutput
Searcher = Callable[[Any, Any, PRNGKey], SearchOutput]
# player(params, states [B], key) -> actions [B] int32
Player = Callable[[Any, Any, PRNGKey], Array]
