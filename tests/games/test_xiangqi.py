"""Xiangqi against published perft counts, OpenSpiel and hand-made positions.

Where each expected figure comes from:
- Perft (leaf positions 1-4 plies below a position, 5 for the start under the `deep` mark,
  run by `pytest -m deep`;
  a mated side has no leaves): the Chess Programming Wiki's "Chinese Chess Perft Results"
  (chessprogramming.org/Chinese_Chess_Perft_Results), the start position and ten middle
  and end game positions, the table engines such as PikaChess test against.
- Random play: OpenSpiel's `xiangqi` (pip open-spiel 2.0, open_spiel/games/xiangqi), a
  separate C++ implementation with the same move rules and "no legal move loses". It has
  no repetition or no-capture rule and draws at 500 plies, so one test plays our game with
  those options (no repetition, no no-capture limit, 500 plies) and compares every ply; a
  second plays our default rules and compares every ply up to the draws OpenSpiel lacks,
  checking which rule fired.
- Labels: cchess-zero's `create_uci_labels` (2086 labels: every move along a rank or file,
  every horse jump, then the advisor and elephant diagonals in its order), and a count
  made here from the geometry.
- Hand-made positions: each FEN below is a minimal position built for one rule, with
  every legal move of the side to move derived by hand in the comment above it.
- Perpetual check: hand-made lines (`REPEATING`) whose every move, check and repetition is
  worked out in the comment above it; the verdict of each line's last move is also asked
  of Fairy-Stockfish (`/usr/games/fairy-stockfish`, its `xiangqi` variant with the
  `perpetualCheckIllegal` rule), which agrees except where the class docstring says it
  differs (a mutual perpetual check, which its releases before 2022 lose for the side that
  completes it).
"""

import re
import subprocess

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import optimized_jit, require_program
from positions import board
from xiangqi_reference import assert_matches_openspiel, perft

import azjax.games
from azjax.games import notation, xiangqi
from azjax.games.notation.xiangqi import START_FEN, from_fen, square_name, to_fen
from azjax.games.xiangqi import Xiangqi
from azjax.types import UserError

pyspiel = pytest.importorskip("pyspiel")

NUM_GAMES = 150  # random games per OpenSpiel comparison

# Chess Programming Wiki, Chinese Chess Perft Results: FEN -> leaves at depths 1-4.
PERFT = {
    START_FEN: [44, 1920, 79666, 3290240],
    "r1ba1a3/4kn3/2n1b4/pNp1p1p1p/4c4/6P2/P1P2R2P/1CcC5/9/2BAKAB2 w": [38, 1128, 43929, 1339047],
    "1cbak4/9/n2a5/2p1p3p/5cp2/2n2N3/6PCP/3AB4/2C6/3A1K1N1 w": [7, 281, 8620, 326201],
    "5a3/3k5/3aR4/9/5r3/5n3/9/3A1A3/5K3/2BC2B2 w": [25, 424, 9850, 202884],
    "CRN1k1b2/3ca4/4ba3/9/2nr5/9/9/4B4/4A4/4KA3 w": [28, 516, 14808, 395483],
    "R1N1k1b2/9/3aba3/9/2nr5/2B6/9/4B4/4A4/4KA3 w": [21, 364, 7626, 162837],
    "C1nNk4/9/9/9/9/9/n1pp5/B3C4/9/3A1K3 w": [28, 222, 6241, 64971],
    "4ka3/4a4/9/9/4N4/p8/9/4C3c/7n1/2BK5 w": [23, 345, 8124, 149272],
    "2b1ka3/9/b3N4/4n4/9/9/9/4C4/2p6/2BK5 w": [21, 195, 3883, 48060],
    "1C2ka3/9/C1Nab1n2/p3p3p/6p2/9/P3P3P/3AB4/3p2c2/c1BAK4 w": [30, 830, 22787, 649866],
    "CnN1k1b2/c3a4/4ba3/9/2nr5/9/9/4C4/4A4/4KA3 w": [19, 583, 11714, 376467],
}

