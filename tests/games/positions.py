"""Hand-played positions for the game tests: moves typed as a human types them."""

import functools
import textwrap

import jax
import numpy as np


def play(game, moves):
    """Plays human move names (as `game.parse_action` reads them) from the start position,
    checking that each move is accepted while the game runs. Returns the final state."""
    state = game.init(jax.random.key(0))
    step = _jitted_step(game)
    for move in moves:
        assert not bool(state.terminated)
        state = step(state, game.parse_action(move, state))
    return state


def board(text: str) -> str:
    """An ASCII board written indented in a test, as `game.render` draws it."""
    return textwrap.dedent(text).strip()


def check_finished_game(game, moves, expected: str) -> None:
    """Plays `moves` and checks the final board, the result named on its status line
    ("X wins", "O wins" or "game over" for a draw), and that the last move ended it."""
    state = play(game, moves)
    assert game.render(state) == board(expected)
    assert bool(state.terminated)
    assert int(state.step_count) == len(moves)
    assert not state.legal_action_mask.any()
    winner = {"X wins": [1.0, -1.0], "O wins": [-1.0, 1.0], "game over": [0.0, 0.0]}
    np.testing.assert_array_equal(state.rewards, winner[board(expected).splitlines()[-1]])
    before_last = play(game, moves[:-1])
    assert not bool(before_last.terminated)
    np.testing.assert_array_equal(before_last.rewards, [0.0, 0.0])


@functools.cache
def _jitted_step(game):
    """One compiled `step` per game object, shared by every hand-played test."""
    return jax.jit(game.step)
