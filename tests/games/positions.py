"""Hand-played positions for the game tests: moves typed as a human types them."""

import functools
import textwrap

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import notation


def play(game, moves):
    """Plays human move names (as `notation.parse_action` reads them) from the start position,
    checking that each move is accepted while the game runs. Returns the final state."""
    state = game.init(jax.random.key(0))
    step = _jitted_step(game)
    for move in moves:
        assert not bool(state.terminated)
        state = step(state, notation.parse_action(game, move, state))
    return state


def board(text: str) -> str:
    """An ASCII board written indented in a test, as `notation.render` draws it."""
    return textwrap.dedent(text).strip()


def check_finished_game(game, moves, expected: str) -> None:
    """Plays `moves` and checks the final board, the result named on its status line
    ("X wins", "O wins" or "game over" for a draw), and that the last move ended it."""
    state = play(game, moves)
    assert notation.render(game, state) == board(expected)
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


def check_pass_symmetries(game, move: str, size: int) -> None:
    """On a square board with a pass action last: every symmetry maps the pass to itself,
    and symmetry 1 is the left-right mirror of the observation and the point policy (checked
    on the position after `move`)."""
    obs = game.observe(play(game, [move]))
    policy = jnp.arange(game.num_actions, dtype=jnp.float32)
    pass_action = game.num_actions - 1
    for index in range(game.symmetries):
        assert game.apply_symmetry(obs, policy, index)[1][pass_action] == pass_action
    mirrored_obs, mirrored_policy = game.apply_symmetry(obs, policy, 1)  # left-right mirror
    np.testing.assert_array_equal(mirrored_obs, obs[:, ::-1])
    np.testing.assert_array_equal(
        mirrored_policy[:pass_action].reshape(size, size),
        policy[:pass_action].reshape(size, size)[:, ::-1],
    )
