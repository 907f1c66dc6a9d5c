"""Self-play labels every position with its own game's outcome, exactly once.

A scripted "search" (always the lowest legal move) makes Tic-tac-toe games whose result is
worked out by hand: X plays 0, 2, 4, 6 and O plays 1, 3, 5, so X completes the 2-4-6
diagonal on the 7th ply:

    X O X
    O X O
    X . .
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from azjax import games, replay, selfplay
from azjax.types import SearchOutput

TTT = games.make("tic_tac_toe")


class SelfPlay(NamedTuple):
    init: object  # init(key) -> SelfPlayState
    run: object  # run(variables, state, key) -> (SelfPlayState, SelfPlayOutput)


def make_selfplay(game, search, *, batch_size, num_steps, temperature_moves):
    """The module's functions with the static settings of one test bound."""
    return SelfPlay(
        init=functools.partial(selfplay.init, game, batch_size=batch_size),
        run=functools.partial(
            selfplay.run, game, search, num_steps=num_steps, temperature_moves=temperature_moves
        ),
    )


def lowest_legal_search(params, states, key):
    del params, key
    action = jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)
    weights = jax.nn.one_hot(action, TTT.num_actions)
    return SearchOutput(action=action, action_weights=weights, value=jnp.zeros(action.shape))


def random_search(params, states, key):
    del params
    logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
    action = jax.random.categorical(key, logits).astype(jnp.int32)
    weights = states.legal_action_mask / states.legal_action_mask.sum(-1, keepdims=True)
    return SearchOutput(action=action, action_weights=weights, value=jnp.zeros(action.shape))


def test_value_targets_of_a_scripted_game_spanning_three_calls():
    selfplay = make_selfplay(
        TTT, lowest_legal_search, batch_size=2, num_steps=3, temperature_moves=0
    )
    run = jax.jit(selfplay.run)
    state = selfplay.init(jax.random.PRNGKey(0))
    outputs = []
    for call in range(3):
        state, output = run(None, state, jax.random.PRNGKey(call))
        outputs.append(output)
    # Plies 1-3 and 4-6 end no game: nothing labelled yet, all of it pending.
    assert int(outputs[0].valid.sum()) == 0 and int(outputs[1].valid.sum()) == 0
    assert int(outputs[0].num_games) == 0 and int(outputs[1].num_games) == 0
    # Ply 7 (first ply of call 3) ends both games: 7 positions each, X to move at even plies.
    last = outputs[2]
    assert int(last.num_games) == 2 and int(last.first_player_wins) == 2
    assert int(last.total_game_length) == 14
    values = np.asarray(last.batch.value)[np.asarray(last.valid)]
    np.testing.assert_array_equal(values, [1, -1, 1, -1, 1, -1, 1] * 2)
    # The stored observations are the positions of that game, in order.
    expected_obs, game_state = [], TTT.init(jax.random.PRNGKey(0))
    for move in [0, 1, 2, 3, 4, 5, 6]:
        expected_obs.append(TTT.observe(game_state))
        game_state = TTT.step(game_state, move)
    stored = np.asarray(last.batch.obs)[np.asarray(last.valid)]
    np.testing.assert_array_equal(stored[:7], np.stack(expected_obs))
    np.testing.assert_array_equal(stored[7:], np.stack(expected_obs))
    # Plies 2-3 of call 3 belong to the next games and wait for their end.
    np.testing.assert_array_equal(state.num_pending, [2, 2])


def test_no_position_lost_or_duplicated_across_calls():
    batch_size, num_steps, calls = 16, 5, 12
    selfplay = make_selfplay(
        TTT, random_search, batch_size=batch_size, num_steps=num_steps, temperature_moves=9
    )
    run = jax.jit(selfplay.run)
    state = selfplay.init(jax.random.PRNGKey(0))
    labelled, games_ended, plies_of_ended = 0, 0, 0
    buffer = replay.init(4096, TTT.observation_shape, TTT.num_actions)
    for call in range(calls):
        state, output = run(None, state, jax.random.PRNGKey(call))
        labelled += int(output.valid.sum())
        games_ended += int(output.num_games)
        plies_of_ended += int(output.total_game_length)
        values = np.asarray(output.batch.value)[np.asarray(output.valid)]
        assert set(np.unique(values)) <= {-1.0, 0.0, 1.0}
        buffer = replay.add(buffer, output.batch, output.valid)
    # Every ply played is either labelled (its game ended) or pending (its game runs on).
    assert labelled + int(state.num_pending.sum()) == batch_size * num_steps * calls
    # Labelled positions are exactly the plies of the games that ended.
    assert labelled == plies_of_ended
    assert int(buffer.size) == labelled
    # The pending positions of each slot are the plies of its running game so far.
    np.testing.assert_array_equal(
        state.num_pending,
        np.where(np.asarray(state.games.terminated), 0, np.asarray(state.games.step_count)),
    )


def test_outcome_labels_alternate_within_each_game():
    """Within a game X's positions carry X's result and O's the opposite; the last mover
    never loses (a Tic-tac-toe game ends with a win for the mover or a draw)."""
    batch_size, num_steps = 64, 9
    selfplay = make_selfplay(
        TTT, random_search, batch_size=batch_size, num_steps=num_steps, temperature_moves=9
    )
    state = selfplay.init(jax.random.PRNGKey(1))
    state, output = jax.jit(selfplay.run)(None, state, jax.random.PRNGKey(3))
    length = TTT.max_episode_length + num_steps
    valid = np.asarray(output.valid).reshape(batch_size, length)
    obs = np.asarray(output.batch.obs).reshape(batch_size, length, *TTT.observation_shape)
    values = np.asarray(output.batch.value).reshape(batch_size, length)
    checked_games = 0
    for slot in range(batch_size):
        games_in_slot = []
        for index in np.flatnonzero(valid[slot]):
            if obs[slot, index].sum() == 0:  # the empty board starts a game
                games_in_slot.append([])
            games_in_slot[-1].append(values[slot, index])
        for game_values in games_in_slot:
            game_values = np.asarray(game_values)
            np.testing.assert_array_equal(game_values[1:], -game_values[:-1])
            assert game_values[-1] >= 0
            checked_games += 1
    assert checked_games == int(output.num_games) > 0