# Hand-made positions: FEN -> every legal move of the side to move (ICCS, sorted).
HAND_MADE = {
    # Chariot b4: along rank 4 to a4 and c4-e4 (f4 holds its own horse), along the b-file
    # down to b0 and up to b7, capturing the black horse there. Horse f4: all 8 jumps.
    # General d0: e0 would face the black general on the open e-file, c0 is outside.
    "chariot": (
        "4k4/9/1n7/9/9/1R3N3/9/9/9/3K5 w",
        "b4a4 b4b0 b4b1 b4b2 b4b3 b4b5 b4b6 b4b7 b4c4 b4d4 b4e4 "
        "d0d1 f4d3 f4d5 f4e2 f4e6 f4g2 f4g6 f4h3 f4h5",
    ),
    # Horse c2: legs c3 (soldier) and d2 (cannon) are taken, so only the jumps over the
    # free legs b2 and c1 remain: a1, a3, b0, d0. Cannon d2: no screen to take d9. General
    # e0: d0 is shielded from the black general by the cannon.
    "horse": (
        "3k5/9/9/9/9/9/2P6/2NC5/9/4K4 w",
        "c2a1 c2a3 c2b0 c2d0 c3c4 d2d0 d2d1 d2d3 d2d4 d2d5 d2d6 d2d7 d2d8 d2e2 d2f2 d2g2 "
        "d2h2 d2i2 e0d0 e0e1 e0f0",
    ),
    # Elephant e2: c4 is behind the occupied eye d3, g4 holds the other elephant; c0 and g0
    # are free. Elephant g4 may not cross the river to e6 or i6 and e2 is taken: only i2.
    "elephant": (
        "3k5/9/9/9/9/6B2/3N5/4B4/9/4K4 w",
        "d3b2 d3b4 d3c1 d3c5 d3e1 d3e5 d3f2 d3f4 e0d0 e0e1 e0f0 e2c0 e2g0 g4i2",
    ),
    # Advisor e1 reaches the four palace corners. General e0: e1 is its own advisor and
    # f0 would face the black general on the open f-file, so only d0.
    "advisor and general": ("5k3/9/9/9/9/9/9/9/4A4/4K4 w", "e0d0 e1d0 e1d2 e1f0 e1f2"),
    # General d2 in the palace corner: c2 and d3 are outside the palace, e2 faces the black
    # general on the open e-file; d1 is the only move.
    "palace": ("4k4/9/9/9/9/9/9/3K5/9/9 w", "d2d1"),
    # Cannon b2 moves like a chariot (a2, c2, b0, b1, b3, b4) and captures by jumping
    # exactly one screen: the horse b5 to take the chariot b7, its own horse d2 to take the
    # horse g2; never b6 (a move needs no screen) nor h2 (two screens). The black horse g2
    # guards e1 and f0, so the general only has d0.
    "cannon": (
        "3k5/9/1r7/9/1n7/9/9/1C1N2np1/9/4K4 w",
        "b2a2 b2b0 b2b1 b2b3 b2b4 b2b7 b2c2 b2g2 d2b1 d2b3 d2c0 d2c4 d2e4 d2f1 d2f3 e0d0",
    ),
    # Soldiers: e3 (own half) only forward; c5 (across the river) forward or sideways,
    # never back; a9 (last rank) only sideways. General e0: d0 faces the black general.
    "soldier": ("P2k5/9/9/9/2P6/9/4P4/9/9/4K4 w", "a9b9 c5b5 c5c6 c5d5 e0e1 e0f0 e3e4"),
    # The horse e2 is pinned by the chariot e7 against its general: none of its moves is
    # legal. General: d0 faces the black general d9, f0 and e1 are safe.
    "pinned horse": ("3k5/9/4r4/9/9/9/9/4N4/9/4K4 w", "e0e1 e0f0"),
    # Flying general: the cannon e5 is the only piece between the generals, so it may only
    # move along the e-file (it cannot take the general: no screen).
    "flying general": (
        "4k4/9/9/9/4C4/9/9/9/9/4K4 w",
        "e0d0 e0e1 e0f0 e5e1 e5e2 e5e3 e5e4 e5e6 e5e7 e5e8",
    ),
    # Discovered horse check: the chariot d1 stands on the leg of the horse d2, which would
    # otherwise take the general e0; it may only capture the horse. f0 faces the general.
    "horse leg": ("5k3/9/9/9/9/9/9/3n5/3R5/4K4 w", "d1d2 e0d0 e0e1"),
    # A move onto the e-file between the general e0 and the cannon e7 (horse to e1 or e3)
    # would make a screen and give check.
    "cannon screen": (
        "4k4/9/4c4/9/9/9/9/2N6/9/4K4 w",
        "c2a1 c2a3 c2b0 c2b4 c2d0 c2d4 e0d0 e0e1 e0f0",
    ),
    # Black to move, in check from the chariot e1: e8 is still on the chariot's file, the
    # horse g7 guards f9 (and e8); d9 is safe.
    "black in check": ("4k4/9/6N2/9/9/9/9/9/4R4/5K3 b", "e9d9"),
}

