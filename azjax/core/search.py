"""Tree search: PUCT and Gumbel over mctx's trees.

Every PUCT search, with tree reuse or without, runs one loop, `Search.puct`: mctx's steps
(`mctx_vendored`: simulate, expand, backward) from a tree that holds the carried subtree or
nothing, choosing at each node by `puct_selection`, the place to change the selection rule.
From an empty tree it gives `mctx.muzero_policy`'s result bit for bit
(tests/core/test_tree_reuse.py), but for illegal moves below the root, which mctx's rule can
choose and `puct_selection` never does. Gumbel search is `mctx.gumbel_muzero_policy`.

Conventions (see docs/architecture.md): the game `State` is the mctx embedding; the reward of an
edge is the outcome for the player who moved; a terminal child has value 0 and discount 0,
every other edge discount -1 (turns alternate); illegal actions are masked in the prior
logits and in PUCT's selection at every node, and through `invalid_actions` at the root.

A searcher is built from an *evaluator*, `evaluate(params, states [B], key) -> (logits
[B, A], value [B])`, giving the prior and the value for the player to move. AlphaZero uses
the network; the pure-MCTS baseline (`matches.mcts_baseline`) uses a uniform prior and
random-rollout values. Both go through the same vectorized mctx search; the evaluators are
in `evaluators` (re-exported).
"""

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import mctx
from flax import struct

from azjax.core import mctx_vendored
from azjax.core.evaluators import network_evaluator, rollout_evaluator
from azjax.core.forced_playouts import pruned_policy, root_selection
from azjax.core.search_tree import empty_like, select_rows, subtree, take
from azjax.games import Game, State
from azjax.types import Array, Evaluator, PRNGKey, SearchOutput

__all__ = [
    "Search",
    "SearchParams",
    "make_search",
    "mask_logits",
    "network_evaluator",
    "puct_selection",
    "qtransform_min_max",
    "qtransform_parent_value",
    "rollout_evaluator",
]


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


def puct_selection(params: "SearchParams", qtransform: Callable) -> Callable:
    """The selection rule at every node of a PUCT search: AlphaZero's
    argmax(Q + pb_c * prior * sqrt(N) / (1 + n)), mctx's `muzero_action_selection`, with
    pb_c = pb_c_init + log((N + pb_c_base + 1) / pb_c_base).

    Returns `select(rng_key, tree, node_index, depth) -> action` (mctx's
    `InteriorActionSelectionFn`), called on one unbatched tree (the search vmaps over the
    batch): `node_index` and `depth` are scalars, the action a [] int32. A new rule returns
    a function of the same signature (docs/extending.md writes one, UCT).

    Illegal moves are never chosen. mctx masks them at the root only
    (`tree.root_invalid_actions`); below it they have a prior of 0, and an unvisited one
    valued at its parent's value (`qtransform_parent_value`) could outscore every legal move
    and be searched. Each node's legal moves come from its state; a node without any (a
    finished game) scores as mctx does."""

    def legal_only(tree: mctx.Tree, node_index: Array) -> Array:
        q = qtransform(tree, node_index)
        legal = tree.embeddings.legal_action_mask[node_index]  # [A] the node's own moves
        return jnp.where(legal | ~jnp.any(legal), q, jnp.finfo(q.dtype).min)

    return functools.partial(
        mctx.muzero_action_selection,
        pb_c_base=params.pb_c_base,
        pb_c_init=params.pb_c_init,
        qtransform=legal_only,
    )


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


