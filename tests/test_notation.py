"""The text layer (`azjax.notation`) for every registered game: names of legal moves read
back as the same actions, boards drawn at the start and at the end of a game."""

import ast
import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import azjax.games
from azjax import notation
from azjax.notation.base import Notation
from azjax.types import UserError

NUM_POSITIONS = 3  # random positions per game whose legal moves are named and read back


@functools.cache
def random_game(name: str):
    """One game of uniformly random legal moves to its end: (game, states [T+1] as numpy),
    the start position at index 0; every game ends within `max_episode_length` plies."""
    game = azjax.games.make(name)

    def ply(state, key):
        logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(key, logits).astype(jnp.int32)
        next_state = game.step(state, action)
        return next_state, next_state

    @jax.jit
    def play(key):
        init_key, play_key = jax.random.split(key)
        start = game.init(init_key)
        keys = jax.random.split(play_key, game.max_episode_length)
        _, states = jax.lax.scan(ply, start, keys)
        return jax.tree.map(lambda first, rest: jnp.concatenate([first[None], rest]), start, states)

    return game, jax.device_get(play(jax.random.key(0)))


def at(states, index: int):
    return jax.tree.map(lambda x: x[index], states)


@pytest.mark.parametrize("name", azjax.games.names())
def test_every_game_has_a_notation(name):
    game = azjax.games.make(name)
    text = notation.of(game)
    assert isinstance(text, Notation) and type(text) is not Notation and text.game is game


@pytest.mark.parametrize("name", azjax.games.names())
def test_names_of_legal_moves_read_back(name):
    game, states = random_game(name)
    text = notation.of(game)
    running = np.flatnonzero(~states.terminated)
    for index in running[np.linspace(0, len(running) - 1, NUM_POSITIONS).astype(int)]:
        state = at(states, index)
        legal = np.flatnonzero(state.legal_action_mask)
        names = [text.action_to_string(action, state) for action in legal]
        assert len(set(names)) == len(names), names
        assert [text.parse_action(name, state) for name in names] == legal.tolist()
        assert [notation.parse_action(game, name, state) for name in names[:3]] == [*legal[:3]]
        assert notation.action_to_string(game, legal[0], state) == names[0]
        with pytest.raises(UserError) as error:
            text.parse_action("no such move", state)
        assert "\n" not in str(error.value)


@pytest.mark.parametrize("name", azjax.games.names())
def test_render_start_and_end(name):
    game, states = random_game(name)
    start, end = at(states, 0), at(states, -1)
    assert bool(end.terminated)
    drawn_start, drawn_end = notation.render(game, start), notation.of(game).render(end)
    assert drawn_start.splitlines()[-1].endswith("to move")
    assert not drawn_end.splitlines()[-1].endswith("to move")
    assert len(drawn_start.splitlines()) == len(drawn_end.splitlines()) > 2
    with pytest.raises(UserError, match="game is over"):
        notation.parse_action(game, "pass", end)


def test_game_kernels_never_import_notation():
    games_dir = Path(azjax.games.__file__).parent
    for path in games_dir.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("azjax.notation"), path
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("azjax.notation") for a in node.names), path