# Lines that repeat a position for the third time on their last move: FEN, ICCS moves, and
# the rewards (Red, Black) of the last move under the perpetual-check rule.
REPEATING = {
    # Black is in check from the chariot a9 and shuffles its general e9-e8-e9 while the
    # chariot follows it a9-a8-a9, checking along the general's rank each time (the red
    # general d0 keeps d8 and d9 off limits). Red checks with every move, Black never: the
    # start stands a third time after the 8th ply (Red's 4th move) and Red loses.
    "red checks, red repeats": (
        "R3k4/9/9/9/9/9/9/9/9/3K5 b",
        "e9e8 a9a8 e8e9 a8a9 e9e8 a9a8 e8e9 a8a9",
        [-1.0, 1.0],
    ),
    # The same chase started one ply earlier, from the chariot a8 (no check): the start,
    # Red to move, stands a third time after the 8th ply (Black's 4th move). Red loses again.
    "red checks, black repeats": (
        "4k4/R8/9/9/9/9/9/9/9/3K5 w",
        "a8a9 e9e8 a9a8 e8e9 a8a9 e9e8 a9a8 e8e9",
        [-1.0, 1.0],
    ),
    # Both sides shuffle a horse (b9-c7, b0-c2 and back), never giving check; Red is a
    # chariot up, yet the third occurrence of the start draws.
    "no checks": (
        "1n2k4/9/9/9/9/9/9/9/9/1N1K4R b",
        "b9c7 b0c2 c7b9 c2b0 b9c7 b0c2 c7b9 c2b0",
        [0.0, 0.0],
    ),
    # Mutual perpetual check with two cannons: the black cannon f9 checks the red general
    # f0 when exactly one piece stands between them on the f-file, the red cannon i8 checks
    # the black general d8 when exactly one stands between on rank 8. At the start the red
    # horse f6 is that screen (Red in check). f6e8 leaves the f-file and screens rank 8;
    # d7f8 adds a second screen on rank 8 and screens the f-file alone; e8f6 and f8d7 undo
    # it the same way. Each move escapes check and gives check: a draw.
    "both check": (
        "5c3/3k4C/3n5/5N3/9/9/9/9/9/5K3 w",
        "f6e8 d7f8 e8f6 f8d7 f6e8 d7f8 e8f6 f8d7",
        [0.0, 0.0],
    ),
    # Red first shuffles its general d0-d1 (no check) while Black shuffles e9-f9, and only
    # the second time round checks with the chariot a8-a9-a8. Red has not checked with
    # every move since the start first stood: a draw.
    "checks start after the first occurrence": (
        "4k4/R8/9/9/9/9/9/9/9/3K5 w",
        "d0d1 e9f9 d1d0 f9e9 a8a9 e9e8 a9a8 e8e9",
        [0.0, 0.0],
    ),
}


@pytest.fixture(scope="module")
def game():
    return azjax.games.make("xiangqi")


@pytest.fixture(scope="module")
def step(game):
    """`game.step`, compiled once for the module (eager steps dispatch op by op)."""
    return jax.jit(game.step)


@pytest.fixture(scope="module")
def batched_step(game):
    """`vmap(game.step)` for perft, compiled once for the module, optimised: the
    start position's 3.3 million steps run in 6 s, not 10, for a compile of a few seconds."""
    return optimized_jit(jax.vmap(game.step))


def legal_moves(game, state) -> list[str]:
    return sorted(
        notation.action_to_string(game, a, state) for a in np.flatnonzero(state.legal_action_mask)
    )


def play(game, step, fen, moves):
    """Plays ICCS moves from a FEN, checking each is legal while the game runs."""
    state = from_fen(game, fen)
    for move in moves:
        assert not bool(state.terminated)
        state = step(state, notation.parse_action(game, move, state))
    return state


def test_labels():
    labels = [square_name(a) + square_name(b) for a, b in xiangqi.LABELS]
    assert len(labels) == len(set(labels)) == xiangqi.NUM_ACTIONS == 2086
    # cchess-zero's order: origin a0 first (its rank, its file, the horse jumps c1 and b2),
    # ..., then the advisor diagonals from index 2038, the elephant steps from 2054.
    a0 = [f"a0{f}0" for f in "bcdefghi"] + [f"a0a{r}" for r in range(1, 10)] + ["a0c1", "a0b2"]
    assert labels[:19] == a0
    advisors = "d7e8 e8d7 e8f9 f9e8 d0e1 e1d0 e1f2 f2e1 d2e1 e1d2 e1f0 f0e1 d9e8 e8d9 e8f7 f7e8"
    assert labels[2038:2054] == advisors.split()
    assert labels[2054:2058] == ["a2c4", "c4a2", "c0e2", "e2c0"] and labels[-1] == "i7g9"
    # Every geometrically possible move, built here from the board: 90 x 17 along ranks and
    # files, 508 horse jumps, 2 palaces x 4 diagonals and 2 halves x 8 elephant steps, each
    # both ways.
    points = [(f, r) for f in range(9) for r in range(10)]

    def name(*squares):
        return "".join("abcdefghi"[f] + str(r) for f, r in squares)

    lines = {
        name(a, b) for a in points for b in points if a != b and (a[0] == b[0] or a[1] == b[1])
    }
    jumps = {
        name(a, b) for a in points for b in points if {abs(a[0] - b[0]), abs(a[1] - b[1])} == {1, 2}
    }
    palace_diagonals = {
        name(centre, (centre[0] + df, centre[1] + dr))
        for centre in [(4, 1), (4, 8)]
        for df in (-1, 1)
        for dr in (-1, 1)
    }
    red_elephant = [(2, 0), (6, 0), (0, 2), (4, 2), (8, 2), (2, 4), (6, 4)]
    elephant_points = red_elephant + [(f, 9 - r) for f, r in red_elephant]
    elephant_steps = {
        name(a, b)
        for a in elephant_points
        for b in elephant_points
        if abs(a[0] - b[0]) == 2 and abs(a[1] - b[1]) == 2 and (a[1] < 5) == (b[1] < 5)
    }
    diagonals = palace_diagonals | {label[2:] + label[:2] for label in palace_diagonals}
    assert (len(lines), len(jumps), len(diagonals), len(elephant_steps)) == (1530, 508, 16, 32)
    assert set(labels) == lines | jumps | diagonals | elephant_steps


