"""The Connect Four solver (bitbully) as an opponent, and mistakes measured against it."""

import re
import signal
import subprocess
import time

import jax
import numpy as np
import pytest
from conftest import PYTHON, subprocess_env, tiny_config, untrained_run

from azjax import extras, games
from azjax.config import parse_opponent_spec
from azjax.matches import arena, mistakes, tournament
from azjax.matches.agent import load_agent, make_opponent
from azjax.matches.engines import SolverPlayer, open_player, parse_engine_spec
from azjax.matches.engines.solver import Solver
from azjax.matches.mcts_baseline import make_mcts_baseline
from azjax.matches.tournament import GameLog, PlayerInfo
from azjax.types import UserError


@pytest.fixture(scope="module")
def solver():
    """The solver; a test that needs it skips with one line where bitbully is missing (and
    fails under AZJAX_REQUIRE_EXTERNAL=1: CI's test extra installs it)."""
    if not extras.installed("bitbully"):
        pytest.skip("bitbully is not installed (install it with: pip install -e '.[test]')")
    return Solver()


@pytest.fixture(scope="module")
def game():
    return games.make("connect_four")


@pytest.fixture(scope="module")
def step(game):
    return jax.jit(game.step)


def state_after(game, step, moves):
    """The position after `moves` (columns), by azjax's rules."""
    state = game.init(jax.random.PRNGKey(0))
    for move in moves:
        state = step(state, np.int32(move))
    return state


def test_the_solver_is_an_engine_spec_for_connect_four_only(game):
    spec = parse_engine_spec("solver")
    assert spec.name == "solver" and spec.plays(game)
    assert parse_opponent_spec(" solver ") == ("engine", spec)
    with pytest.raises(UserError, match="solver cannot play go_9x9: solver plays connect_four"):
        spec.require_plays(games.make("go_9x9"), "opponent solver")
    with pytest.raises(UserError, match="host games"):
        make_opponent(game, "solver")
    info = tournament.resolve("solver")[0]
    assert info == PlayerInfo(name="solver", kind="engine")
    assert PlayerInfo.from_json(info.to_json()) == info


def test_known_positions(solver, game, step):
    """The empty board (the centre wins, its neighbours draw, the rest lose), a win in one
    and a forced block, each read from azjax's board as bitbully reads the same moves."""
    import bitbully

    for moves, best, signs in [
        ([], 3, {0: -1, 1: -1, 2: 0, 3: 1, 4: 0, 5: -1, 6: -1}),
        ([0, 1, 0, 1, 0, 1], 0, None),  # X wins at once in column 0
        ([0, 1, 0, 1, 0], 0, {c: 1 if c == 0 else -1 for c in range(7)}),  # O must block
    ]:
        board = solver.board(state_after(game, step, moves).board)
        assert board.uid() == bitbully.Board(moves).uid()
        scores = solver.scores(board)
        assert solver.best(board) == best == max(scores, key=scores.get)
        if signs is not None:
            assert {c: int(np.sign(s)) for c, s in scores.items()} == signs


def test_the_solvers_wins_are_azjaxs(solver, game, step):
    """In varied positions a column wins at once by azjax's rules exactly where bitbully's
    board says so, and such a column has the best score."""
    import bitbully

    positions = mistakes.make_positions(40, seed=7, solver=solver)
    for moves in positions.moves:
        state, board = state_after(game, step, moves), bitbully.Board(list(moves))
        scores = solver.scores(board)
        for column in np.flatnonzero(state.legal_action_mask):
            wins = float(step(state, np.int32(column)).rewards[state.current_player]) > 0
            assert wins == board.play_on_copy(int(column)).has_win(), (moves, column)
            if wins:
                assert scores[int(column)] == max(scores.values()) > 0


def test_the_solver_never_loses_first_and_beats_mcts(solver, game, step):
    """As first player against random (host games) it wins every game; against MCTS-50
    (`engine_outcomes`, as `azjax evaluate` plays it) it wins every game it starts."""
    del solver
    random_host = arena.DeviceHostPlayer("random", jax.jit(arena.random_player(game)), None)
    with open_player("solver") as perfect:
        assert isinstance(perfect, SolverPlayer)
        for index in range(4):
            key = jax.random.PRNGKey(index)
            score, plies, reason = arena.play_host_game(
                game, perfect, random_host, opening_plies=0, key=key, step=step
            )
            assert (score, reason) == (1.0, "") and plies % 2 == 1
    mcts = arena.search_player(make_mcts_baseline(game, num_simulations=50))
    outcomes, reasons, _ = arena.engine_outcomes(
        game, jax.jit(mcts), None, parse_engine_spec("solver"), num_games=4, key=key, step=step
    )  # the MCTS player's outcomes, first in the even games
    assert reasons == [] and outcomes[1::2] == [-1.0, -1.0]  # MCTS second: the solver first
    assert sum(outcomes) < 0


def test_positions_are_fixed_by_the_seed_distinct_and_unfinished(solver, game):
    positions = mistakes.make_positions(60, seed=3, solver=solver)
    again = mistakes.make_positions(60, seed=3, solver=solver)
    assert positions.moves == again.moves and (positions.scores == again.scores).all()
    other = mistakes.make_positions(60, seed=4, solver=solver)
    assert positions.moves != other.moves
    states = positions.states(game)
    boards = {bytes(np.asarray(board)) for board in states.board}
    assert len(positions) == len(boards) == 60  # distinct positions, not just move orders
    assert not states.terminated.any()
    np.testing.assert_array_equal(states.legal_action_mask, positions.legal)
    assert len({len(moves) for moves in positions.moves}) > 10  # many phases of the game
    with pytest.raises(UserError, match="at least 1"):
        mistakes.make_positions(0, seed=0, solver=solver)


