"""One host game as a record (`engine_records.play_record`): the seeded opening, the start
and every move, a resignation lost by the resigner, an engine's failure raised unrecorded,
and a stop that drops the game in play. Players in this process stand in for engines (the
real engines play in tests/apps/test_records_cmd.py)."""

import threading

import jax
import numpy as np
import pytest

from azjax import games
from azjax.matches import engine_records
from azjax.matches.engines import RESIGN, EngineError, HostPlayer
from azjax.matches.recording import Stopped


class Scripted(HostPlayer):
    """Plays the first legal move (never Go's pass while another is legal); after `moves`
    of its own it does `then`: "resign", "fail", or "stop" (sets `stop`)."""

    def __init__(self, name, moves=1000, then="resign", stop=None):
        self.name, self.moves, self.then, self.stop = name, moves, then, stop

    def start(self, game, state):
        self.played = 0

    def observe(self, state, action):
        pass

    def choose(self, state):
        self.played += 1
        if self.played > self.moves:
            if self.then == "fail":
                raise EngineError(f"engine {self.name} did not send a move within 1 s")
            if self.then == "stop":
                self.stop.set()
            else:
                return RESIGN
        legal = np.flatnonzero(np.asarray(state.legal_action_mask))
        return int(legal[0])

    def close(self):
        pass


@pytest.fixture(scope="module")
def connect_four():
    return games.make("connect_four")


def play(game, first, second, **options):
    return engine_records.play_record(
        game, first, second, key=engine_records.game_key(7, 3), opening_plies=4, **options
    )


def test_a_record_holds_the_seeded_opening_and_a_resignation_lost(connect_four):
    record = play(connect_four, Scripted("a"), Scripted("b", moves=2))
    assert record.info["ended"] == "resigned" and record.result == 1.0  # b resigned
    assert record.players == ("a", "b") and len(record.actions) == 4 + 5
    again = play(connect_four, Scripted("a", moves=1), Scripted("b"))
    assert again.actions[:4] == record.actions[:4] and again.result == -1.0  # the same opening
    other = engine_records.play_record(
        connect_four, Scripted("a"), Scripted("b"), key=engine_records.game_key(7, 4),
        opening_plies=4,
    )  # fmt: skip
    assert other.actions[:4] != record.actions[:4]  # another game, another opening
    state, step = record.start, jax.jit(connect_four.step)  # host arrays: legal in turn
    for action in record.actions:
        assert bool(state.legal_action_mask[action])
        state = step(state, action)


def test_go_records_keep_the_score_and_a_resignation():
    go = games.make("go_9x9")
    record = play(go, Scripted("black", moves=3), Scripted("white"))
    assert record.result == -1.0 and record.info["result"] == "W+R"
    ended = play(go, Scripted("black"), Scripted("white"), names=("B", "W"))
    assert ended.info["ended"] == "rules" and ended.players == ("B", "W")
    assert ended.info["result"][0] in "BW0" and ended.result in (1.0, -1.0, 0.0)


def test_an_engine_failure_raises_and_a_stop_drops_the_game(connect_four):
    with pytest.raises(EngineError, match="did not send a move"):
        play(connect_four, Scripted("a", moves=2, then="fail"), Scripted("b"))
    stop = threading.Event()
    with pytest.raises(Stopped):
        play(connect_four, Scripted("a", moves=2, then="stop", stop=stop), Scripted("b"), stop=stop)
