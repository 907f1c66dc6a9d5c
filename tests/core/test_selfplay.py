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
import pytest
from conftest import scripted_search, tiny_config

from azjax import games
from azjax.config import build
from azjax.core import replay, selfplay
from azjax.types import SearchOutput, UserError

TTT = games.make("tic_tac_toe")


class SelfPlay(NamedTuple):
    init: object  # init(key) -> (SelfPlayState, ReplayBuffer)
    run: object  # run(variables, state, buffer, key) -> (SelfPlayState, ReplayBuffer, output)


def make_selfplay(game, search, *, batch_size, num_steps, temperature_moves, capacity):
    """The module's functions with the static settings of one test bound."""

    def init(key):
        stored = game.encode_observation(game.observe(game.init(key)))
        buffer = replay.init(capacity, stored.shape, game.num_actions, stored.dtype)
        return selfplay.init(game, key, batch_size=batch_size), buffer

    return SelfPlay(
        init=init,
        run=functools.partial(
            selfplay.run, game, search, num_steps=num_steps, temperature_moves=temperature_moves
        ),
    )


def lowest_legal(states, key):
    del key
    action = jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)
    weights = jax.nn.one_hot(action, TTT.num_actions)
    return SearchOutput(action=action, action_weights=weights, value=jnp.zeros(action.shape))


LOWEST_LEGAL = scripted_search(TTT, lowest_legal)  # always the lowest legal move
UNIFORM = scripted_search(TTT)  # a uniformly random legal move


def test_value_targets_of_a_scripted_game_spanning_three_calls():
    # The ring holds exactly the running games' positions: 2 slots x 9 plies.
    selfplay = make_selfplay(
        TTT, LOWEST_LEGAL, batch_size=2, num_steps=3, temperature_moves=0, capacity=18
    )
    run = jax.jit(selfplay.run)
    state, buffer = selfplay.init(jax.random.PRNGKey(0))
    outputs = []
    for call in range(3):
        state, buffer, output = run(None, state, buffer, jax.random.PRNGKey(call))
        outputs.append(output)
    # Plies 1-3 and 4-6 end no game: nothing labelled yet, all of it waiting in the ring.
    assert int(outputs[0].num_labelled) == 0 and int(outputs[1].num_labelled) == 0
    assert int(outputs[0].num_games) == 0 and int(outputs[1].num_games) == 0
    # Ply 7 (first ply of call 3) ends both games: 7 positions each, X to move at even plies.
    last = outputs[2]
    assert int(last.num_games) == 2 and int(last.first_player_wins) == 2
    assert int(last.total_game_length) == 14 and int(last.num_labelled) == 14
    # Slot j's ply p is at ring index 2p + j (replay's layout).
    values = np.asarray(buffer.value).reshape(9, 2)
    np.testing.assert_array_equal(values[:7].T, [[1, -1, 1, -1, 1, -1, 1]] * 2)
    # Plies 8-9 (call 3's last two) belong to the next games and wait for their end.
    assert np.isnan(values[7:]).all()
    np.testing.assert_array_equal(state.num_pending, [2, 2])
    assert int(buffer.size) == 14
    # The stored observations are the positions of that game, in order, decoded exactly.
    expected_obs, game_state = [], TTT.init(jax.random.PRNGKey(0))
    for move in [0, 1, 2, 3, 4, 5, 6]:
        expected_obs.append(TTT.observe(game_state))
        game_state = TTT.step(game_state, move)
    stored = TTT.decode_observation(buffer.obs).reshape(9, 2, *TTT.observation_shape)
    for slot in range(2):
        np.testing.assert_array_equal(stored[:7, slot], np.stack(expected_obs))
    assert buffer.obs.dtype == jnp.uint8 and buffer.policy.dtype == jnp.bfloat16


def play_log(batch_size, num_steps, calls, capacity, seed=0):
    """Self-play of random Tic-tac-toe into a ring of `capacity`; returns the final buffer,
    state and the outputs of the calls."""
    selfplay = make_selfplay(
        TTT,
        UNIFORM,
        batch_size=batch_size,
        num_steps=num_steps,
        temperature_moves=9,
        capacity=capacity,
    )
    run = jax.jit(selfplay.run)
    state, buffer = selfplay.init(jax.random.PRNGKey(seed))
    outputs = []
    for call in range(calls):
        state, buffer, output = run(None, state, buffer, jax.random.PRNGKey(100 * seed + call))
        outputs.append(output)
    return jax.device_get(buffer), state, outputs


