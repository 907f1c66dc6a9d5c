"""Self-play's own rules beside the game's: how a move is chosen from the search
(`choose_action`: sampled for the first `selfplay.temperature_moves` plies), and, each off by
default, where games start (`selfplay.handicap_starts`), moves played at random
(`selfplay.random_move_fraction`) and games ended by a lasting lead
(`selfplay.win_adjudication`). Evaluations, matches and the
protocols play by the game's rules alone. All functions are batched over B games.
"""

import jax
import jax.numpy as jnp

from azjax.games import Game, State
from azjax.types import Array, PRNGKey, SearchOutput


def where_rows(condition: Array, new, old):
    """`new` in the rows [B] where `condition` holds, `old` elsewhere, leaf by leaf."""
    return jax.tree.map(
        lambda a, b: jnp.where(condition.reshape((-1,) + (1,) * (a.ndim - 1)), a, b), new, old
    )


def start_games(game: Game, key: PRNGKey, batch_size: int, handicap_starts: float = 0.0):
    """`batch_size` new games: the start position, or with probability `handicap_starts`
    (static) a handicap start (`game.handicap_init`: pieces taken off at random). The
    handicap draws use keys of their own, so that runs without it start as they did."""
    games = jax.vmap(game.init)(jax.random.split(key, batch_size))
    if handicap_starts <= 0:
        return games
    take_key, start_key = jax.random.split(jax.random.fold_in(key, 1))
    handicapped = jax.vmap(game.handicap_init)(jax.random.split(start_key, batch_size))
    take = jax.random.uniform(take_key, (batch_size,)) < handicap_starts
    return where_rows(take, handicapped, games)


def random_moves(action: Array, states: State, key: PRNGKey, fraction: float) -> Array:
    """`action` [B] with each move replaced, with probability `fraction`, by a legal move
    drawn uniformly (epsilon-greedy exploration)."""
    take_key, move_key = jax.random.split(key)
    take = jax.random.uniform(take_key, action.shape) < fraction
    logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
    uniform = jax.random.categorical(move_key, logits, axis=-1).astype(jnp.int32)
    return jnp.where(take, uniform, action)


def adjudicate_wins(game: Game, states: State, next_games: State, margin: float):
    """Ends as a win for the leader the live games whose `adjudicate` score one side led by
    `margin` both before and after this ply; returns them and which were ended [B]."""
    before = jax.vmap(game.adjudicate)(states)[:, 0]
    after = jax.vmap(game.adjudicate)(next_games)[:, 0]
    lead = jnp.where((before >= margin) & (after >= margin), 1.0, 0.0)
    lead = jnp.where((before <= -margin) & (after <= -margin), -1.0, lead)
    adjudicated = ~states.terminated & ~next_games.terminated & (lead != 0)
    won = next_games.replace(
        terminated=jnp.ones_like(next_games.terminated),
        rewards=jnp.stack([lead, -lead], axis=-1).astype(next_games.rewards.dtype),
        legal_action_mask=jnp.zeros_like(next_games.legal_action_mask),
    )
    return where_rows(adjudicated, won, next_games), adjudicated


def choose_action(
    output: SearchOutput,
    states: State,
    key: PRNGKey,
    temperature_moves: int,
    *,
    sample_search_action: bool = False,
) -> Array:
    """The self-play move [B] int32 for searched `states` [B].

    For the first `temperature_moves` plies of a game the move is sampled from the search
    policy (temperature 1), or is the search's own `action` with `sample_search_action`
    (Gumbel search, whose action already carries noise); afterwards the policy's argmax.
    """
    if sample_search_action:
        explore_action = output.action
    else:
        explore_action = jax.random.categorical(
            key, jnp.log(output.action_weights + 1e-30), axis=-1
        )
    greedy_action = jnp.argmax(output.action_weights, axis=-1)
    action = jnp.where(states.step_count < temperature_moves, explore_action, greedy_action)
    return action.astype(jnp.int32)