# mctx's own Q transform: Q min-max normalised over the visited siblings, unvisited children
# valued at the minimum. The pure-MCTS baseline (`matches.mcts_baseline`) scores with it.
qtransform_min_max = mctx.qtransform_by_parent_and_siblings


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
    tree_reuse: bool = False,
    reuse_nodes: int | None = None,
    forced_playouts: float = 0.0,
    gumbel_value_scale: float = 0.1,
) -> "Search":
    """Builds `search(variables, states [B], key, params=None, tree=None) -> SearchOutput`.

    Args:
      game: the game whose `State` is the search embedding.
      evaluate: prior and value for a batch of states (see module docstring).
      num_simulations: simulations per move (static).
      algorithm: "puct" (AlphaZero: `Search.puct`, `mctx.muzero_policy`'s search) or "gumbel"
        (`mctx.gumbel_muzero_policy`).
      max_num_considered_actions: Gumbel root sampling width (static).
      qtransform: PUCT's Q-value transform (Gumbel uses mctx's completed-Q transform).
      params: the tunable scalars used when a call passes none (default: `SearchParams()`).
      return_tree: also return mctx's search `Tree` (batched [B, ...], game states as node
        embeddings) in `SearchOutput.tree`, to inspect or draw (`azjax.games.render.search_tree`);
        off by default, so self-play and play never carry it out of the compiled search.
      tree_reuse: start each search from the tree a previous one left under the move played
        (`Search.advance`, `Search.reroot`); PUCT only. The tree then always comes back.
      reuse_nodes: the most nodes carried from one move to the next (default:
        `num_simulations`); the tree holds `num_simulations + 1 + reuse_nodes` nodes.
      forced_playouts: KataGo's k (0: off; KataGo uses 2): forced root playouts and the
        policy target (`action_weights`) pruned of them (`azjax.core.forced_playouts`); PUCT only.
      gumbel_value_scale: Gumbel's c_scale, the weight of the completed Q-values against the
        prior logits (`mctx.qtransform_completed_by_mix_value`'s `value_scale`, 0.1 there and
        by default): a normalised Q-value gap moves the improved policy by up to
        (50 + most visits) * c_scale nats, so a prior far more confident than that keeps its
        move even when the search finds a win elsewhere.

    Returns:
      The pure search function (a `Search`); its `params` argument (a `SearchParams` of
      floats or traced scalars) overrides the built-in one. PUCT's `action` is the most
      visited legal move; Gumbel's is the action chosen by sequential halving.

    Raises:
      ValueError: an unknown `algorithm`, or tree reuse with Gumbel search.
    """
    if algorithm not in ("puct", "gumbel"):
        raise ValueError(f"unknown search algorithm {algorithm!r}; use 'puct' or 'gumbel'")
    if tree_reuse and algorithm != "puct":
        raise ValueError(
            "tree reuse needs PUCT search (Gumbel's sequential halving starts from an empty root)"
        )
    if forced_playouts and algorithm != "puct":
        raise ValueError("forced playouts need PUCT search (Gumbel chooses its root visits)")
    return Search(
        game=game,
        evaluate=evaluate,
        num_simulations=num_simulations,
        algorithm=algorithm,
        max_num_considered_actions=max_num_considered_actions,
        qtransform=qtransform,
        params=SearchParams() if params is None else params,
        return_tree=return_tree or tree_reuse,
        tree_reuse=tree_reuse,
        reuse_nodes=num_simulations if reuse_nodes is None else reuse_nodes,
        forced_playouts=float(forced_playouts),
        gumbel_value_scale=float(gumbel_value_scale),
    )