def test_start_position(game):
    state = game.init(jax.random.key(0))
    assert notation.render(game, state) == board(
        """
        9 r n b a k a b n r
        8 . . . . . . . . .
        7 . c . . . . . c .
        6 p . p . p . p . p
        5 . . . . . . . . .
        4 . . . . . . . . .
        3 P . P . P . P . P
        2 . C . . . . . C .
        1 . . . . . . . . .
        0 R N B A K A B N R
          a b c d e f g h i
        Red to move
        """
    )
    assert to_fen(game, state) == START_FEN
    assert len(legal_moves(game, state)) == 44
    assert game.observation_shape == (10, 9, 16) and game.max_episode_length == 400


def test_setup_takes_a_board_and_runs_under_jit(game):
    """The kernel takes a board array (`setup`); `from_fen` parses a FEN into one."""
    state = from_fen(game, "4k4/9/9/9/9/9/9/9/4A4/3K5 b - - 7 30")
    again = jax.jit(game.setup)(state.board, state.current_player, state.no_capture_plies)
    jax.tree.map(np.testing.assert_array_equal, state, again)
    jax.tree.map(
        np.testing.assert_array_equal, game.init(jax.random.key(0)), from_fen(game, START_FEN)
    )


@pytest.mark.slow  # Xiangqi's step compiled: 47 s for the ten positions
@pytest.mark.parametrize("fen", list(PERFT))
def test_perft(game, batched_step, fen):
    assert perft(from_fen(game, fen), 4, batched_step) == PERFT[fen]


@pytest.mark.deep
def test_perft_depth_5(game, batched_step):
    """133,312,995 leaves (same table): 3.3 million steps, half a minute and 1.3 GB."""
    assert perft(game.init(jax.random.key(0)), 5, batched_step)[-1] == 133_312_995


@pytest.mark.slow  # 20 s
def test_random_play_matches_openspiel():
    game = Xiangqi(max_episode_length=500, no_capture_limit=None, repetition_limit=None)
    # Fewer games than below: the games with the draw rules already compare every ply up to
    # a draw; these add the plies past it, to the 500-ply limit.
    endings = assert_matches_openspiel(game, pyspiel.load_game("xiangqi"), 60, seed=1)
    # Both sides win some games (checkmate or stalemate), others reach the move limit.
    assert endings["red"] > 0 and endings["black"] > 0 and endings["move limit"] > 0


@pytest.mark.slow  # 30 s
def test_random_play_with_draw_rules_matches_openspiel_until_a_draw(game):
    endings = assert_matches_openspiel(game, pyspiel.load_game("xiangqi"), NUM_GAMES, seed=2)
    # Every ending OpenSpiel can check occurs (with this seed: 22 Red and 30 Black wins, 87
    # games reaching the 400-ply limit, 8 repetitions, 3 without a capture for 120 plies).
    # Random play gives no perpetual check here; REPEATING's hand-made lines test that rule.
    perpetual = endings.pop("perpetual check")
    assert all(count > 0 for count in endings.values()) and perpetual == 0, endings


@pytest.mark.parametrize("name", list(HAND_MADE))
def test_hand_made_positions(game, name):
    fen, moves = HAND_MADE[name]
    assert legal_moves(game, from_fen(game, fen)) == sorted(moves.split())


def test_checkmate(game, step):
    # Chariot b1-b9 checks along rank 9; the chariot a8 holds rank 8, so d9, f9 and e8
    # are all attacked: mate.
    fen = "4k4/R8/9/9/9/9/9/9/1R7/3K5 w"
    state = play(game, step, fen, ["b1b9"])
    assert bool(state.terminated) and state.rewards.tolist() == [1.0, -1.0]
    assert notation.render(game, state).splitlines()[-1] == "Black is checkmated: Red wins"
    assert not state.legal_action_mask.any()
    assert not bool(from_fen(game, fen).terminated)


