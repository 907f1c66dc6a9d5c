"""Batched self-play: B games in lockstep under one `lax.scan`, carried across iterations.

Each call plays `num_steps` plies in every one of `batch_size` game slots. A finished game
restarts in place at the next ply. Every position is written to the replay buffer as it is
played (compact, see `replay`), and labelled there with its own game's outcome when that
game ends, in this call or a later one: a running game keeps no copy of its positions, and
every position is labelled exactly once.
"""

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from azjax import replay
from azjax.games import Game, State
from azjax.replay import ReplayBuffer
from azjax.types import Array, PRNGKey, SearchOutput


@struct.dataclass
class SelfPlayState:
    """Everything self-play carries from one call to the next: the game in each slot [B].

    The positions of a running game are in the replay buffer, unlabelled; there are
    `num_pending` of them (its plies so far).
    """

    games: State  # [B]

    @property
    def num_pending(self) -> Array:
        """[B] int32 positions of each slot's running game, waiting for its outcome."""
        return jnp.where(self.games.terminated, 0, self.games.step_count).astype(jnp.int32)


class SelfPlayOutput(NamedTuple):
    """Statistics of a call."""

    num_labelled: Array  # [] int32 positions labelled (the plies of the games that ended)
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
    """Starts `batch_size` games (B)."""
    return SelfPlayState(jax.vmap(game.init)(jax.random.split(key, batch_size)))


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

    Returns the next states [B] and (states searched, ended, rewards, step_count, search
    output) of the ply.
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
    ended = next_states.terminated
    return next_states, (states, ended, next_states.rewards, next_states.step_count, output)


def run(
    game: Game,
    search: Callable[..., SearchOutput],
    variables,
    state: SelfPlayState,
    buffer: ReplayBuffer,
    key: PRNGKey,
    *,
    num_steps: int,
    temperature_moves: int,
    sample_search_action: bool = False,
    write: Callable | None = None,
) -> tuple[SelfPlayState, ReplayBuffer, SelfPlayOutput]:
    """Plays `num_steps` plies (T) in every slot, writing each position to `buffer` and
    labelling the positions of the games that end.

    Args:
      game: the game.
      search: `search(variables, states [B], key) -> SearchOutput` (with exploration noise).
      variables: the network variables the search evaluates with.
      state: the games in progress (`init`).
      buffer: the replay buffer the positions go to.
      key: randomness of this call.
      num_steps: T, plies per call (static).
      temperature_moves: for the first k plies of a game the move is sampled from the
        search policy (temperature 1), afterwards it is the policy's argmax.
      sample_search_action: in the first k plies play the search's own `action` instead of
        sampling from its policy (Gumbel search, whose action already carries noise).
      write: `replay.write` with its static settings bound, sharded over the devices when
        there is a mesh (`steps.play_step` passes it); default: one unsharded ring.
    """
    write = write or functools.partial(replay.write, max_length=game.max_episode_length)
    encode = jax.vmap(game.encode_observation)
    observe = jax.vmap(game.observe)

    def scan_ply(carry, ply_key):
        states, buffer = carry
        next_states, (searched, ended, rewards, lengths, output) = play_ply(
            game,
            search,
            variables,
            states,
            ply_key,
            temperature_moves=temperature_moves,
            sample_search_action=sample_search_action,
        )
        buffer, labelled = write(
            buffer,
            encode(observe(searched)),
            output.action_weights,
            searched.current_player,
            ended,
            rewards,
            lengths,
        )
        stats = (
            labelled,
            jnp.sum(ended, dtype=jnp.int32),
            jnp.sum(jnp.where(ended, lengths, 0), dtype=jnp.int32),
            jnp.sum(ended & (rewards[:, 0] > 0), dtype=jnp.int32),
            jnp.sum(ended & (rewards[:, 1] > 0), dtype=jnp.int32),
            jnp.mean(output.value),
        )
        return (next_states, buffer), stats

    (games, buffer), stats = jax.lax.scan(
        scan_ply, (state.games, buffer), jax.random.split(key, num_steps)
    )
    labelled, ended, lengths, first_wins, second_wins, root_value = stats
    output = SelfPlayOutput(
        num_labelled=jnp.sum(labelled),
        num_games=jnp.sum(ended),
        total_game_length=jnp.sum(lengths),
        first_player_wins=jnp.sum(first_wins),
        second_player_wins=jnp.sum(second_wins),
        root_value=jnp.mean(root_value),
    )
    return SelfPlayState(games), buffer, output
