"""The exact Tic-tac-toe minimax helper (azjax/matches/minimax.py) used as a test opponent."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import azjax.games
from azjax.matches.minimax import make_minimax_player, optimal_value

NUM_GAMES = 1000


@pytest.fixture(scope="module")
def game():
    return azjax.games.make("tic_tac_toe")


@pytest.fixture(scope="module")
def minimax(game):
    return make_minimax_player(game)


def random_player(states, key):
    keys = jax.random.split(key, states.current_player.shape[0])
    logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
    return jax.vmap(jax.random.categorical)(keys, logits).astype(jnp.int32)


# Which seats minimax plays in each match; random play takes the other seats.
MATCHES = {
    "minimax_vs_minimax": (True, True),
    "minimax_x": (True, False),
    "minimax_o": (False, True),
}


@pytest.fixture(scope="module")
def match_rewards(game, minimax):
    """Final rewards [B, 2] of NUM_GAMES games per match, all played in one jitted scan."""
    minimax_seats = jnp.repeat(jnp.asarray(list(MATCHES.values())), NUM_GAMES, axis=0)  # [B, 2]
    num_games = minimax_seats.shape[0]

    def play(key):
        init_key, play_key = jax.random.split(key)
        states = jax.vmap(game.init)(jax.random.split(init_key, num_games))

        def ply(states, key):
            minimax_key, random_key = jax.random.split(key)
            by_minimax = jnp.take_along_axis(minimax_seats, states.current_player[:, None], 1)
            actions = jnp.where(
                by_minimax[:, 0], minimax(states, minimax_key), random_player(states, random_key)
            )
            next_states = jax.vmap(game.step)(states, actions)
            return next_states, next_states.rewards

        _, rewards = jax.lax.scan(ply, states, jax.random.split(play_key, game.max_episode_length))
        return rewards.sum(axis=0)

    rewards = np.asarray(jax.jit(play)(jax.random.key(1)))
    return dict(zip(MATCHES, np.split(rewards, len(MATCHES)), strict=True))


def test_optimal_values():
    """Boards from the mover's view: 1 = the mover's marks, 2 = the opponent's."""
    assert optimal_value([0] * 9) == 0
    assert optimal_value([2, 0, 0, 0, 0, 0, 0, 0, 0]) == 0  # O to answer a corner opening.
    assert optimal_value([1, 0, 0, 0, 2, 0, 0, 0, 0]) == 0  # O took the centre: a draw.
    assert optimal_value([1, 2, 0, 0, 0, 0, 0, 0, 0]) == 1  # O took an edge: X wins.
    assert optimal_value([1, 0, 0, 0, 0, 0, 0, 0, 2]) == 1  # O took a corner: X wins.
    assert optimal_value([1, 1, 0, 2, 2, 0, 0, 0, 0]) == 1  # The mover completes the top row.
    assert optimal_value([2, 2, 2, 1, 1, 0, 0, 0, 0]) == -1  # The opponent has won.
    assert optimal_value([1, 2, 1, 1, 2, 2, 2, 1, 1]) == 0  # Full board, no line.


def test_known_replies(game, minimax):
    """After a corner opening only the centre draws; after the centre only corners do."""
    for opening, replies in ((0, {4}), (4, {0, 2, 6, 8})):
        state = game.step(game.init(jax.random.key(0)), jnp.int32(opening))
        states = jax.tree.map(lambda x: jnp.broadcast_to(x, (200, *x.shape)), state)
        chosen = jax.jit(minimax)(states, jax.random.key(opening))
        assert set(np.unique(chosen).tolist()) == replies


def test_minimax_against_itself_always_draws(match_rewards):
    np.testing.assert_array_equal(match_rewards["minimax_vs_minimax"], 0.0)


@pytest.mark.parametrize("seat", [0, 1])
def test_minimax_never_loses_to_random(match_rewards, seat):
    rewards = match_rewards[("minimax_x", "minimax_o")[seat]]  # [NUM_GAMES, 2]
    assert (rewards[:, seat] >= 0).all()
    assert (rewards[:, seat] > 0).mean() > 0.5  # It also wins most games.