def test_every_position_is_labelled_once_with_its_own_games_outcome():
    """An independent check of every label: with a ring larger than all plies played, slot
    j's ply p is at index p * B + j, so each slot's positions can be read back in order,
    split into games at the empty board, their moves recovered from consecutive boards and
    replayed with the game's rules; each position's label must be that replay's outcome for
    its mover, and a running game's positions must be unlabelled."""
    batch_size, num_steps, calls = 8, 5, 6
    plies = num_steps * calls
    buffer, state, outputs = play_log(batch_size, num_steps, calls, capacity=batch_size * plies)
    obs = np.asarray(TTT.decode_observation(buffer.obs)).reshape(plies, batch_size, 3, 3, 2)
    values = np.asarray(buffer.value).reshape(plies, batch_size)
    labelled = ended = 0
    for slot in range(batch_size):
        starts = [p for p in range(plies) if obs[p, slot].sum() == 0]
        for first, end in zip(starts, [*starts[1:], None], strict=True):
            positions = list(range(first, plies if end is None else end))
            game_state = TTT.init(jax.random.PRNGKey(0))
            for ply in positions:
                # Planes: the mover's stones, then the opponent's; the next position's
                # opponent stones (from the next mover's view) are the mover's plus one.
                if ply + 1 in positions:
                    before = obs[ply, slot, :, :, 0].reshape(-1)
                    after = obs[ply + 1, slot, :, :, 1].reshape(-1)
                    move = int(np.flatnonzero(after - before)[0])
                else:  # the last position of a game: the move that ended it, if it ended
                    empty = obs[ply, slot].sum(-1).reshape(-1) == 0
                    candidates = [
                        m for m in np.flatnonzero(empty) if TTT.step(game_state, m).terminated
                    ]
                    move = int(candidates[0]) if candidates else None
                if move is not None:
                    game_state = TTT.step(game_state, move)
            game_over = end is not None  # a next game started in this slot
            if game_over:
                assert bool(game_state.terminated)
                movers = [(ply - first) % 2 for ply in positions]
                expected = [float(game_state.rewards[m]) for m in movers]
                np.testing.assert_array_equal(values[positions, slot], expected)
                labelled += len(positions)
                ended += 1
            else:
                running = int(state.num_pending[slot])
                assert np.isnan(values[positions[-running:], slot]).all() if running else True
    assert labelled > 0 and ended > 0
    # Every labelled position is in a game read back above; none labelled twice.
    total_labelled = sum(int(o.num_labelled) for o in outputs)
    assert total_labelled == int(buffer.size)
    # Each slot's last game may have ended at the final ply without a successor: those are
    # labelled but not counted above, so the read-back count is at most the total.
    assert labelled <= total_labelled
    assert total_labelled == sum(int(o.total_game_length) for o in outputs)
    # Written but unlabelled: exactly the running games' positions.
    unlabelled = np.sum(np.isnan(buffer.value) & (np.asarray(buffer.player) >= 0))
    assert unlabelled == int(state.num_pending.sum())


def test_a_small_ring_labels_exactly_what_a_large_one_does():
    """The same games into the smallest ring allowed (B x max game length: it wraps many
    times) and into one large enough to keep every ply: each position the small ring still
    holds equals the large ring's at the same ply and slot (observation, policy, mover and
    label), so wrapping loses nothing of the running games and mislabels nothing."""
    batch_size, num_steps, calls = 8, 5, 8
    plies = num_steps * calls
    small_capacity = batch_size * TTT.max_episode_length
    small, _, _ = play_log(batch_size, num_steps, calls, capacity=small_capacity, seed=2)
    large, _, _ = play_log(batch_size, num_steps, calls, capacity=batch_size * plies, seed=2)
    kept_plies = small_capacity // batch_size
    for ply in range(plies - kept_plies, plies):
        for slot in range(batch_size):
            i, j = (ply * batch_size + slot) % small_capacity, ply * batch_size + slot
            np.testing.assert_array_equal(small.obs[i], large.obs[j])
            np.testing.assert_array_equal(small.policy[i], large.policy[j])
            assert small.player[i] == large.player[j]
            np.testing.assert_array_equal(small.value[i], large.value[j])  # NaN == NaN here