@dataclasses.dataclass(frozen=True)
class Search:
    """A batched search (`make_search`); call it like a function.

    With `tree_reuse` a call takes the tree to start from (`tree=`: an `empty_tree`, or the
    subtree a previous search left under the moves played since, from `advance` or
    `reroot`) and returns the grown tree in `SearchOutput.tree`. Each call adds
    `num_simulations` simulations to what the tree already holds, so the root's visits
    (the policy target and the move) count the carried ones too.
    """

    game: Game
    evaluate: Evaluator
    num_simulations: int
    algorithm: str
    max_num_considered_actions: int
    qtransform: Callable
    params: SearchParams
    return_tree: bool
    tree_reuse: bool
    reuse_nodes: int
    forced_playouts: float = 0.0  # KataGo's k; 0: off
    gumbel_value_scale: float = 0.1  # Gumbel's c_scale (completed Q-values against the prior)

    @property
    def num_nodes(self) -> int:
        """Nodes per tree: the root, one per simulation and the nodes carried over."""
        return self.num_simulations + 1 + (self.reuse_nodes if self.tree_reuse else 0)

    def with_params(self, params: SearchParams) -> "Search":
        """The same search with other tunable scalars (traced ones included)."""
        return dataclasses.replace(self, params=params)

    def with_simulations(self, num_simulations: int) -> "Search":
        """The same search with fewer simulations per move, keeping the tree's size (a cheap
        search of playout cap randomization can share the full search's tree)."""
        if self.tree_reuse:
            extra = self.num_nodes - 1 - num_simulations
            return dataclasses.replace(self, num_simulations=num_simulations, reuse_nodes=extra)
        return dataclasses.replace(self, num_simulations=num_simulations)

    def recurrent_fn(self, variables, key: PRNGKey, action: Array, states: State):
        """mctx's model step for a batch of expanded nodes: plays `action` [B] in `states`
        [B] with the game's rules (the states are the node embeddings) and evaluates the
        positions reached. The edge's reward is the outcome for the player who moved, its
        discount -1 (turns alternate) or 0 at a terminal position, whose value is 0; the
        prior logits are masked to the legal moves. Returns (`mctx.RecurrentFnOutput`,
        next states)."""
        game = self.game
        next_states = jax.vmap(game.step)(states, action)
        logits, value = self.evaluate(variables, next_states, key)
        movers = states.current_player
        reward = jnp.take_along_axis(next_states.rewards, movers[:, None], axis=1)[:, 0]
        output = mctx.RecurrentFnOutput(
            reward=reward,
            discount=jnp.where(next_states.terminated, 0.0, -1.0),
            prior_logits=mask_logits(logits, next_states.legal_action_mask),
            value=jnp.where(next_states.terminated, 0.0, value),
        )
        return output, next_states

    def __call__(
        self,
        variables,
        states: State,
        key: PRNGKey,
        params: SearchParams | None = None,
        tree: mctx.Tree | None = None,
    ) -> SearchOutput:
        params = self.params if params is None else params
        root_key, search_key = jax.random.split(key)
        logits, value = self.evaluate(variables, states, root_key)
        root = mctx.RootFnOutput(
            prior_logits=mask_logits(logits, states.legal_action_mask),
            value=jnp.where(states.terminated, 0.0, value),
            embedding=states,
        )
        invalid_actions = ~states.legal_action_mask
        gumbel = None  # Gumbel's `mctx.PolicyOutput`
        if self.algorithm == "puct":  # one path, from the carried tree or an empty one
            if tree is None:
                tree = self.empty_tree(states)
            search_tree = self.puct(variables, search_key, root, invalid_actions, params, tree)
        else:
            gumbel = mctx.gumbel_muzero_policy(
                variables,
                search_key,
                root,
                self.recurrent_fn,
                self.num_simulations,
                invalid_actions=invalid_actions,
                max_num_considered_actions=self.max_num_considered_actions,
                gumbel_scale=params.gumbel_scale,
                qtransform=functools.partial(
                    mctx.qtransform_completed_by_mix_value, value_scale=self.gumbel_value_scale
                ),
            )
            search_tree = gumbel.search_tree
        summary = search_tree.summary()
        if gumbel is not None:  # sequential halving's move, the improved policy the target
            action, policy = gumbel.action.astype(jnp.int32), gumbel.action_weights
        else:  # PUCT: the most visited legal move, the visit shares the target
            policy = jnp.where(states.legal_action_mask, summary.visit_probs, 0.0)
            action = jnp.argmax(policy, axis=-1).astype(jnp.int32)
            if self.forced_playouts:  # the move stays the most visited; the target is pruned
                policy = pruned_policy(
                    search_tree, self.forced_playouts, params.pb_c_init, params.pb_c_base,
                    self.qtransform,
                )  # fmt: skip
        return SearchOutput(
            action=action,
            action_weights=jnp.where(states.legal_action_mask, policy, 0.0),
            value=summary.value,
            tree=search_tree if self.return_tree else None,
            action_value=take(summary.qvalues, action),
        )

    def puct(self, variables, key, root, invalid_actions, params, tree):
        """PUCT search from `tree` (mctx's `muzero_policy` and `search`, with the root taken
        from the tree where it holds one): the same keys, noise and steps as mctx, so an
        empty tree gives mctx's own result (tests/core/test_tree_reuse.py). Every node
        chooses by `puct_selection`; forced playouts change the root's choice."""
        _, noise_key, key = jax.random.split(key, 3)
        batch_size = root.value.shape[0]
        carried = tree.node_visits[:, mctx.Tree.ROOT_INDEX] > 0
        raw_prior = jnp.where(
            carried[:, None], tree.children_prior_logits[:, mctx.Tree.ROOT_INDEX], root.prior_logits
        )
        probs = jax.nn.softmax(raw_prior)
        noise = jax.random.dirichlet(
            noise_key,
            alpha=jnp.full([probs.shape[-1]], fill_value=params.dirichlet_alpha),
            shape=(batch_size,),
        )
        noisy = (1 - params.dirichlet_fraction) * probs + params.dirichlet_fraction * noise
        noisy = jnp.log(jnp.maximum(noisy, jnp.finfo(noisy.dtype).tiny))
        noisy = noisy - jnp.max(noisy, axis=-1, keepdims=True)
        prior = jnp.where(invalid_actions, jnp.finfo(noisy.dtype).min, noisy)
        root_index = jnp.zeros(batch_size, jnp.int32)
        fresh = mctx_vendored.update_tree_node(
            empty_like(tree), root_index, prior, root.value, root.embedding
        )
        kept = tree.replace(children_prior_logits=tree.children_prior_logits.at[:, 0].set(prior))
        tree = select_rows(carried, kept, fresh).replace(root_invalid_actions=invalid_actions)

        select = puct_selection(params, self.qtransform)
        root_select = select
        if self.forced_playouts:
            root_select = root_selection(select, self.forced_playouts)
        action_selection = mctx_vendored.switching_action_selection_wrapper(
            root_action_selection_fn=functools.partial(root_select, depth=0),
            interior_action_selection_fn=select,
        )
        used = jnp.sum(tree.node_visits > 0, axis=1, dtype=jnp.int32)  # [B] nodes in use
        batch_range = jnp.arange(batch_size)
        max_depth = self.num_nodes - 1

        def simulation(index, loop_state):
            key, tree = loop_state
            key, simulate_key, expand_key = jax.random.split(key, 3)
            parent, action = mctx_vendored.simulate(
                jax.random.split(simulate_key, batch_size), tree, action_selection, max_depth
            )
            node = tree.children_index[batch_range, parent, action]
            node = jnp.where(node == mctx.Tree.UNVISITED, used + index, node)
            tree = mctx_vendored.expand(
                variables, expand_key, tree, self.recurrent_fn, parent, action, node
            )
            return key, mctx_vendored.backward(tree, node)

        _, tree = jax.lax.fori_loop(0, self.num_simulations, simulation, (key, tree))
        return tree

    def empty_tree(self, states: State) -> mctx.Tree:
        """A tree [B] holding nothing, for the states [B] a search starts from."""
        batch_size = states.terminated.shape[0]
        nodes, actions = self.num_nodes, self.game.num_actions
        batch_node, batch_node_action = (batch_size, nodes), (batch_size, nodes, actions)
        return mctx.Tree(
            node_visits=jnp.zeros(batch_node, jnp.int32),
            raw_values=jnp.zeros(batch_node, jnp.float32),
            node_values=jnp.zeros(batch_node, jnp.float32),
            parents=jnp.full(batch_node, mctx.Tree.NO_PARENT, jnp.int32),
            action_from_parent=jnp.full(batch_node, mctx.Tree.NO_PARENT, jnp.int32),
            children_index=jnp.full(batch_node_action, mctx.Tree.UNVISITED, jnp.int32),
            children_prior_logits=jnp.zeros(batch_node_action, jnp.float32),
            children_values=jnp.zeros(batch_node_action, jnp.float32),
            children_visits=jnp.zeros(batch_node_action, jnp.int32),
            children_rewards=jnp.zeros(batch_node_action, jnp.float32),
            children_discounts=jnp.zeros(batch_node_action, jnp.float32),
            embeddings=jax.tree.map(
                lambda x: jnp.zeros((batch_size, nodes, *x.shape[1:]), x.dtype), states
            ),
            root_invalid_actions=jnp.zeros((batch_size, actions), bool),
            extra_data=None,
        )

    def advance(self, tree: mctx.Tree, actions: Array) -> mctx.Tree:
        """The subtrees [B] under `actions` [B] played at the roots (by either side): the
        next search's trees, with their visits and values. A move the tree never expanded
        gives an empty tree."""
        child = jax.vmap(lambda children, action: children[mctx.Tree.ROOT_INDEX, action])(
            tree.children_index, actions
        )
        return subtree(tree, child, self.reuse_nodes)

    def reroot(self, tree: mctx.Tree, states: State) -> mctx.Tree:
        """The subtrees [B] rooted at the node holding `states` [B] (the lowest-numbered
        such node: the root, a child, a grandchild, ...); empty where none does. For callers
        that do not follow the moves one by one (`Agent.act`, the protocols): a position
        searched before, or reached by moves the tree expanded, keeps its statistics. The
        tree may come from a search of another budget: the result has this search's size."""

        def find(embeddings, visits, state):
            equal = jax.tree.map(
                lambda nodes, x: jnp.all((nodes == x).reshape(nodes.shape[0], -1), axis=1),
                embeddings,
                state,
            )
            match = functools.reduce(jnp.logical_and, jax.tree.leaves(equal)) & (visits > 0)
            return jnp.where(jnp.any(match), jnp.argmax(match), mctx.Tree.UNVISITED)

        node = jax.vmap(find)(tree.embeddings, tree.node_visits, states)
        return subtree(tree, node.astype(jnp.int32), self.reuse_nodes, self.num_nodes)
