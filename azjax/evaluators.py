"""The evaluators a search is built from: `evaluate(params, states [B], key) -> (logits
[B, A], value [B])`, the prior and the value for the player to move. AlphaZero's is the
network (`network_evaluator`); the pure-MCTS baseline's a uniform prior and the outcome of a
random playout (`rollout_evaluator`)."""

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import Game, State
from azjax.games.base import random_legal_action
from azjax.networks import Network
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