def test_stalemate_loses(game, step):
    # After a7-a8 Black's general d9 is not attacked, but d8 (chariot a8) and e9 (chariot
    # e1) are, and c9 is outside the palace: no legal move, and Black loses.
    state = play(game, step, "3k5/9/R8/9/9/9/9/9/4R4/5K3 w", ["a7a8"])
    assert bool(state.terminated) and state.rewards.tolist() == [1.0, -1.0]
    assert not game.in_check(state)
    assert notation.render(game, state).splitlines()[-1] == "Black is stalemated: Red wins"
    # A stalemated position given as FEN is over before any move.
    stalemated = from_fen(game, to_fen(game, state))
    assert bool(stalemated.terminated) and not stalemated.legal_action_mask.any()


def test_check_is_shown(game):
    state = from_fen(game, HAND_MADE["black in check"][0])
    assert game.in_check(state)
    assert notation.render(game, state).splitlines()[-1] == "Black to move (in check)"


def test_threefold_repetition_is_a_draw(game, step):
    shuffle = ["b0c2", "b9c7", "c2b0", "c7b9"]
    state = play(game, step, START_FEN, shuffle)  # The start position, a second time.
    assert int(state.repetitions) == 2 and not bool(state.terminated)
    assert game.observe(state)[..., 15].min() == 0.5  # earlier occurrences / (3 - 1)
    state = play(game, step, START_FEN, shuffle * 2)  # and a third time: a draw
    assert bool(state.terminated) and state.rewards.tolist() == [0.0, 0.0]
    assert notation.render(game, state).splitlines()[-1] == "draw: position repeated 3 times"
    no_rule = Xiangqi(repetition_limit=None)
    assert not bool(play(no_rule, jax.jit(no_rule.step), START_FEN, shuffle * 3).terminated)


@pytest.mark.parametrize("name", list(REPEATING))
def test_repetition_with_perpetual_check(game, step, name):
    """Each line of REPEATING, its verdict worked out by hand (see there)."""
    fen, moves, rewards = REPEATING[name]
    moves = moves.split()
    before = play(game, step, fen, moves[:-1])
    assert not bool(before.terminated) and int(before.repetitions) <= 2
    state = play(game, step, fen, moves)
    assert bool(state.terminated) and int(state.repetitions) == 3
    assert state.rewards.tolist() == rewards
    status = notation.render(game, state).splitlines()[-1]
    if rewards[0] < 0:
        assert game.perpetual_checker(state) == 0
        assert status == "Red checked perpetually: Black wins"
    else:
        assert game.perpetual_checker(state) is None
        assert status == "draw: position repeated 3 times"


def test_perpetual_check_rule_off_draws():
    """With `perpetual_check_loses=False` Red's perpetual check draws, as every repetition
    did before the rule."""
    game = Xiangqi(perpetual_check_loses=False)
    assert "perpetual_check_loses=False" in repr(game)
    for name in ["red checks, red repeats", "red checks, black repeats"]:
        fen, moves, _ = REPEATING[name]
        state = play(game, jax.jit(game.step), fen, moves.split())
        assert bool(state.terminated) and state.rewards.tolist() == [0.0, 0.0]
        assert game.perpetual_checker(state) is None
    with pytest.raises(ValueError, match="perpetual_check_loses"):
        Xiangqi(perpetual_check_loses="no")


def test_perpetual_check_under_jit_matches_eager(game):
    """A jitted scan of `step` over a line reaches the same states as eager steps."""
    fen, moves, rewards = REPEATING["red checks, red repeats"]
    state = from_fen(game, fen)
    actions = []
    eager = [state]
    for move in moves.split():
        actions.append(notation.parse_action(game, move, eager[-1]))
        eager.append(game.step(eager[-1], actions[-1]))

    def replay(state, actions):
        return jax.lax.scan(lambda s, a: (game.step(s, a),) * 2, state, actions)[1]

    jitted = jax.jit(replay)(state, np.asarray(actions, np.int32))
    expected = jax.tree.map(lambda *xs: np.stack(xs), *eager[1:])
    jax.tree.map(np.testing.assert_array_equal, jitted, expected)
    assert jitted.rewards[-1].tolist() == rewards and jitted.terminated.tolist() == [0] * 7 + [1]


def _uci(move: str) -> str:
    """Fairy-Stockfish's name of an ICCS move: the same files, ranks counted from 1."""
    return f"{move[0]}{int(move[1]) + 1}{move[2]}{int(move[3]) + 1}"