class AdjudicatedTicTacToe(type(TTT)):
    """Tic-tac-toe whose draws a heuristic scores 0.5 for X (player 0), -0.5 for O."""

    def adjudicate(self, state):
        del state
        return jnp.asarray([0.5, -0.5], jnp.float32)


def play_calls(game, search, *, batch_size, num_steps, calls=1, **options):
    """`selfplay.run` called `calls` times from fresh games into a buffer of twice the
    longest game per slot; `options` are the `SelfPlayRules` (temperature_moves, 0 unless
    given, goes to `run`). Returns the buffer and the last call's output."""
    temperature_moves = options.pop("temperature_moves", 0)
    rules = selfplay.SelfPlayRules(**options)
    run = jax.jit(
        functools.partial(
            selfplay.run,
            game,
            search,
            num_steps=num_steps,
            temperature_moves=temperature_moves,
            rules=rules,
        )
    )
    stored = game.encode_observation(game.observe(game.init(jax.random.PRNGKey(0))))
    capacity = batch_size * 2 * game.max_episode_length
    buffer = replay.init(capacity, stored.shape, game.num_actions, stored.dtype)
    state = selfplay.init(game, jax.random.PRNGKey(0), batch_size=batch_size)
    for call in range(calls):
        state, buffer, output = run(None, state, buffer, jax.random.PRNGKey(call + 1))
    return buffer, output


def test_draw_adjudication_labels_drawn_games_and_keeps_their_results():
    game = AdjudicatedTicTacToe()
    labels, draws, values = {}, {}, {}
    for weight in (0.0, 0.8, -0.8):
        buffer, output = play_calls(
            game,
            UNIFORM,
            batch_size=64,
            num_steps=9,
            calls=2,
            temperature_moves=9,
            draw_adjudication=weight,
        )
        values[weight] = np.asarray(buffer.value)
        labelled = values[weight][~np.isnan(values[weight])]
        labels[weight] = set(np.unique(labelled).astype(float).round(6).tolist())
        draws[weight] = int(output.num_games - output.first_player_wins - output.second_player_wins)
    # The same games (same keys): draws stay draws in the results, only their labels change.
    assert draws[0.0] == draws[0.8] > 0
    assert labels[0.0] == {-1.0, 0.0, 1.0}
    assert labels[0.8] == {-1.0, -0.4, 0.4, 1.0}  # X to move: 0.8 * 0.5; O to move: -0.4
    # A negative weight (contempt for draws) labels the same drawn positions negated.
    drawn = np.isclose(np.abs(values[0.8]), 0.4)
    np.testing.assert_array_equal(values[-0.8], np.where(drawn, -values[0.8], values[0.8]))


class CenterTicTacToe(type(TTT)):
    """Tic-tac-toe whose heuristic calls a game lost for the side holding the centre: a
    lead that lasts, unlike the side with more marks (ahead only until the reply)."""

    def adjudicate(self, state):
        lead = jnp.where(state.board[4] != 0, -0.6 * state.board[4], 0.0)
        return jnp.stack([lead, -lead]).astype(jnp.float32)


class MarksTicTacToe(type(TTT)):
    def adjudicate(self, state):
        lead = 0.9 * jnp.sum(state.board, dtype=jnp.float32)  # X: +1 a mark, O: -1
        return jnp.stack([lead, -lead])


@pytest.mark.parametrize("margin", [0.0, 0.5])
def test_win_adjudication_ends_games_at_a_lead_that_outlasts_the_reply(margin):
    """Lowest-legal play: X0 O1 X2 O3 X4 O5 X6, X wins by the rules at ply 7. X takes the
    centre with ply 5, so O leads by 0.6 before and after ply 6: adjudicated there, O wins.
    The side with more marks (lead 0.9 > margin after each X move) never leads through a
    reply, so that heuristic ends nothing."""
    outputs = {}
    for game in (CenterTicTacToe(), MarksTicTacToe()):
        buffer, output = play_calls(
            game, LOWEST_LEGAL, batch_size=2, num_steps=9, win_adjudication=margin
        )
        outputs[type(game).__name__] = output, np.asarray(buffer.value)[:12]
    center, labels = outputs["CenterTicTacToe"]
    marks, marks_labels = outputs["MarksTicTacToe"]
    assert int(marks.num_adjudicated) == 0 and int(marks.first_player_wins) == 2
    assert int(marks.total_game_length) == 14
    if margin == 0:
        assert int(center.num_adjudicated) == 0 and int(center.first_player_wins) == 2
        return
    assert int(center.num_games) == int(center.num_adjudicated) == 2
    assert int(center.second_player_wins) == 2 and int(center.total_game_length) == 12
    # Rows of 2 slots per ply, each labelled for its mover: X's positions lost, O's won.
    np.testing.assert_array_equal(labels, np.tile([-1.0, -1.0, 1.0, 1.0], 3))


