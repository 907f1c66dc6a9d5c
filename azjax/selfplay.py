"""Batched self-play: B games in lockstep under one `lax.scan`, carried across iterations.

Each call plays `num_steps` plies in every one of `batch_size` game slots. A finished game
restarts in place at the next ply. A game still running when the call ends keeps its
state, and its positions so far wait in `SelfPlayState.pending` until the game ends in a
later call: every position leaves self-play exactly once, labelled with the real outcome
of its own game.
"""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from azjax.games import Game, State
from azjax.types import Array, Batch, PRNGKey, Records, SearchOutput


@struct.dataclass
class SelfPlayState:
    """Everything self-play carries from one call to the next."""

    games: State  # [B] the game in each slot
    pending: Records  # [B, L] positions of each slot's unfinished game, left-aligned
    num_pending: Array  # [B] int32 how many of `pending` are in use


class SelfPlayOutput(NamedTuple):
    """Labelled positions of the games that ended, and statistics of the call."""

    batch: Batch  # [B * (L + T)] candidate positions (obs, policy, value target)
    valid: Array  # [B * (L + T)] bool, True for positions whose game ended in this call
    num_games: Array  # [] int32 games that ended in this call
    total_game_length: Array  # [] int32 plies of the games that ended
    first_player_wins: Array  # [] int32
    second_player_wins: Array  # [] int32
    root_value: Array  # [] float32 mean searched root value


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


def init(game: Game, key: PRNGKey, *, batch_size: int) -> SelfPlayState:
    """Starts `batch_size` games (B) with nothing pending."""
    games = jax.vmap(game.init)(jax.random.split(key, batch_size))
    obs = jax.vmap(game.observe)(games)
    max_length = game.max_episode_length
    pending = Records(
        obs=jnp.zeros((batch_size, max_length, *obs.shape[1:]), obs.dtype),
        policy=jnp.zeros((batch_size, max_length, game.num_actions), jnp.float32),
        player=jnp.zeros((batch_size, max_length), jnp.int32),
    )
    return SelfPlayState(games, pending, jnp.zeros(batch_size, jnp.int32))


def play_ply(
    game: Game,
    search: Callable[..., SearchOutput],
    variables,
    states: State,
    key: PRNGKey,
    *,
    temperature_moves: int,
    sample_search_action: bool = False,
):
    """One ply in every slot [B]: restart finished games, search, choose and play a move.

    Returns the next states [B] and (record, ended, rewards, step_count, search output) of
    the ply.
    """
    batch_size = states.terminated.shape[0]
    reset_key, search_key, sample_key = jax.random.split(key, 3)
    fresh = jax.vmap(game.init)(jax.random.split(reset_key, batch_size))
    states = jax.tree.map(
        lambda new, old: jnp.where(
            states.terminated.reshape((-1,) + (1,) * (old.ndim - 1)), new, old
        ),
        fresh,
        states,
    )
    output = search(variables, states, search_key)
    action = choose_action(
        output, states, sample_key, temperature_moves, sample_search_action=sample_search_action
    )
    next_states = jax.vmap(game.step)(states, action)
    record = Records(
        obs=jax.vmap(game.observe)(states),
        policy=output.action_weights,
        player=states.current_player,
    )
    ended = next_states.terminated
    return next_states, (record, ended, next_states.rewards, next_states.step_count, output)


def _label(records: Records, valid: Array, ended: Array, rewards: Array) -> Array:
    """Value targets [L+T] of one slot's sequence; NaN where the game has not ended."""

    def backward(carry, x):
        known, outcome = carry
        ended_i, rewards_i, player_i = x
        known = known | ended_i
        outcome = jnp.where(ended_i, rewards_i, outcome)
        target = jnp.where(known, outcome[player_i], jnp.nan)
        return (known, outcome), target

    init_carry = (jnp.zeros((), bool), jnp.zeros(2, jnp.float32))
    _, targets = jax.lax.scan(backward, init_carry, (ended, rewards, records.player), reverse=True)
    return jnp.where(valid, targets, jnp.nan)