def fairy_stockfish_verdict(fen: str, moves: list[str]) -> tuple[str, str]:
    """Fairy-Stockfish's score for the last of `moves` played from `fen`, searched alone
    (`go depth 5 searchmoves`) after the others.

    Returns:
      (engine name, score): the engine's `id name` and the UCI score of the last
      iteration, "mate N" (N moves to mate, negative: the mover is mated) or "cp N".
    """
    path = require_program(
        "fairy-stockfish", install="apt-get install fairy-stockfish", paths=("/usr/games",)
    )
    commands = [
        "uci",
        "setoption name UCI_Variant value xiangqi",
        f"position fen {fen} - - 0 1 moves {' '.join(map(_uci, moves[:-1]))}",
        f"go depth 5 searchmoves {_uci(moves[-1])}",
    ]
    with subprocess.Popen(
        [path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as engine:
        engine.stdin.write("\n".join(commands) + "\n")
        engine.stdin.flush()
        name, scores = "", []
        for line in engine.stdout:
            name = line[len("id name ") :].strip() if line.startswith("id name ") else name
            scores += re.findall(r" score (cp -?\d+|mate -?\d+)", line)
            if line.startswith("bestmove"):
                break
        engine.stdin.write("quit\n")
        engine.stdin.flush()
    assert scores, f"{name or path} gave no score"
    return name, scores[-1]


@pytest.mark.parametrize("name", list(REPEATING))
def test_perpetual_check_agrees_with_fairy_stockfish(game, step, name):
    """Fairy-Stockfish scores the last move of each line as its repetition rule ends it:
    "mate 1" (the mover wins at once), "mate -1" (the mover loses at once) or "cp 0" (a
    draw; every line leaves one side far ahead otherwise). Our reward for the mover must
    match, except in the mutual perpetual check, which Fairy-Stockfish before 2022
    (version 14 and older; Debian ships 11.1) lets the side that completes it lose where
    later versions and we draw."""
    fen, moves, _ = REPEATING[name]
    moves = moves.split()
    state = play(game, step, fen, moves)
    mover = 1 - int(state.current_player)
    ours = {1.0: "mate 1", -1.0: "mate -1", 0.0: "cp 0"}[state.rewards.tolist()[mover]]
    engine, score = fairy_stockfish_verdict(fen, moves)
    version = re.match(r"Fairy-Stockfish (\d+)", engine)
    if name == "both check" and version and int(version[1]) <= 14:
        assert score == "mate -1", engine
    else:
        assert score == ours, engine
    if ours == "mate -1":
        # One cycle earlier (the second occurrence) the same checking move does not lose:
        # Fairy-Stockfish also ends the game at the third occurrence, not the second.
        assert fairy_stockfish_verdict(fen, moves[:-4])[1] != "mate -1"


def test_position_hashes_follow_the_board(game, step):
    """The hash `step` updates move by move equals the hash of the board it reaches."""
    state, key = game.init(jax.random.key(0)), jax.random.key(4)
    for _ in range(80):
        ring = state.history.shape[0]
        expected = xiangqi.position_hash(np.asarray(state.board), int(state.current_player))
        np.testing.assert_array_equal(state.history[int(state.step_count) % ring], expected)
        # The check flag beside it, taken from the move generator's king-safety words.
        assert bool(state.checks[int(state.step_count) % ring]) == game.in_check(state)
        if bool(state.terminated):
            break
        key, choice = jax.random.split(key)
        state = step(state, jax.random.choice(choice, np.flatnonzero(state.legal_action_mask)))


def test_no_capture_limit_is_a_draw(game, step):
    fen = "4k4/9/9/9/9/9/9/9/4A4/3K5 w - - 118 60"
    state = play(game, step, fen, ["e1d2"])
    assert int(state.no_capture_plies) == 119 and not bool(state.terminated)
    assert np.allclose(game.observe(state)[..., 14], 119 / 120)
    state = play(game, step, fen, ["e1d2", "e9e8"])
    assert bool(state.terminated) and state.rewards.tolist() == [0.0, 0.0]
    assert notation.render(game, state).splitlines()[-1] == "draw: 120 plies without a capture"
    # A capture starts the count again.
    state = play(game, step, "4k4/9/9/9/9/9/9/5p3/4A4/3K5 w - - 100 60", ["e1f2"])
    assert int(state.no_capture_plies) == 0
    with pytest.raises(UserError, match="no-capture limit"):
        from_fen(game, "4k4/9/9/9/9/9/9/9/4A4/3K5 w - - 120 60")


def test_stored_observations_keep_the_counters_exactly(game, step):
    """Replay's compact form stores the counter planes as counts: 119 plies without a
    capture (the largest before the draw) and a repetition round-trip to the float32
    observation bit for bit, in uint8; without the draw limits counts reach the 500-ply
    move limit, which needs uint16."""
    fen = "4k4/9/9/9/9/9/9/9/4A4/3K5 w - - {} 60"
    state = play(game, step, fen.format(10), ["e1d2", "e9e8", "d2e1", "e8e9"])  # repeated
    for position in (state, play(game, step, fen.format(118), ["e1d2"])):
        obs = game.observe(position)
        stored = game.encode_observation(obs)
        assert stored.dtype == jnp.uint8
        np.testing.assert_array_equal(game.decode_observation(stored), obs)
    assert int(state.repetitions) == 2
    assert int(game.encode_observation(game.observe(state))[0, 0, 15]) == 1
    unlimited = Xiangqi(max_episode_length=500, no_capture_limit=None, repetition_limit=None)
    obs = unlimited.observe(unlimited.setup(state.board, state.current_player, 499))
    assert unlimited.encode_observation(obs).dtype == jnp.uint16
    assert int(unlimited.encode_observation(obs)[0, 0, 14]) == 499
    decoded = unlimited.decode_observation(unlimited.encode_observation(obs))
    np.testing.assert_array_equal(decoded, obs)


def test_move_limit_is_a_draw():
    game = Xiangqi(max_episode_length=2)
    state = play(game, jax.jit(game.step), START_FEN, ["h2e2", "h7e7"])
    assert bool(state.terminated) and state.rewards.tolist() == [0.0, 0.0]
    assert notation.render(game, state).splitlines()[-1] == "draw: move limit of 2 plies"


@pytest.mark.parametrize("fen", [*PERFT, *(fen for fen, _ in HAND_MADE.values())])
def test_fen_round_trip(game, fen):
    fields = fen.split()
    full = " ".join(fields[:2] + ["-", "-", "0", "1"]) if len(fields) == 2 else fen
    assert to_fen(game, from_fen(game, fen)) == full


def test_fen_notation(game, step):
    # The Chess Programming Wiki writes the start with H (horse) and E (elephant).
    wiki = "rheakaehr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RHEAKAEHR w - - 0 1"
    assert to_fen(game, from_fen(game, wiki)) == START_FEN
    board_only = START_FEN.split()[0]
    assert to_fen(game, from_fen(game, board_only)) == START_FEN
    # Counters: plies without a capture (from the FEN), moves numbered from 1 at its
    # position.
    state = play(game, step, START_FEN, ["h2e2"])
    assert (
        to_fen(game, state)
        == "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b - - 1 1"
    )
    state = play(game, step, START_FEN, ["h2e2", "h7e7"])
    assert to_fen(game, state).endswith(" w - - 2 2")
    black = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b - - 1 1"
    assert to_fen(game, play(game, step, black, ["h7e7"])).endswith(" w - - 2 2")


@pytest.mark.parametrize(
    "fen, message",
    [
        ("", "expected"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9 w", "10 ranks"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABN w", "covers 8 files"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNRR w", "covers 10"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNX w", "unknown piece"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR x", "side to move"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w K - 0 1", "castling"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - x 1", "whole"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBA1ABNR w", "0 generals"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/R8/RNBAKABNR w", "3 chariots"),
        ("4k4/9/9/9/9/9/9/9/3A5/3K5 w", "advisor cannot stand on d1"),
        ("4k4/9/9/9/9/4B4/9/9/9/3K5 w", "elephant cannot stand on e4"),
        ("4k4/9/9/9/9/9/1P7/9/9/3K5 w", "soldier cannot stand on b3"),
        ("4k4/9/9/9/9/9/9/9/9/2K6 w", "general cannot stand on c0"),
        ("4k4/9/9/9/9/9/9/9/9/4K4 w", "not to move is in check"),
        ("4k4/9/9/9/9/9/9/9/9/3K5 b", None),  # legal: Black to move
    ],
)
def test_bad_fen(game, fen, message):
    if message is None:
        from_fen(game, fen)
        return
    with pytest.raises(UserError, match=re.escape(message)) as error:
        from_fen(game, fen)
    assert "\n" not in str(error.value) and str(error.value).startswith("bad FEN")


def test_iccs_round_trip(game, step):
    state = game.init(jax.random.key(0))
    key = jax.random.key(3)
    for _ in range(40):  # random plies; both sides move
        if bool(state.terminated):
            break
        for action in np.flatnonzero(state.legal_action_mask):
            name = notation.action_to_string(game, action, state)
            assert notation.parse_action(game, name, state) == action
            assert (
                notation.parse_action(game, f" {name[:2].upper()}-{name[2:].upper()} ", state)
                == action
            )
        key, choice = jax.random.split(key)
        state = step(state, jax.random.choice(choice, np.flatnonzero(state.legal_action_mask)))
    state = game.init(jax.random.key(0))
    for text, message in [("h2e", "not a move"), ("z2e2", "not a move"), ("h2h8", "not legal")]:
        with pytest.raises(UserError, match=message) as error:
            notation.parse_action(game, text, state)
        assert "\n" not in str(error.value)
    with pytest.raises(UserError, match="game is over"):
        notation.parse_action(
            game, "a0a1", play(game, step, "4k4/R8/9/9/9/9/9/9/1R7/3K5 w", ["b1b9"])
        )


def test_black_sees_the_board_with_the_ranks_mirrored(game, step):
    red = game.init(jax.random.key(0))
    black = play(game, step, START_FEN, ["h2e2"])
    # Black's h7e7 is the label of Red's h2e2: the ranks are mirrored, the files kept.
    h2e2 = notation.parse_action(game, "h2e2", red)
    assert notation.parse_action(game, "h7e7", black) == h2e2
    assert (
        notation.action_to_string(game, h2e2, black) == "h7e7"
        and notation.action_to_string(game, h2e2) == "h2e2"
    )
    # A position and its colour-mirrored twin (ranks reversed, colours swapped, the other
    # side to move) look the same to the mover and have the same legal labels.
    for fen in [*PERFT, *(fen for fen, _ in HAND_MADE.values())]:
        ranks, side = fen.split()[0].split("/"), fen.split()[1]
        twin = "/".join(rank.swapcase() for rank in ranks[::-1]) + (" b" if side == "w" else " w")
        state, mirrored = from_fen(game, fen), from_fen(game, twin)
        np.testing.assert_array_equal(game.observe(state), game.observe(mirrored))
        np.testing.assert_array_equal(state.legal_action_mask, mirrored.legal_action_mask)
    # Planes 0-6 are the mover's pieces: Black's after Red's first move.
    obs = game.observe(black)
    assert obs[9, 4, 0] == 1 and obs[0, 4, 7] == 1  # own general e9 at the bottom row


def test_left_right_mirror(game):
    for fen in [*PERFT, *(fen for fen, _ in HAND_MADE.values())]:
        ranks, side = fen.split()[0].split("/"), fen.split()[1]
        mirrored = from_fen(game, "/".join(rank[::-1] for rank in ranks) + " " + side)
        state = from_fen(game, fen)
        obs, mask = game.apply_symmetry(game.observe(state), state.legal_action_mask, 1)
        np.testing.assert_array_equal(obs, game.observe(mirrored))
        np.testing.assert_array_equal(mask, mirrored.legal_action_mask)


def test_adjudicate_scores_material_for_each_side():
    game = Xiangqi()
    adjudicate = jax.jit(lambda board: game.adjudicate(game.setup(board)))  # eager: seconds
    start = game.init(jax.random.key(0))
    np.testing.assert_array_equal(game.adjudicate(start), [0.0, 0.0])
    board = np.asarray(start.board).copy()
    board[0] = 0  # Black's chariot on a1 (rank 9) gone: Red is a chariot up
    score = np.tanh(9.0 / 10.0)
    np.testing.assert_allclose(adjudicate(board), [score, -score], rtol=1e-6)
    board[81] = 0  # and Red's chariot on the first rank gone too: level again
    np.testing.assert_allclose(adjudicate(board), [0.0, 0.0], atol=1e-7)


def test_handicap_starts_take_pieces_off_the_start_position(game):
    """`handicap_init` (`selfplay.handicap_starts`): pieces of the start position taken off,
    the generals and centre soldiers never; each start a legal position (its FEN passes
    `from_fen`'s checks and reads back the same), Red to move, not over; each side's share
    taken off spread from none to nearly all, independently, so material is mostly unequal."""
    starts = jax.jit(jax.vmap(game.handicap_init))(jax.random.split(jax.random.key(0), 400))
    boards = np.asarray(starts.board)
    start = np.asarray(game.init(None).board)
    assert ((boards == start) | (boards == 0)).all()  # nothing moved or added
    kept = [0 * 9 + 4, 9 * 9 + 4, 3 * 9 + 4, 6 * 9 + 4]  # generals, centre soldiers
    assert (boards[:, kept] == start[kept]).all()
    assert (np.asarray(starts.current_player) == 0).all()
    assert (
        not np.asarray(starts.terminated).any()
        and np.asarray(starts.legal_action_mask).any(1).all()
    )
    taken = [((boards == 0) & (start > 0)).sum(1), ((boards == 0) & (start < 0)).sum(1)]
    for side in taken:  # 14 removable pieces a side
        assert side.min() == 0 and side.max() >= 13 and 4 < side.mean() < 10
    assert abs(np.corrcoef(taken[0], taken[1])[0, 1]) < 0.2
    assert np.mean(taken[0] != taken[1]) > 0.8
    for i in range(0, 400, 40):
        position = jax.tree.map(lambda x, i=i: x[i], starts)
        again = notation.xiangqi.from_fen(game, notation.xiangqi.to_fen(game, position))
        np.testing.assert_array_equal(again.board, position.board)
        np.testing.assert_array_equal(again.legal_action_mask, position.legal_action_mask)