def test_random_moves_replace_that_share_of_the_chosen_moves():
    """Lowest-legal play with a share of random moves: the first moves (read from the
    second positions stored) are cell 0 without them, spread over the board with all of
    them random, and about 30% off cell 0 at 0.3; the stored policy stays the search's."""
    first_moves, policies = {}, {}
    for fraction in (0.0, 0.3, 1.0):
        buffer, _ = play_calls(
            TTT, LOWEST_LEGAL, batch_size=512, num_steps=2, random_move_fraction=fraction
        )
        second = np.asarray(buffer.obs[512:1024]).reshape(512, 9, -1)  # O to move
        first_moves[fraction] = np.argmax(second[:, :, 1], axis=1)  # X's stones, O's view
        policies[fraction] = np.asarray(buffer.policy[:512], np.float32)
    assert (first_moves[0.0] == 0).all()
    assert len(set(first_moves[1.0].tolist())) == 9
    assert 0.2 < np.mean(first_moves[0.3] != 0) < 0.4  # 0.3 * 8/9 = 0.27 expected
    for policy in policies.values():  # the search's target, not the move played
        np.testing.assert_array_equal(policy[:, 0], 1.0)


class HandicapTicTacToe(type(TTT)):
    """Tic-tac-toe whose handicap start gives X the centre (O to move)."""

    def handicap_init(self, key):
        return self.step(self.init(key), 4)


def test_handicap_starts_start_that_share_of_the_games_and_restarts():
    game, key = HandicapTicTacToe(), jax.random.PRNGKey(3)
    assert game.has_handicap_starts and not TTT.has_handicap_starts
    shares = {}
    for share in (0.0, 0.3, 1.0):
        rules = selfplay.SelfPlayRules(handicap_starts=share)
        state = selfplay.init(game, key, batch_size=1000, rules=rules)
        shares[share] = float(np.mean(np.asarray(state.games.board)[:, 4] == 1))
    assert shares[0.0] == 0.0 and shares[1.0] == 1.0 and 0.25 < shares[0.3] < 0.35
    # Without the option the games are those selfplay.init always started.
    plain = selfplay.init(TTT, key, batch_size=1000)
    same = selfplay.init(game, key, batch_size=1000)
    for a, b in zip(jax.tree.leaves(plain), jax.tree.leaves(same), strict=True):
        np.testing.assert_array_equal(a, b)
    # Finished games restart from a handicap start in that share too; running ones go on.
    state = selfplay.init(game, key, batch_size=1000)
    ended = state.games.replace(terminated=jnp.arange(1000) % 2 == 0)
    state = state.replace(games=ended)
    play = jax.jit(
        functools.partial(selfplay.play_ply, game, scripted_search(game)), static_argnames="rules"
    )
    for share in (0.0, 1.0):
        rules = selfplay.SelfPlayRules(handicap_starts=share)
        _, _, ply = play(None, state, None, jax.random.PRNGKey(1), temperature_moves=0, rules=rules)
        board = np.asarray(ply.searched.board)
        assert (board[1::2] == 0).all()  # running games, untouched
        assert (board[0::2, 4] == share).all() and (np.abs(board[0::2]).sum(1) == share).all()


def test_handicap_starts_need_a_game_that_has_them():
    config = tiny_config()
    config.selfplay.handicap_starts = 0.5
    with pytest.raises(UserError, match="selfplay.handicap_starts: tic_tac_toe has no handicap"):
        build.make_pipeline(config)


@pytest.mark.parametrize("key", ["draw_adjudication", "win_adjudication"])
def test_adjudication_needs_a_game_that_adjudicates(key):
    config = tiny_config()
    config.selfplay[key] = 0.5
    with pytest.raises(UserError, match=f"selfplay.{key}: tic_tac_toe has no adjudication"):
        build.make_pipeline(config)
