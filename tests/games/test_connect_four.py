"""Connect Four against an independent reference and hand-played positions.

The reference is pgx's Connect Four (`pgx.make("connect_four")`, pgx/connect_four.py and
pgx/_src/games/connect_four.py in pgx 2.6), a separate JAX implementation with its own
win table. Two differences are mapped, not tested: pgx draws which player id moves first
at `init` (our player i is pgx player `(first + i) % 2`), and pgx sets every action legal
once a game is over (ours are all illegal).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pgx_reference import assert_matches_pgx
from positions import check_finished_game, play

import azjax.games
from azjax.games import notation
from azjax.types import UserError

pgx = pytest.importorskip("pgx")

NUM_GAMES = 2000


@pytest.fixture(scope="module")
def game():
    return azjax.games.make("connect_four")


def test_random_play_matches_pgx(game):
    assert_matches_pgx(game, "connect_four", NUM_GAMES)


# (moves as columns 1-7, the final board as `render` draws it)
FINISHED_GAMES = {
    "horizontal": (
        "1122334",
        """
        1 2 3 4 5 6 7
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        O O O . . . .
        X X X X . . .
        X wins
        """,
    ),
    "vertical": (
        "17271737",
        """
        1 2 3 4 5 6 7
        . . . . . . .
        . . . . . . .
        . . . . . . O
        . . . . . . O
        X . . . . . O
        X X X . . . O
        O wins
        """,
    ),
    "rising_diagonal": (
        "12233434474",
        """
        1 2 3 4 5 6 7
        . . . . . . .
        . . . . . . .
        . . . X . . .
        . . X X . . .
        . X X O . . .
        X O O O . . O
        X wins
        """,
    ),
    "falling_diagonal": (
        "76655454414",
        """
        1 2 3 4 5 6 7
        . . . . . . .
        . . . . . . .
        . . . X . . .
        . . . X X . .
        . . . O X X .
        O . . O O O X
        X wins
        """,
    ),
    "win_on_the_last_move": (
        "661467642277256251262331575447347553131314",
        """
        1 2 3 4 5 6 7
        X X O O X O X
        X X O O O X O
        X O O X X X O
        O X X O X X O
        O O X O X O X
        X X O O O X O
        O wins
        """,
    ),
    "draw": (
        "245112412157262255144417457333757733366666",
        """
        1 2 3 4 5 6 7
        X O X X O O O
        X X O O O X X
        O X X X O O X
        O X O O X X X
        X O X X X O O
        O X O O X O O
        game over
        """,
    ),
}


@pytest.mark.parametrize("name", FINISHED_GAMES)
def test_finished_games(game, name):
    check_finished_game(game, *FINISHED_GAMES[name])


def test_three_in_a_row_does_not_win(game):
    state = play(game, "112233")
    assert not bool(state.terminated)
    assert notation.render(game, state).splitlines()[-1] == "X to move"


def test_observation_is_from_the_movers_view(game):
    state = play(game, "4")
    obs = game.observe(state)  # O to move: X's stone is the opponent's.
    assert int(state.current_player) == 1
    np.testing.assert_array_equal(obs[5, 3], [0.0, 1.0])
    assert obs.sum() == 1.0
    state = play(game, "44")
    obs = game.observe(state)
    np.testing.assert_array_equal(obs[5, 3], [1.0, 0.0])
    np.testing.assert_array_equal(obs[4, 3], [0.0, 1.0])
    assert obs.sum() == 2.0


def test_full_column_is_illegal(game):
    state = play(game, "111111")
    np.testing.assert_array_equal(state.legal_action_mask, [False] + [True] * 6)
    with pytest.raises(UserError, match="not legal"):
        notation.parse_action(game, "1", state)


def test_mirror_symmetry(game):
    state, mirrored = play(game, "1111112"), play(game, "7777776")
    obs, mask = game.observe(state), state.legal_action_mask
    got_obs, got_mask = game.apply_symmetry(obs, mask, 1)
    np.testing.assert_array_equal(got_obs, game.observe(mirrored))
    np.testing.assert_array_equal(got_mask, mirrored.legal_action_mask)
    np.testing.assert_array_equal(got_obs, obs[:, ::-1])
    policy = jnp.arange(7.0)
    np.testing.assert_array_equal(game.apply_symmetry(obs, policy, 1)[1], policy[::-1])
    np.testing.assert_array_equal(game.apply_symmetry(obs, policy, 0)[1], policy)


def test_parse_action(game):
    state = game.init(jax.random.key(0))
    columns = [notation.parse_action(game, str(column), state) for column in range(1, 8)]
    assert columns == list(range(7))
    assert notation.parse_action(game, " 4 ", state) == 3
    assert [notation.action_to_string(game, action) for action in range(7)] == list("1234567")
    for text in ("0", "8", "x", "", "4 5"):
        with pytest.raises(UserError, match="not a move"):
            notation.parse_action(game, text, state)
    with pytest.raises(UserError, match="over"):
        notation.parse_action(game, "5", play(game, "1122334"))
