"""The game contract, checked for every registered game: each rule of
`azjax.games.conformance` (what `azjax.games.check` runs on any game) is a test here, on one
set of random games per game (`conformance.play`: uniform over legal actions, one jitted
scan of vmapped steps). And the kit itself: games that break a rule are caught, naming it.
"""

import re

import jax.numpy as jnp
import pytest
from conftest import marked

import azjax.games
from azjax.games import conformance
from azjax.games.tic_tac_toe import TicTacToe
from azjax.types import UserError

# Presets whose code paths the other presets of their game already cover (time budget).
COVERED = {"go_13x13": "go_9x9 and go_19x19 run the same code"}


def distinct_game_names() -> list[str]:
    """Registered names, keeping one name per distinct game (presets may alias `make` calls),
    without the presets in COVERED."""
    seen, distinct = set(), []
    for name in azjax.games.names():
        if name in COVERED:
            continue
        described = repr(vars(azjax.games.make(name)))
        if described not in seen:
            seen.add(described)
            distinct.append(name)
    return distinct


# Presets checked only under `pytest -m deep` (CI time budget): Go 19x19 runs go_9x9's code,
# and its random games are compared with pgx's in CI (test_go.py).
DEEP = ("go_19x19",)
# Presets checked in the slow set (CI runs it): their long programs take most of the
# contract's time to compile (docs/testing.md).
SLOW = ("go_9x9", "xiangqi")


@pytest.fixture(
    scope="module",
    params=marked(distinct_game_names(), slow=SLOW, deep=DEEP),
)
def game(request):
    return azjax.games.make(request.param)


@pytest.fixture(scope="module")
def play(game):
    return conformance.play(game)


@pytest.mark.parametrize("rule", list(conformance.CHECKS))
def test_the_game_keeps_the_rule(game, play, rule):
    conformance.CHECKS[rule](game, play)


class UnfairRewards(TicTacToe):
    def step(self, state, action):
        state = super().step(state, action)
        return state.replace(rewards=state.rewards.at[0].multiply(2.0))


class EndlessCount(TicTacToe):
    def step(self, state, action):
        state = super().step(state, action)
        return state.replace(step_count=state.step_count + state.terminated.astype(jnp.int32))


class MaskAfterTheEnd(TicTacToe):
    def step(self, state, action):
        state = super().step(state, action)
        mask = state.legal_action_mask.at[0].set(state.legal_action_mask[0] | state.terminated)
        return state.replace(legal_action_mask=mask)


class PolicyNotTurned(TicTacToe):
    def apply_symmetry(self, observation, policy, index):
        return super().apply_symmetry(observation, policy, index)[0], policy


@pytest.mark.parametrize(
    "broken, rule",
    [
        (UnfairRewards, "rewards sum to zero"),
        (EndlessCount, "a step after the end changes nothing (step_count)"),
        (MaskAfterTheEnd, "no action is legal once the game has ended"),
        (PolicyNotTurned, "commutes with play"),
    ],
)
def test_the_kit_names_the_rule_a_game_breaks(broken, rule):
    with pytest.raises(conformance.ContractError, match=re.escape(rule)):
        azjax.games.check(broken(), games=32)


def test_the_kit_passes_a_game_by_name_and_replays_it_in_openspiel():
    pytest.importorskip("pyspiel", reason="OpenSpiel is not installed (pip install -e '.[test]')")
    passed = azjax.games.check("connect_four", games=32, openspiel="connect_four")
    assert passed == [*conformance.CHECKS, "openspiel"]


class BuggyConstructor(TicTacToe):
    def __init__(self):
        super().__init__()
        self.table = [][1]  # a bug: IndexError


def test_a_bug_in_a_games_constructor_keeps_its_traceback(monkeypatch):
    """Not "bad options" (which hid the traceback): only options the game does not take or
    values it refuses (ValueError) are a user's mistake."""
    monkeypatch.setitem(azjax.games._REGISTRY, "buggy", (__name__, "BuggyConstructor", {}))
    with pytest.raises(IndexError):
        azjax.games.make("buggy")
    with pytest.raises(UserError, match="bad options for game 'buggy': got an unexpected"):
        azjax.games.make("buggy", size=3)


class Plain(TicTacToe):
    """Tic-tac-toe as a family of its own (this module's name), which has no text or picture
    module: the default notation and the fallback picture serve it."""


def test_a_game_without_text_or_picture_modules_passes_with_the_defaults(monkeypatch):
    monkeypatch.setitem(azjax.games._REGISTRY, "plain", (__name__, "Plain", {}))
    game = azjax.games.make("plain")
    assert azjax.games.family_of(game) == __name__.rpartition(".")[2]
    assert azjax.games.companion(Plain, "azjax.games.render") is None
    assert azjax.games.companion(Plain, "azjax.games.notation") is None
    played = conformance.play(game, games=2)
    for rule in ("notation", "picture"):
        conformance.CHECKS[rule](game, played)
