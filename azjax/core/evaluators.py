"""The evaluators a search is built from: `evaluate(params, states [B], key) -> (logits
[B, A], value [B])`, the prior and the value for the player to move. AlphaZero's is the
network (`network_evaluator`); the pure-MCTS baseline's a uniform prior and the outcome of a
random playout (`rollout_evaluator`). `with_immediate_wins` adds one ply of lookahead for
wins to either (`search.win_check`)."""

import jax
import jax.numpy as jnp
import numpy as np

from azjax.core.networks import Network
from azjax.games import Game, State
from azjax.games.base import random_legal_action
from azjax.types import Array, Evaluator, PRNGKey


def network_evaluator(game: Game, network: Network, *, symmetric: bool = False) -> Evaluator:
    """Prior and value from the network (inference mode); `params` are `networks.Variables`.

    `symmetric`: each state is seen through one of the board's symmetries drawn at random
    (`game.apply_symmetry`; AlphaGo Zero's evaluation), and its prior mapped back, so that
    the search averages the network's view over the symmetries instead of trusting one.
    """

    def evaluate(variables, states: State, key: PRNGKey) -> tuple[Array, Array]:
        obs = jax.vmap(game.observe)(states)  # [B, H, W, C]
        if not (symmetric and game.symmetries > 1):
            logits, value, _ = network.apply(variables, obs, False)
            return logits, value
        index = jax.random.randint(key, (obs.shape[0],), 0, game.symmetries)
        dummy = jnp.zeros((obs.shape[0], game.num_actions), jnp.float32)
        seen, _ = jax.vmap(game.apply_symmetry)(obs, dummy, index)
        logits, value, _ = network.apply(variables, seen, False)
        # apply_symmetry takes p to p[perm]; the network's logits over the transformed
        # board's actions come back through the inverse permutation.
        inverse = jnp.asarray(np.argsort(game.action_permutations(), axis=-1))[index]  # [B, A]
        return jnp.take_along_axis(logits, inverse, axis=-1), value

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


def with_immediate_wins(game: Game, evaluate: Evaluator) -> Evaluator:
    """`evaluate` with one ply of lookahead for the player to move (`search.win_check`).

    Every legal move of each state is played; where one ends the game won, the state's value
    is that win's reward and its prior is shared among the winning moves alone (the others'
    logits at the lowest float), so the search plays the win at once, and a move into such a
    state is valued as the loss it is on its first visit. Without it a reply the prior
    all but rules out goes unvisited: Othello 8x8's zoo agent, 200 simulations, walked into
    10-ply wipeouts whose last move had a prior of 0.002-0.007 (docs/results.md). It costs
    `game.num_actions` game steps per evaluated state.
    """

    def wins(state: State) -> tuple[Array, Array]:
        actions = jnp.arange(game.num_actions, dtype=jnp.int32)
        after = jax.vmap(game.step, in_axes=(None, 0))(state, actions)
        reward = after.rewards[:, state.current_player]  # [A] for the player who moved
        return state.legal_action_mask & after.terminated & (reward > 0), reward

    def evaluate_with_wins(params, states: State, key: PRNGKey) -> tuple[Array, Array]:
        logits, value = evaluate(params, states, key)
        winning, reward = jax.vmap(wins)(states)  # [B, A]
        any_win = winning.any(axis=-1)
        lowest = jnp.finfo(logits.dtype).min
        logits = jnp.where(any_win[:, None], jnp.where(winning, 0.0, lowest), logits)
        value = jnp.where(any_win, jnp.max(jnp.where(winning, reward, -jnp.inf), axis=-1), value)
        return logits, value.astype(jnp.float32)

    return evaluate_with_wins