def test_perfect_play_makes_no_mistakes_and_random_play_many(solver, game):
    positions = mistakes.make_positions(200, seed=0, solver=solver)
    states = positions.states(game)
    perfect = [solver.best(solver.board(board)) for board in states.board]
    assert not positions.mistakes(perfect).any()
    rng = np.random.default_rng(0)
    chance = [rng.choice(np.flatnonzero(legal)) for legal in positions.legal]
    rate = positions.mistakes(chance).mean()
    assert 0.15 < rate < 0.6, rate
    # Where the mistakes are: per 8 plies played and per the best move's outcome.
    record = mistakes.record(positions, chance, name="chance", simulations=0, seed=0)
    for split in (record["by_phase"], record["by_best"]):
        assert sum(c["positions"] for c in split.values()) == 200
        assert sum(c["mistakes"] for c in split.values()) == record["mistakes"]
    assert record["by_best"]["loss"]["mistakes"] == 0 < record["by_best"]["loss"]["positions"]
    opening = [i for i, moves in enumerate(positions.moves) if len(moves) < 8]
    assert record["by_phase"]["0-7"] == {
        "positions": len(opening),
        "mistakes": int(positions.mistakes(chance)[opening].sum()),
    }
    full = [int(np.flatnonzero(~legal)[0]) if (~legal).any() else 0 for legal in positions.legal]
    assert (positions.outcomes(full)[(~positions.legal).any(axis=1)] == -2).all()


def test_an_agent_is_measured_and_plays_in_tournaments(solver, tmp_path):
    """An untrained agent: a record at 0 (the raw network) and 4 simulations, and two host
    games against the solver in a tournament (which the solver wins as first player)."""
    del solver
    run = untrained_run(tmp_path / "c4", tiny_config("connect_four"))
    agent = load_agent(run)
    positions = mistakes.make_positions(30, seed=0)
    for simulations in (0, 4):
        record = mistakes.measure(agent, positions, simulations, name=str(run), seed=0)
        assert record["positions"] == 30 and record["simulations"] == simulations
        assert record["rate_low"] <= record["rate"] <= record["rate_high"]
        assert record["rate"] == record["mistakes"] / 30
        assert "mistakes in 30 positions" in mistakes.format_record(record)
    with pytest.raises(UserError, match="connect_four and in hex up to 5x5 only"):
        mistakes.require_solved(games.make("go_9x9"), "a go run")
    tournament.run(
        tmp_path / "t", [str(run), "solver"], games_per_pair=2, anchor="solver", quiet=True
    )
    played = GameLog(tmp_path / "t").games
    assert len(played) == 2 and all(g["reason"] == "" for g in played)
    assert sorted(g["a_first"] for g in played) == [False, True]
    assert sum(g["score_a"] if g["a"] == "solver" else 1 - g["score_a"] for g in played) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("delay", [2.0, 5.0, 8.0])
def test_ctrl_c_stops_mistakes_cleanly_wherever_it_lands(solver, delay):
    """A real SIGINT during `azjax mistakes` (in its imports, its positions or its search):
    status 130, no traceback, no crash (it segfaulted in 8 tries of 13 when the signal
    landed inside jax's or the solver's code)."""
    command = [PYTHON, "-m", "azjax.apps.cli", "mistakes", "--agent", "connect_four",
               "--positions", "200", "--simulations", "0,32,200"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=subprocess_env())  # fmt: skip
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=600)
    assert process.returncode == 130, (process.returncode, err.decode())
    assert b"Traceback" not in err, err.decode()


def test_engine_games_stop_after_the_game_in_play_when_asked(solver, game, step):
    """`should_stop` (Ctrl-C in `azjax evaluate`: `interrupt.requested`) is asked after each
    host game; the games played are returned (all of them were played before)."""
    del solver
    random_player = jax.jit(arena.random_player(game))
    asked = []

    def should_stop():
        asked.append(1)
        return len(asked) >= 2

    outcomes, _, _ = arena.engine_outcomes(
        game, random_player, None, parse_engine_spec("solver"), num_games=6,
        key=jax.random.PRNGKey(0), step=step, should_stop=should_stop,
    )  # fmt: skip
    assert len(outcomes) == 2 and len(asked) == 2


@pytest.mark.slow
@pytest.mark.parametrize("delay", [5.0, 20.0])
def test_ctrl_c_stops_evaluate_against_the_solver_after_the_game_in_play(solver, delay):
    """A real SIGINT during `azjax evaluate` against an engine (here the solver): status 130
    soon after, no traceback, and the games played so far reported (it played all 1000)."""
    command = [PYTHON, "-m", "azjax.apps.cli", "evaluate", "--agent", "connect_four",
               "--opponent", "solver", "--games", "1000", "--simulations", "2"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=subprocess_env())  # fmt: skip
    try:
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=180)
    finally:
        process.kill()  # one still playing fails the test, and stops
    assert process.returncode == 130, (process.returncode, err)
    assert "Traceback" not in err, err
    if out:  # the signal came during the games: those played, as one result line
        assert re.search(r" \(stopped after \d+ of 1000 games\)$", out.strip()), out
