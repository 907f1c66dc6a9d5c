"""The exact Hex solver against brute force and known results.

References: plain minimax over OpenSpiel's Hex (its own rules and win test; memoised on the
board) on every 3x3 position and on 4x4 positions of eight stones; known results: the first
player wins every n x n board (Nash's strategy-stealing argument), so under the swap rule
every first move loses; the winning openings of 4x4 are the four cells of the short
diagonal (d1 c2 b3 a4), which a plain minimax of all 2.3 million 4x4 positions reproduces
(OPENINGS; run once, 2.5 minutes); the 5x5 openings (the deep test) are the solver's own.
"""

import functools

import jax
import numpy as np
import pytest
from conftest import tiny_config, untrained_run

from azjax import games
from azjax.games.hex import Hex
from azjax.matches import mistakes
from azjax.matches.agent import load_agent
from azjax.matches.engines.hex_solver import OPENINGS, HexSolver
from azjax.types import UserError

pyspiel = pytest.importorskip("pyspiel")


def cells_of(spiel_state, size: int) -> np.ndarray:
    """An OpenSpiel Hex state's board as azjax cells (+1 Black "x", -1 White "o")."""
    text = str(spiel_state).replace(" ", "").replace("\n", "")
    return np.array([{"x": 1, "o": -1, ".": 0}[c] for c in text], np.int8).reshape(size * size)


@functools.cache
def spiel_game(size: int):
    return pyspiel.load_game("hex", {"board_size": size})


def minimax(spiel_state, memo: dict) -> bool:
    """Whether the player to move wins, by trying every move (OpenSpiel's rules)."""
    key = str(spiel_state)
    if key not in memo:
        memo[key] = any(
            spiel_state.child(a).is_terminal() or not minimax(spiel_state.child(a), memo)
            for a in spiel_state.legal_actions()
        )
    return memo[key]


def test_every_3x3_position_as_minimax_scores_it():
    solver, memo, seen = HexSolver(3), {}, set()

    def visit(state):
        key = str(state)
        if state.is_terminal() or key in seen:
            return
        seen.add(key)
        player = state.current_player()
        assert solver.wins(cells_of(state, 3), player) == minimax(state, memo), key
        for action in state.legal_actions():
            visit(state.child(action))

    visit(spiel_game(3).new_initial_state())
    assert len(seen) > 2000


def test_4x4_positions_of_eight_stones_as_minimax_scores_them():
    solver, rng, checked = HexSolver(4), np.random.default_rng(0), 0
    while checked < 25:
        state = spiel_game(4).new_initial_state()
        for _ in range(8):
            if not state.is_terminal():
                state.apply_action(int(rng.choice(state.legal_actions())))
        if state.is_terminal():
            continue
        assert solver.wins(cells_of(state, 4), state.current_player()) == minimax(state, {})
        checked += 1


@pytest.mark.parametrize("size", [2, 3, 4])
def test_the_first_player_wins_and_the_openings_are_known(size):
    solver = HexSolver(size)
    empty = np.zeros(size * size, np.int8)
    assert solver.wins(empty, 0)
    winning = [c for c in range(size * size) if not solver.wins(np.eye(size * size)[c], 1)]
    assert tuple(winning) == OPENINGS[size]
    assert {size * size - 1 - c for c in winning} == set(winning)  # the half turn
    if size % 2:
        assert (size * size) // 2 in winning  # the centre
    if size == 4:
        assert winning == [3, 6, 9, 12]  # the short diagonal: d1 c2 b3 a4


@pytest.mark.parametrize("size", [2, 3, 4])
def test_under_the_swap_rule_every_first_move_loses(size):
    solver, game = HexSolver(size), Hex(size, swap=True)
    start = game.init(jax.random.key(0))
    assert set(solver.outcomes(start).values()) == {-1}
    swap = size * size
    for cell in range(swap):  # White swaps exactly the winning openings
        outcomes = solver.outcomes(game.step(start, cell))
        assert (outcomes[swap] == 1) == (cell in OPENINGS[size])
        assert max(outcomes.values()) == 1


def test_outcomes_and_best_agree_with_the_positions_after_each_move():
    solver, game, rng = HexSolver(4), Hex(4), np.random.default_rng(1)
    step = jax.jit(game.step)
    for _ in range(10):
        state = game.init(jax.random.key(0))
        for _ in range(int(rng.integers(0, 7))):
            state = step(state, int(rng.choice(np.flatnonzero(state.legal_action_mask))))
        if bool(state.terminated):
            continue
        outcomes = solver.outcomes(state)
        assert sorted(outcomes) == np.flatnonzero(state.legal_action_mask).tolist()
        mover_wins = solver.wins(state.board, int(state.current_player))
        assert (max(outcomes.values()) == 1) == mover_wins
        assert outcomes[solver.best(state)] == max(outcomes.values())
        for action, outcome in outcomes.items():
            child = step(state, action)
            won = bool(child.terminated) or not solver.wins(child.board, int(child.current_player))
            assert won == (outcome == 1)


def test_sizes_out_of_range_are_refused():
    for size in (1, 6):
        with pytest.raises(UserError, match="boards of 2x2 to 5x5"):
            HexSolver(size)


def test_mistakes_positions_of_4x4_hex():
    game = Hex(4)
    positions = mistakes.make_positions(60, seed=3, game=game)
    again = mistakes.make_positions(60, seed=3, game=game)
    assert positions.moves == again.moves and (positions.scores == again.scores).all()
    states = positions.states(game)
    assert len({bytes(np.asarray(board)) for board in states.board}) == 60
    assert not states.terminated.any() and len({len(m) for m in positions.moves}) > 5
    np.testing.assert_array_equal(states.legal_action_mask, positions.legal)
    solver = HexSolver(4)
    perfect = [solver.best(jax.tree.map(lambda x, i=i: x[i], states)) for i in range(60)]
    assert not positions.mistakes(perfect).any()
    rng = np.random.default_rng(0)
    chance = [rng.choice(np.flatnonzero(legal)) for legal in positions.legal]
    assert 0.05 < positions.mistakes(chance).mean() < 0.6
    assert set(np.unique(positions.scores)) == {-1, 0, 1}  # a win or a loss; 0: illegal


def test_a_small_board_with_too_few_positions_is_refused():
    # 2x2 Hex has 23 positions that have not ended: the empty board, 4 with one stone, 12
    # with two, and 6 with Black's two stones apart and a White stone.
    with pytest.raises(UserError, match="gave 23 distinct positions .* fewer than the 50"):
        mistakes.make_positions(50, seed=0, game=Hex(2))


def test_an_agent_is_measured_against_perfect_hex(tmp_path):
    config = tiny_config("hex_5x5")
    config.game_kwargs.size = 4
    agent = load_agent(untrained_run(tmp_path / "hex", config))
    positions = mistakes.make_positions(20, seed=0, game=agent.game)
    record = mistakes.measure(agent, positions, 4, name="hex", seed=0)
    assert record["positions"] == 20 and record["solver"] == "azjax hex_solver 4x4"
    with pytest.raises(UserError, match=r"in hex up to 5x5 only; a run plays hex \(Hex\(size=7"):
        mistakes.require_solved(games.make("hex_7x7"), "a run")


@pytest.mark.deep
@pytest.mark.timeout(3600)
def test_the_5x5_openings():
    solver = HexSolver(5)
    assert solver.wins(np.zeros(25, np.int8), 0)
    winning = [c for c in range(25) if not solver.wins(np.eye(25)[c], 1)]
    assert tuple(winning) == OPENINGS[5]
