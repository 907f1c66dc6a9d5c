"""The terminal game loop (`azjax play`): moves typed by hand, bad input asked again."""

import io
from types import SimpleNamespace

import jax.numpy as jnp

import azjax.games
from azjax.apps.protocols.terminal import play_in_terminal


class FirstLegalAgent:
    """Plays the legal action with the lowest id (a stand-in for a trained agent)."""

    def __init__(self, game):
        self.game = game

    def act(self, states, key):
        del key
        action = jnp.argmax(states.legal_action_mask, axis=-1)  # [B]
        return SimpleNamespace(action=action, value=jnp.zeros(action.shape))


def play(typed: bytes, *, human_first: bool = True) -> tuple[int, str]:
    """Plays Tic-tac-toe against `FirstLegalAgent` with `typed` as the keyboard."""
    stdin = io.TextIOWrapper(io.BytesIO(typed), encoding="utf-8")
    stdout = io.StringIO()
    agent = FirstLegalAgent(azjax.games.make("tic_tac_toe"))
    status = play_in_terminal(agent, human_first=human_first, seed=0, stdin=stdin, stdout=stdout)
    return status, stdout.getvalue()


def test_a_won_game_with_bad_lines_asked_again():
    # X: 5, 3, 7 (the diagonal); the agent answers 1 and 2, the lowest free cells.
    status, out = play(b"\xff\xfe not utf-8\n5\nbanana\n5\n3\n\xc3(\n7\n")
    assert status == 0
    assert out.count("unreadable input: the line is not valid utf-8 text") == 2
    assert out.count("illegal move:") == 2  # "banana" and the taken cell 5
    assert "agent plays 1 " in out and "agent plays 2 " in out
    assert out.splitlines()[-2:] == ["X wins", "you win"]
    assert "Traceback" not in out


def test_end_of_input_ends_the_game_quietly():
    status, out = play(b"5\n", human_first=False)
    assert status == 0
    assert "agent plays 1 " in out and out.endswith("your move: \n")
