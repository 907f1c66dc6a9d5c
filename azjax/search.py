"""Tree search: the only module that calls mctx.

Conventions (see docs/architecture.md): the game `State` is the mctx embedding; the reward of an
edge is the outcome for the player who moved; a terminal child has value 0 and discount 0,
every other edge discount -1 (turns alternate); illegal actions are masked in the prior
logits at every node, and through `invalid_actions` at the root.

A searcher is built from an *evaluator*, `evaluate(params, states [B], key) -> (logits
[B, A], value [B])`, giving the prior and the value for the player to move. AlphaZero uses
the network; the pure-MCTS baseline uses a uniform prior and random-rollout values. Both go
through the same vectorized mctx search.
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp
import mctx
from flax import struct

from azjax.games import Game, State
from azjax.games.base import random_legal_action
from azjax.networks import Network
from azjax.types import Array, Evaluator, PRNGKey, SearchOutput


@struct.dataclass
class SearchParams:
    """The tunable scalars of a search: Python floats, or [] float32 arrays that a population
    `vmap`s over (they never change shapes or compiled code)."""

    dirichlet_alpha: float | Array = 0.3  # PUCT root noise concentration
    dirichlet_fraction: float | Array = 0.25  # PUCT root noise weight; 0 turns it off
    pb_c_init: float | Array = 1.25  # PUCT exploration constants
    pb_c_base: float | Array = 19652.0
    gumbel_scale: float | Array = 1.0  # Gumbel root noise; 0 is deterministic


def mask_logits(logits: Array, legal_action_mask: Array) -> Array:
    """Sets the logits of illegal actions to the lowest float, so their prior is 0."""
    return jnp.where(legal_action_mask, logits, jnp.finfo(logits.dtype).min)


def qtransform_parent_value(tree: mctx.Tree, node_index: Array) -> Array:
    """Q values in [-1, 1] for PUCT, unvisited children valued like their parent.

    mctx's default (`qtransform_by_parent_and_siblings`) min-max normalises Q over the
    visited siblings and gives unvisited children the minimum, so once the prior's favourite
    child has Q above its parent's value no other child is ever tried: a one-move win with
    a low prior stayed unvisited at 32 simulations in Tic-tac-toe. Valuing an unvisited
    child at its parent's value ("first-play urgency" = parent) and keeping game values
    unnormalised, as AlphaZero does, lets the prior term decide when to try it.

    Args:
      tree: the search tree (unbatched, as mctx calls it).
      node_index: [] int32 the node whose children are scored.

    Returns:
      [A] float32 Q value of each child for the player to move at the node.
    """
    qvalues = tree.qvalues(node_index)
    visited = tree.children_visits[node_index] > 0
    return jnp.where(visited, qvalues, tree.node_values[node_index])


def network_evaluator(game: Game, network: Network) -> Evaluator:
    """Prior and value from the network (inference mode); `params` are `networks.Variables`."""

    def evaluate(variables, states: State, key: PRNGKey) -> tuple[Array, Array]:
        del key
        obs = jax.vmap(game.observe)(states)
        logits, value, _ = network.apply(variables, obs, False)
        return logits, value

    return evaluate


def rollout_evaluator(game: Game) -> Evaluator:
    """Uniform prior and the outcome of one uniformly random playout, for the player to move."""

    def playout(state: State, key: PRNGKey) -> Array:
        def not_done(carry):
            state, _, _ = carry
            return ~state.terminated

        def play_random(carry):
            state, returns, key = carry
            key, action_key = jax.random.split(key)
            state = game.step(state, random_legal_action(action_key, state.legal_action_mask))
            return state, returns + state.rewards, key

        _, returns, _ = jax.lax.while_loop(
            not_done, play_random, (state, jnp.zeros(2, jnp.float32), key)
        )
        return returns[state.current_player]

    def evaluate(params, states: State, key: PRNGKey) -> tuple[Array, Array]:
        del params
        batch_size = states.terminated.shape[0]
        value = jax.vmap(playout)(states, jax.random.split(key, batch_size))
        return jnp.zeros((batch_size, game.num_actions), jnp.float32), value

    return evaluate


def make_search(
    game: Game,
    evaluate: Evaluator,
    *,
    num_simulations: int,
    algorithm: str = "puct",
    max_num_considered_actions: int = 16,
    qtransform: Callable = qtransform_parent_value,
    params: SearchParams | None = None,
    return_tree: bool = False,
) -> Callable[..., SearchOutput]:
    """Builds `search(variables, states [B], key, params=None) -> SearchOutput`.

    Args:
      game: the game whose `State` is the search embedding.
      evaluate: prior and value for a batch of states (see module docstring).
      num_simulations: simulations per move (static).
      algorithm: "puct" (AlphaZero, `mctx.muzero_policy`) or "gumbel" (`gumbel_muzero_policy`).
      max_num_considered_actions: Gumbel root sampling width (static).
      qtransform: PUCT's Q-value transform (Gumbel uses mctx's completed-Q transform).
      params: the tunable scalars used when a call passes none (default: `SearchParams()`).
      return_tree: also return mctx's search `Tree` (batched [B, ...], game states as node
        embeddings) in `SearchOutput.tree`, to inspect or draw (`azjax.render.search_tree`);
        off by default, so self-play and play never carry it out of the compiled search.

    Returns:
      The pure search function; its `params` argument (a `SearchParams` of floats or traced
      scalars) overrides the built-in one. PUCT's `action` is the most visited legal move;
      Gumbel's is the action chosen by sequential halving.

    Raises:
      ValueError: an unknown `algorithm`.
    """
    if algorithm not in ("puct", "gumbel"):
        raise ValueError(f"unknown search algorithm {algorithm!r}; use 'puct' or 'gumbel'")

    def recurrent_fn(variables, key: PRNGKey, action: Array, states: State):
        next_states = jax.vmap(game.step)(states, action)
        logits, value = evaluate(variables, next_states, key)
        movers = states.current_player
        reward = jnp.take_along_axis(next_states.rewards, movers[:, None], axis=1)[:, 0]
        output = mctx.RecurrentFnOutput(
            reward=reward,
            discount=jnp.where(next_states.terminated, 0.0, -1.0),
            prior_logits=mask_logits(logits, next_states.legal_action_mask),
            value=jnp.where(next_states.terminated, 0.0, value),
        )
        return output, next_states

    default_params = SearchParams() if params is None else params

    def search(variables, states: State, key: PRNGKey, params: SearchParams | None = None):
        params = default_params if params is None else params
        root_key, search_key = jax.random.split(key)
        logits, value = evaluate(variables, states, root_key)
        root = mctx.RootFnOutput(
            prior_logits=mask_logits(logits, states.legal_action_mask),
            value=jnp.where(states.terminated, 0.0, value),
            embedding=states,
        )
        invalid_actions = ~states.legal_action_mask
        if algorithm == "puct":
            output = mctx.muzero_policy(
                variables,
                search_key,
                root,
                recurrent_fn,
                num_simulations,
                invalid_actions=invalid_actions,
                dirichlet_alpha=params.dirichlet_alpha,
                dirichlet_fraction=params.dirichlet_fraction,
                pb_c_init=params.pb_c_init,
                pb_c_base=params.pb_c_base,
                qtransform=qtransform,
            )
            weights = jnp.where(states.legal_action_mask, output.action_weights, 0.0)
            action = jnp.argmax(weights, axis=-1).astype(jnp.int32)
        else:
            output = mctx.gumbel_muzero_policy(
                variables,
                search_key,
                root,
                recurrent_fn,
                num_simulations,
                invalid_actions=invalid_actions,
                max_num_considered_actions=max_num_considered_actions,
                gumbel_scale=params.gumbel_scale,
            )
            weights = jnp.where(states.legal_action_mask, output.action_weights, 0.0)
            action = output.action.astype(jnp.int32)
        searched_value = output.search_tree.summary().value
        tree = output.search_tree if return_tree else None
        return SearchOutput(action=action, action_weights=weights, value=searched_value, tree=tree)

    return search


def make_mcts_baseline(game: Game, *, num_simulations: int, pb_c_init: float = 6.0):
    """The pure-MCTS baseline: uniform prior, one random playout per leaf, no noise.

    It scores children with mctx's min-max normalised Q. With a uniform prior the PUCT
    exploration term then needs a larger constant than AlphaZero's 1.25 to expand every
    move: on Connect Four at 200 simulations, c = 6 beat c = 1.25 in 62 of 64 games and drew
    level with c = 12 (32-6-26); c = 24 was weaker.
    """
    return make_search(
        game,
        rollout_evaluator(game),
        num_simulations=num_simulations,
        algorithm="puct",
        qtransform=mctx.qtransform_by_parent_and_siblings,
        params=SearchParams(dirichlet_fraction=0.0, pb_c_init=pb_c_init),
    )
