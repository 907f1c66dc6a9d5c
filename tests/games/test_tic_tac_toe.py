"""Tic-tac-toe against an independent reference and hand-played positions.

The reference is pgx's Tic-tac-toe (`pgx.make("tic_tac_toe")`, pgx/tic_tac_toe.py and
pgx/_src/games/tic_tac_toe.py in pgx 2.6), a separate JAX implementation. Two differences
are mapped, not tested: pgx draws which player id moves first at `init` (our player i is
pgx player `(first + i) % 2`), and pgx sets every action legal once a game is over (ours
are all illegal).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pgx_reference import assert_matches_pgx
from positions import board, check_finished_game, play

import azjax.games
from azjax.games import notation
from azjax.types import UserError

pgx = pytest.importorskip("pgx")

NUM_GAMES = 2000


@pytest.fixture(scope="module")
def game():
    return azjax.games.make("tic_tac_toe")


def test_random_play_matches_pgx(game):
    assert_matches_pgx(game, "tic_tac_toe", NUM_GAMES)


# (moves as cells 1-9, the final board as `render` draws it)
FINISHED_GAMES = {
    "row": (
        "14253",
        """
        X X X    1 2 3
        O O .    4 5 6
        . . .    7 8 9
        X wins
        """,
    ),
    "column_for_o": (
        "135986",
        """
        X . O    1 2 3
        . X O    4 5 6
        . X O    7 8 9
        O wins
        """,
    ),
    "anti_diagonal_for_o": (
        "152397",
        """
        X X O    1 2 3
        . O .    4 5 6
        O . X    7 8 9
        O wins
        """,
    ),
    "win_on_the_ninth_move": (
        "523487169",
        """
        X O X    1 2 3
        O X O    4 5 6
        O X X    7 8 9
        X wins
        """,
    ),
    "draw": (
        "159374682",
        """
        X X O    1 2 3
        O O X    4 5 6
        X O X    7 8 9
        game over
        """,
    ),
    "draw_from_the_centre": (
        "519746382",
        """
        O X X    1 2 3
        X X O    4 5 6
        O O X    7 8 9
        game over
        """,
    ),
}


@pytest.mark.parametrize("name", FINISHED_GAMES)
def test_finished_games(game, name):
    check_finished_game(game, *FINISHED_GAMES[name])


def test_render_start(game):
    expected = """
        . . .    1 2 3
        . . .    4 5 6
        . . .    7 8 9
        X to move
        """
    assert notation.render(game, game.init(jax.random.key(0))) == board(expected)


def test_observation_is_from_the_movers_view(game):
    state = play(game, "5")
    obs = game.observe(state)  # O to move: X's mark is the opponent's.
    assert int(state.current_player) == 1
    np.testing.assert_array_equal(obs[1, 1], [0.0, 1.0])
    assert obs.sum() == 1.0
    state = play(game, "51")
    obs = game.observe(state)
    np.testing.assert_array_equal(obs[1, 1], [1.0, 0.0])
    np.testing.assert_array_equal(obs[0, 0], [0.0, 1.0])
    assert obs.sum() == 2.0


# Symmetry index (base.dihedral_perms order) -> where cells 1, 2, 3 go, worked out by hand:
# identity, left-right mirror, up-down mirror, half turn, transpose, quarter turn clockwise,
# quarter turn anticlockwise, anti-transpose.
CELL_IMAGES = {
    0: "123",
    1: "321",
    2: "789",
    3: "987",
    4: "147",
    5: "369",
    6: "741",
    7: "963",
}


@pytest.mark.parametrize("index", range(8))
def test_symmetries(game, index):
    image = dict(zip("123", CELL_IMAGES[index], strict=True))
    state = play(game, "123")
    transformed = play(game, "".join(image[cell] for cell in "123"))
    obs, mask = game.observe(state), state.legal_action_mask
    got_obs, got_mask = game.apply_symmetry(obs, mask, index)
    np.testing.assert_array_equal(got_obs, game.observe(transformed))
    np.testing.assert_array_equal(got_mask, transformed.legal_action_mask)
    policy = jax.nn.one_hot(2, 9)  # All weight on cell 3.
    _, got_policy = game.apply_symmetry(obs, policy, index)
    assert notation.action_to_string(game, int(jnp.argmax(got_policy))) == image["3"]


def test_parse_action(game):
    state = play(game, "5")
    assert notation.parse_action(game, "1", state) == 0
    assert notation.parse_action(game, " 9 ", state) == 8
    assert [notation.action_to_string(game, action) for action in range(9)] == list("123456789")
    with pytest.raises(UserError, match="not legal"):
        notation.parse_action(game, "5", state)
    for text in ("0", "10", "a1", ""):
        with pytest.raises(UserError, match="not a move"):
            notation.parse_action(game, text, state)
