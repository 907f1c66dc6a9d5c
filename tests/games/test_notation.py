"""The text layer (`azjax.games.notation`) for every registered game: names of legal moves read
back as the same actions, boards drawn at the start and at the end of a game."""

import ast
import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import marked

import azjax.games
from azjax.games import notation
from azjax.games.notation import xiangqi
from azjax.games.notation.base import Notation
from azjax.types import UserError

NUM_POSITIONS = 3  # random positions per game whose legal moves are named and read back

# Every game; Xiangqi's random games and pictures (long programs to compile) in the slow
# set (docs/testing.md).
NAMES = marked(azjax.games.names(), slow=("xiangqi",))


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
    """Its family's (azjax/games/notation/<family>.py), where the family has one, else the
    default, which names moves by their action ids (docs/adding_a_game.md)."""
    game = azjax.games.make(name)
    text = notation.of(game)
    assert isinstance(text, Notation) and text.game is game
    own = Path(notation.__file__).with_name(f"{azjax.games.family_of(game)}.py").exists()
    assert (type(text) is not Notation) == own


@pytest.mark.parametrize("name", NAMES)
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


@pytest.mark.parametrize("name", NAMES)
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
                assert not (node.module or "").startswith("azjax.games.notation"), path
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("azjax.games.notation") for a in node.names), path


def _lookalikes(name: str) -> list[str]:
    """`name` with its ASCII digits or letters swapped for other scripts' (fullwidth,
    superscript, Arabic-Indic, Devanagari digits; fullwidth letters; the Kelvin sign, whose
    lower case is "k"), which str.isdigit or str.lower would let through."""
    digits = {
        "fullwidth": lambda d: chr(0xFF10 + d),
        "superscript": lambda d: "⁰¹²³⁴⁵⁶⁷⁸⁹"[d],
        "arabic-indic": lambda d: chr(0x660 + d),
        "devanagari": lambda d: chr(0x966 + d),
    }
    variants = [
        "".join(swap(int(c)) if c.isascii() and c.isdigit() else c for c in name)
        for swap in digits.values()
    ]
    variants.append("".join(chr(0xFF21 + ord(c.upper()) - 65) if c.isalpha() else c for c in name))
    variants.append(name.replace("k", "\u212a").replace("K", "\u212a"))
    return [v for v in variants if v != name]


@pytest.mark.parametrize("name", azjax.games.names())
def test_moves_in_other_scripts_digits_or_letters_are_not_moves(name):
    game, states = random_game(name)
    state = at(states, 0)
    text = notation.of(game)
    for action in np.flatnonzero(state.legal_action_mask):  # every legal move's name
        for lookalike in _lookalikes(text.action_to_string(action, state)):
            with pytest.raises(UserError) as error:
                text.parse_action(lookalike, state)
            assert "\n" not in str(error.value)


_START = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR"


@pytest.mark.parametrize(
    "fen, message",
    [
        (f"{_START} w - - ² 1", "must be whole numbers"),  # str.isdigit takes it, int() not
        (f"{_START} w - - 0 ²", "must be whole numbers"),
        (f"{_START} w - - \u0661 1", "must be whole numbers"),  # int() takes it
        (f"{_START} w - - \uff11 1", "must be whole numbers"),
        (f"{_START} w - - 99999999999999999999 1", "too large for a count"),  # past int32
        (f"{_START} w - - 2147483648 1", "too large for a count"),
        (f"{_START} w - - 0 {'9' * 5000}", "too large for a count"),  # past int()'s limit
        (f"{_START} w - - 0 0", "the move number starts at 1"),
        (f"{_START} w - - 120 1", "reach the no-capture limit of 120"),
        (f"{_START} w - - 999999999 1", "reach the no-capture limit of 120"),
        (_START.replace("K", "\u212a") + " w", "unknown piece letter '\\u212a'"),
        (_START.replace("1", "\uff11", 1) + " w", "unknown piece letter '\\uff11'"),
        (f"{_START} w - - 119 01", None),
        (f"{_START} w - - 000000000000000000007 1", None),
    ],
)
def test_xiangqi_fen_counts_are_ascii_digits_within_range(fen, message):
    game = azjax.games.make("xiangqi")
    if message is None:
        state = xiangqi.from_fen(game, fen)
        assert int(state.no_capture_plies) == int(fen.split()[4])
        return
    with pytest.raises(UserError) as error:
        xiangqi.from_fen(game, fen)
    text = str(error.value)
    assert text.startswith("bad FEN") and message in text and "\n" not in text
    assert len(text) < 300  # a long FEN is shortened