def _compact(records: Records, keep: Array, max_length: int) -> tuple[Records, Array]:
    """Moves the kept rows of one slot's [L+T] sequence to the front of an [L] buffer."""
    slots = jnp.where(keep, jnp.cumsum(keep.astype(jnp.int32)) - 1, max_length)
    pending = jax.tree.map(
        lambda x: jnp.zeros((max_length, *x.shape[1:]), x.dtype).at[slots].set(x, mode="drop"),
        records,
    )
    return pending, jnp.sum(keep.astype(jnp.int32))


def run(
    game: Game,
    search: Callable[..., SearchOutput],
    variables,
    state: SelfPlayState,
    key: PRNGKey,
    *,
    num_steps: int,
    temperature_moves: int,
    sample_search_action: bool = False,
) -> tuple[SelfPlayState, SelfPlayOutput]:
    """Plays `num_steps` plies (T) in every slot and labels the positions of games that ended.

    Args:
      game: the game.
      search: `search(variables, states [B], key) -> SearchOutput` (with exploration noise).
      variables: the network variables the search evaluates with.
      state: the games in progress and their pending positions (`init`).
      key: randomness of this call.
      num_steps: T, plies per call (static).
      temperature_moves: for the first k plies of a game the move is sampled from the
        search policy (temperature 1), afterwards it is the policy's argmax.
      sample_search_action: in the first k plies play the search's own `action` instead of
        sampling from its policy (Gumbel search, whose action already carries noise).
    """
    batch_size = state.num_pending.shape[0]
    max_length = game.max_episode_length

    def scan_ply(states, ply_key):
        return play_ply(
            game,
            search,
            variables,
            states,
            ply_key,
            temperature_moves=temperature_moves,
            sample_search_action=sample_search_action,
        )

    games, (records, ended, rewards, lengths, search_out) = jax.lax.scan(
        scan_ply, state.games, jax.random.split(key, num_steps)
    )
    # Per slot: pending positions of the running game, then this call's T plies.
    swap = lambda x: jnp.swapaxes(x, 0, 1)  # noqa: E731  [T, B, ...] -> [B, T, ...]
    sequence = jax.tree.map(
        lambda old, new: jnp.concatenate([old, swap(new)], axis=1), state.pending, records
    )
    valid = jnp.concatenate(
        [
            jnp.arange(max_length)[None, :] < state.num_pending[:, None],
            jnp.ones((batch_size, num_steps), bool),
        ],
        axis=1,
    )
    ended_seq = jnp.concatenate([jnp.zeros((batch_size, max_length), bool), swap(ended)], 1)
    rewards_seq = jnp.concatenate(
        [jnp.zeros((batch_size, max_length, 2), jnp.float32), swap(rewards)], axis=1
    )
    targets = jax.vmap(_label)(sequence, valid, ended_seq, rewards_seq)  # [B, L+T]
    labelled = valid & ~jnp.isnan(targets)
    pending, num_pending = jax.vmap(_compact, in_axes=(0, 0, None))(
        sequence, valid & ~labelled, max_length
    )

    flat = lambda x: x.reshape((-1, *x.shape[2:]))  # noqa: E731
    batch = Batch(
        obs=flat(sequence.obs),
        policy=flat(sequence.policy),
        value=flat(jnp.nan_to_num(targets)),
    )
    first_wins = jnp.sum(ended & (rewards[..., 0] > 0))
    second_wins = jnp.sum(ended & (rewards[..., 1] > 0))
    output = SelfPlayOutput(
        batch=batch,
        valid=flat(labelled),
        num_games=jnp.sum(ended.astype(jnp.int32)),
        total_game_length=jnp.sum(jnp.where(ended, lengths, 0)),
        first_player_wins=first_wins.astype(jnp.int32),
        second_player_wins=second_wins.astype(jnp.int32),
        root_value=jnp.mean(search_out.value),
    )
    return SelfPlayState(games, pending, num_pending), output
