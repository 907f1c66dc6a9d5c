"""Go against pgx, OpenSpiel, a brute-force superko check and hand-made positions.

Where each expected figure comes from:
- pgx (`pgx.go.Go`, pgx/_src/games/go.py in pgx 2.6), a separate JAX implementation:
  random games on 9x9, 19x19 (200 plies) and 5x5 (pgx's class, unregistered there) are
  played in both and every ply is compared (board, player to move, legal moves, the 17
  observation planes, score, terminal flags and rewards). pgx has area scoring, suicide
  illegal, simple ko (the same rule as ours: a single-stone capture by a stone played into
  an eye), komi 7.5 and our move limit of 2 N plies, but no superko in its legal moves: it
  ends the game as a loss for the mover as soon as a move recreates an earlier board. So
  our side plays with `superko=False`, and each game is compared up to the ply where pgx
  ends it that way; at that ply our board is checked to repeat an earlier one of the game.
  pgx draws which player id moves first (mapped as in `pgx_reference`) and counts an empty
  region that touches no stone as territory of both colours, which cancels in the score
  (black minus white). Its capture counts count a captured chain once per side the
  capturing stone touches it, so ours are checked against the stones leaving the board.
- OpenSpiel (`pyspiel.load_game("go", ...)`, open_spiel/games/go in open-spiel 2.0), on
  9x9 and on 4x4 with 100 plies and rare passes (so boards repeat): the same Tromp-Taylor
  count (`TrompTaylorScore`), simple ko, komi 7.5, 2 N plies, action ids
  row-major from the bottom-left (mapped with `openspiel_action`). It has positional superko
  (a board hash, side to move not included, the start included, passes exempt) but checks
  it after the fact, ending the game as a draw. So our side plays with `superko=True`: our
  legal moves must be OpenSpiel's less exactly those that OpenSpiel ends as a repetition
  (each checked by playing it in a copy), and no game may end that way.
- Brute force: on 3x3 and 4x4 boards with long move limits and rare passes (so boards do
  repeat), the board after every move legal by the basic rules is compared in Python with
  all earlier boards of the game; the moves that repeat one must be exactly those that
  `superko=True` masks out.
- Hand-made positions: the diagrams below; each expected result is worked out by hand in
  the comments beside it.
- State bytes: pgx's figures are the same sum over one pgx state, computed here.
"""

import functools
import textwrap

import jax
import numpy as np
import pytest
from conftest import optimized_jit
from go_reference import (
    diagram_board,
    openspiel_action,
    play_against_pgx,
    play_with_all_children,
)
from openspiel_reference import play_random_games
from positions import check_pass_symmetries, play

import azjax.games
from azjax.games import notation
from azjax.games.go import Go
from azjax.types import UserError

pgx = pytest.importorskip("pgx")
pytest.importorskip("pgx.go")  # `pgx.go.Go` on 5x5 and 19x19, whichever test runs first
pyspiel = pytest.importorskip("pyspiel")

PASS = 81  # the pass on 9x9


@pytest.fixture(scope="module")
def game():
    return azjax.games.make("go_9x9")


# The hand-made positions share a few games so that each compiles its step once: 9x9 with
# and without superko, and 5x5 with integer komi 5 and a 4-ply move limit.
SIMPLE_KO = Go(size=9, superko=False)
SMALL = Go(size=5, komi=5, max_moves=4)


@functools.cache
def jitted_step(game):
    return jax.jit(game.step)


def diagram(text: str) -> str:
    """A rendered board written indented in a test (keeps the column labels' indent)."""
    return textwrap.dedent(text).strip("\n").rstrip()


def legal_moves(game, state) -> list[str]:
    """The names of the legal actions of `state`, in action order."""
    return [notation.action_to_string(game, a) for a in np.flatnonzero(state.legal_action_mask)]


def play_from(game, state, moves):
    """Plays GTP move names from `state` (each checked legal by `parse_action`)."""
    step = jitted_step(game)
    for move in moves:
        state = step(state, notation.parse_action(game, move, state))
    return state


def stones(game, state) -> str:
    """The board rows of `render` (no labels), one string per row joined by newlines."""
    size = game.size
    grid = np.asarray(state.board).reshape(size, size)
    marks = {1: "X", -1: "O", 0: "."}
    return "\n".join(" ".join(marks[value] for value in row) for row in grid)


# Random play against the references ---------------------------------------------------------


def check_against_pgx(game, env, num_games, *, pass_logit=0.0, seed=0):
    """Plays random games in `game` (superko off) and pgx `env`; compares them up to the ply
    where pgx ends a game on a repeated board. Returns that ply per game (T+1 if none)."""
    trajectory = jax.device_get(
        optimized_jit(play_against_pgx, static_argnums=(0, 1, 3), static_argnames="pass_logit")(
            game, env, jax.random.key(seed), num_games, pass_logit=pass_logit
        )
    )
    num_plies = trajectory["terminated"].shape[0]
    superko = trajectory["pgx_superko"] & trajectory["pgx_terminated"]  # [T+1, B]
    cut = np.where(superko.any(axis=0), superko.argmax(axis=0), num_plies)  # [B]
    compared = np.arange(num_plies)[:, None] < cut  # [T+1, B]
    for name in ("board", "player", "observation", "mask", "score", "rewards"):
        same = trajectory[f"same_{name}"]
        assert same[compared].all(), (
            f"{name} differs at (ply, game) {np.argwhere(~same & compared)[:5]}"
        )
    np.testing.assert_array_equal(
        trajectory["terminated"][compared], trajectory["pgx_terminated"][compared]
    )
    assert trajectory["terminated"][-1].all()
    boards = trajectory["board"]  # [T+1, B, N]
    # Our capture counts add up the stones that leave the board.
    removed = np.stack(
        [
            np.maximum((boards[:-1] == colour).sum(-1) - (boards[1:] == colour).sum(-1), 0)
            for colour in (-1, 1)
        ],
        axis=-1,
    )  # [T, B, 2] white stones gone (captured by black), black stones gone
    np.testing.assert_array_equal(trajectory["captures"][1:] - trajectory["captures"][:-1], removed)
    for index in np.flatnonzero(cut < num_plies):
        ply = cut[index]
        # pgx ended it on a move (not a pass) whose board is one of the game's earlier ones.
        assert trajectory["actions"][ply - 1, index] != game.num_actions - 1
        assert (boards[:ply, index] == boards[ply, index]).all(axis=1).any()
    return cut, trajectory


def test_random_play_matches_pgx_9x9():
    _, trajectory = check_against_pgx(Go(size=9, superko=False), pgx.make("go_9x9"), 512)
    outcomes = trajectory["rewards"].sum(axis=0)  # [B, 2]
    assert (outcomes[:, 0] > 0).any() and (outcomes[:, 1] > 0).any()


def test_random_play_matches_pgx_5x5():
    # pgx's Go class on 5x5 (not registered in pgx, the same code), 100 plies: with passes
    # rare, boards often repeat, so many games are cut where pgx ends them.
    game = Go(size=5, superko=False, max_moves=100)
    env = pgx.go.Go(size=5, max_terminal_steps=100)
    cut, _ = check_against_pgx(game, env, 512, pass_logit=-4.0)
    assert (cut <= game.max_moves).sum() >= 20


def test_random_play_matches_pgx_19x19():
    # Games end at 200 plies here (pgx's `max_terminal_steps`, our `max_moves`), so the
    # scores compared count large open regions.
    game = Go(size=19, superko=False, max_moves=200)
    env = pgx.go.Go(size=19, max_terminal_steps=200)
    check_against_pgx(game, env, 24)


def check_against_openspiel(game, spiel_game, num_games, *, pass_logit=0.0, seed=0):
    """Plays random games in `game` (superko on), replays them in OpenSpiel and compares
    every ply. Returns the number of OpenSpiel moves found to repeat a board (those we mask)
    and the outcomes [B, 2]."""
    actions, states = play_random_games(
        game, jax.random.key(seed), num_games, pass_logit=pass_logit
    )
    assert states.terminated[-1].all()
    size, repeats_seen, outcomes = game.size, 0, []
    for index in range(num_games):
        spiel_state = spiel_game.new_initial_state()
        for ply in range(actions.shape[0] + 1):
            where = f"game {index} ply {ply}"
            assert bool(states.terminated[ply, index]) == spiel_state.is_terminal(), where
            assert states.rewards[ply, index].tolist() == spiel_state.rewards(), where
            if spiel_state.is_terminal():
                break
            assert int(states.current_player[ply, index]) == spiel_state.current_player(), where
            legal = np.flatnonzero(states.legal_action_mask[ply, index])
            ours = {openspiel_action(action, size) for action in legal}
            theirs = set(spiel_state.legal_actions())
            assert ours <= theirs, where
            for action in theirs - ours:  # Each must repeat a board: a draw in OpenSpiel.
                child = spiel_state.clone()
                child.apply_action(action)
                assert child.is_terminal() and child.returns() == [0.0, 0.0], where
                repeats_seen += 1
            spiel_state.apply_action(openspiel_action(actions[ply, index], size))
        outcomes.append(spiel_state.returns())
    return repeats_seen, np.array(outcomes)


def test_random_play_matches_openspiel_9x9():
    game = Go(size=9)
    spiel_game = pyspiel.load_game("go", {"board_size": 9, "komi": 7.5})
    assert spiel_game.max_game_length() == game.max_moves
    _, outcomes = check_against_openspiel(game, spiel_game, 150)
    assert (outcomes[:, 0] > 0).any() and (outcomes[:, 1] > 0).any()


def test_random_play_matches_openspiel_4x4():
    # 100 plies and rare passes: boards often repeat, so our masks often differ from
    # OpenSpiel's legal moves, by moves that OpenSpiel ends as a repetition.
    game = Go(size=4, max_moves=100)
    spiel_game = pyspiel.load_game("go", {"board_size": 4, "komi": 7.5, "max_game_length": 100})
    repeats_seen, _ = check_against_openspiel(game, spiel_game, 200, pass_logit=-4.0)
    assert repeats_seen >= 10


@pytest.mark.parametrize(("size", "max_moves", "num_games"), [(3, 60, 256), (4, 100, 256)])
def test_superko_mask_matches_brute_force(size, max_moves, num_games):
    game = Go(size=size, max_moves=max_moves)
    basic = Go(size=size, superko=False, max_moves=max_moves)
    boards, masks, basic_masks, children, terminated = jax.device_get(
        jax.jit(play_with_all_children, static_argnums=(0, 1, 3, 4))(
            game, basic, jax.random.key(size), num_games, -4.0
        )
    )
    num_points, repeats_seen = size * size, 0
    for index in range(num_games):
        seen = set()
        for ply in range(boards.shape[0]):
            if terminated[ply, index]:
                break
            seen.add(boards[ply, index].tobytes())
            assert masks[ply, index, num_points]  # The pass is always legal.
            for action in np.flatnonzero(basic_masks[ply, index, :num_points]):
                repeats = children[ply, index, action].tobytes() in seen
                assert masks[ply, index, action] != repeats, (index, ply, action)
                repeats_seen += repeats
            assert not (masks[ply, index] & ~basic_masks[ply, index]).any()
    assert repeats_seen >= 10


# Hand-made positions ------------------------------------------------------------------------


def test_start_position_and_render(game):
    state = game.init(jax.random.key(0))
    assert len(legal_moves(game, state)) == 82
    assert notation.render(game, state) == diagram(
        """
          A B C D E F G H J
        9 . . . . . . . . . 9
        8 . . . . . . . . . 8
        7 . . . . . . . . . 7
        6 . . . . . . . . . 6
        5 . . . . . . . . . 5
        4 . . . . . . . . . 4
        3 . . . . . . . . . 3
        2 . . . . . . . . . 2
        1 . . . . . . . . . 1
          A B C D E F G H J
        captures: X 0, O 0; komi 7.5
        X to move
        """
    )
    state = play(game, ["C3", "D4"])
    lines = notation.render(game, state).splitlines()
    assert lines[7] == "3 . . X . . . . . . 3" and lines[6] == "4 . . . O . . . . . 4"
    assert lines[-1] == "X to move"


def test_action_names(game):
    names = [notation.action_to_string(game, action) for action in (0, 8, 72, 80, 40, PASS)]
    assert names == ["A9", "J9", "A1", "J1", "E5", "pass"]
    big = Go(size=19)
    assert (
        notation.action_to_string(big, 0) == "A19" and notation.action_to_string(big, 360) == "T1"
    )
    assert notation.action_to_string(big, 8) == "J19"  # I is skipped
    state = game.init(jax.random.key(0))
    for action in range(game.num_actions):
        name = notation.action_to_string(game, action)
        assert notation.parse_action(game, name, state) == action
        assert notation.parse_action(game, f" {name.lower()} ", state) == action
    assert notation.parse_action(game, "PASS", state) == PASS


@pytest.mark.parametrize("text", ["I5", "Z1", "A10", "A0", "", "E", "5E", "passe", "E 5"])
def test_parse_action_refuses_names(game, text):
    with pytest.raises(UserError, match="is not a move") as error:
        notation.parse_action(game, text, game.init(jax.random.key(0)))
    assert "\n" not in str(error.value)


def test_snapback_captures_five(game):
    # White's four stones have two liberties, A9 and B9. Black throws in at A9 (one
    # liberty, B9), putting them in atari; White takes the stone at B9, but the five white
    # stones then have only A9, where Black captures all five. No ko: five stones go.
    state = game.setup(
        diagram_board(
            """
            . . O X . . . . .
            O O O X . . . . .
            X X X . . . . . .
            . . . . . . . . .
            . . . . . . . . .
            . . . . . . . . .
            . . . . . . . . .
            . . . . . . . . .
            . . . . . . . . .
            """
        )
    )
    state = play_from(game, state, ["A9", "B9"])
    assert stones(game, state).splitlines()[:3] == [
        ". O O X . . . . .",
        "O O O X . . . . .",
        "X X X . . . . . .",
    ]
    np.testing.assert_array_equal(state.captures, [0, 1])
    assert bool(state.in_atari[1])  # B9, in the five-stone chain
    state = play_from(game, state, ["A9"])
    assert stones(game, state).splitlines()[:3] == [
        "X . . X . . . . .",
        ". . . X . . . . .",
        "X X X . . . . . .",
    ]
    np.testing.assert_array_equal(state.captures, [5, 1])
    assert int(state.ko_point) == -1 and "B9" in legal_moves(game, state)
    assert notation.render(game, state).splitlines()[-2] == "captures: X 5, O 1; komi 7.5"


def test_suicide_is_illegal(game):
    # Black B9 would leave A9-B9 without liberties and capture nothing (A8-B8 keep A7, B7,
    # C8; C9 keeps D9, C8): a two-stone suicide. Black J1 is a one-stone suicide in
    # White's eye. For White, B9 captures A9 and J1 fills its own eye (legal).
    state = game.setup(
        diagram_board(
            """
            X . O . . . . . .
            O O . . . . . . .
            . . . . . . . . .
            . . . . . . . . .
            . . . . . . . . .
            . . . . . . . . .
            . . . . . . . . .
            . . . . . . . . O
            . . . . . . . O .
            """
        )
    )
    black = legal_moves(game, state)
    assert "B9" not in black and "J1" not in black and len(black) == 81 - 6 - 2 + 1
    for move in ("B9", "J1"):
        with pytest.raises(UserError, match="suicide"):
            notation.parse_action(game, move, state)
    white = game.setup(state.board, 1)
    assert {"B9", "J1"} <= set(legal_moves(game, white))
    after = play_from(game, white, ["B9"])
    assert stones(game, after).splitlines()[0] == ". O O . . . . . ."
    np.testing.assert_array_equal(after.captures, [0, 1])


KO = """
    . X O . . . . . .
    X O . O . . . . .
    . X O . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    """


@pytest.mark.parametrize("superko", [True, False])
def test_ko(game, superko):
    # Black C8 captures the white stone on B8 from inside White's eye: White may not take
    # back on B8 at once (it would capture C8 and repeat the board), but may after an
    # exchange elsewhere (J1, H1), which also leaves Black the ko point C8 for a moment.
    game = game if superko else SIMPLE_KO
    state = play_from(game, game.setup(diagram_board(KO)), ["C8"])
    assert stones(game, state).splitlines()[1] == "X . X O . . . . ."
    assert "B8" not in legal_moves(game, state)
    with pytest.raises(UserError, match="ko"):
        notation.parse_action(game, "B8", state)
    state = play_from(game, state, ["J1", "H1", "B8"])
    assert stones(game, state).splitlines()[1] == "X O . O . . . . ."
    assert "C8" not in legal_moves(game, state)  # Black's immediate retake, likewise.
    state = play_from(game, state, ["pass", "pass"])
    assert bool(state.terminated)


SENDING_TWO = """
    . X . X . . . . .
    O O X . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    """


def test_superko_sending_two_returning_one(game):
    # Black A9 makes A9-B9 with one liberty (C9); White C9 captures both (sending two);
    # Black B9 would capture C9 alone (returning one) and recreate the start board, with
    # the other player to move. No simple ko is involved (C9 took two stones), so only
    # positional superko forbids it; a 3-ply cycle found by random search on 3x3, here in
    # the corner of 9x9.
    start, simple = diagram_board(SENDING_TWO), SIMPLE_KO
    state = play_from(game, game.setup(start), ["A9", "C9"])
    assert stones(game, state).splitlines()[:2] == [". . O X . . . . .", "O O X . . . . . ."]
    np.testing.assert_array_equal(state.captures, [0, 2])
    assert "B9" not in legal_moves(game, state) and "A9" in legal_moves(game, state)
    with pytest.raises(UserError, match="superko"):
        notation.parse_action(game, "B9", state)
    state = play_from(simple, simple.setup(start), ["A9", "C9", "B9"])
    np.testing.assert_array_equal(state.board, start)
    assert int(state.ko_point) == -1 and "A9" in legal_moves(simple, state)


SEKI = """
    . X O . O
    X X O O O
    X X . O O
    X X O O O
    X X O O O
    """


def test_seki():
    # Black's nine stones have liberties A5 (an eye) and C3 (shared); White's thirteen
    # have D5 (an eye) and C3. Whoever fills C3 is left with one liberty and captured: a
    # seki. Filling the other's eye is suicide. Tromp-Taylor counts C3 for neither: black
    # 9 stones + A5 = 10, white 13 stones + D5 = 14; with komi 5 the score is 10 - 14 - 5.
    game = SMALL
    state = game.setup(diagram_board(SEKI))
    assert not state.in_atari.any()
    assert legal_moves(game, state) == ["A5", "C3", "pass"]  # D5 is suicide
    assert float(game.score(state)) == 10 - 14 - 5
    state = play_from(game, state, ["C3"])  # Black fills the shared liberty: both chains
    assert state.in_atari[1] and state.in_atari[2]  # (B5 black, C5 white) are in atari,
    state = play_from(game, state, ["A5"])  # and White takes Black's ten stones.
    np.testing.assert_array_equal(state.captures, [0, 10])


TERRITORY = """
    . . X O .
    . . X O .
    . . X O .
    . . X O .
    . . X O .
    """
DEAD_STONE = """
    . . X O .
    . O X O .
    . . X O .
    . . X O .
    . . X O .
    """


def test_scoring(game):
    small = SMALL  # komi 5
    # Black: 5 stones + the 10 points left of them; white: 5 stones + the 5 points right.
    assert float(small.score(small.setup(diagram_board(TERRITORY)))) == 15 - 10 - 5
    # A dead white stone on B4 stays on the board (no removal under Tromp-Taylor): it is
    # white's, and the region around it now reaches both colours, so counts for neither.
    assert float(small.score(small.setup(diagram_board(DEAD_STONE)))) == 5 - 11 - 5
    empty = game.init(jax.random.key(0))  # A region reaching no stone counts for nobody.
    assert float(game.score(empty)) == -7.5
    scores = jax.jit(jax.vmap(game.score))(jax.tree.map(lambda x: x[None], empty))
    assert float(scores[0]) == -7.5


def test_two_passes_end_the_game_and_integer_komi_draws(game):
    small = SMALL
    state = small.setup(diagram_board(TERRITORY))  # 15 - 10 - 5 = 0: a draw.
    state = play_from(small, state, ["pass"])
    assert not bool(state.terminated)
    state = play_from(small, state, ["pass"])
    assert bool(state.terminated) and not state.legal_action_mask.any()
    np.testing.assert_array_equal(state.rewards, [0.0, 0.0])
    assert notation.render(small, state).splitlines()[-1] == "game over"
    with pytest.raises(UserError, match="game is over"):
        notation.parse_action(small, "A1", state)
    # A pass, a move and a pass do not end it; 7.5 komi on an empty board: white wins.
    state = play_from(game, game.init(jax.random.key(0)), ["pass", "C3", "pass"])
    assert not bool(state.terminated)
    state = play_from(game, game.init(jax.random.key(0)), ["pass", "pass"])
    np.testing.assert_array_equal(state.rewards, [-1.0, 1.0])
    assert notation.render(game, state).splitlines()[-1] == "O wins"


def test_move_limit_ends_and_scores_the_game():
    # After C3 B3 D3 pass (4 plies, the limit; one pass does not end a game) the open
    # region touches both colours: black 2 stones, white 1, score 2 - 1 - 5 = -4: white wins.
    game = SMALL
    state = play_from(game, game.init(jax.random.key(0)), ["C3", "B3", "D3"])
    assert not bool(state.terminated)
    state = play_from(game, state, ["pass"])
    assert bool(state.terminated) and int(state.step_count) == 4
    np.testing.assert_array_equal(state.rewards, [-1.0, 1.0])
    assert float(game.score(state)) == 2 - 1 - 5


def test_observation_planes(game):
    obs = game.observe(game.init(jax.random.key(0)))
    assert obs.shape == (9, 9, 17) and not obs.any()
    state = play(game, ["E5"])  # White to move: the black stone is the opponent's.
    obs = game.observe(state)
    np.testing.assert_array_equal(np.argwhere(obs[..., 1]), [[4, 4]])
    assert not obs[..., [0, 2, 3]].any() and obs[..., 16].all()
    state = play(game, ["E5", "D5"])  # Black to move; one ply ago only E5 was down.
    obs = game.observe(state)
    np.testing.assert_array_equal(np.argwhere(obs[..., 0]), [[4, 4]])
    np.testing.assert_array_equal(np.argwhere(obs[..., 1]), [[4, 3]])
    np.testing.assert_array_equal(np.argwhere(obs[..., 2]), [[4, 4]])
    assert not obs[..., 3].any() and not obs[..., 16].any()


def test_symmetries_map_pass_to_pass(game):
    check_pass_symmetries(game, "C7", 9)


def state_bytes(state) -> int:
    return sum(leaf.nbytes for leaf in jax.tree.leaves(state))


@pytest.mark.parametrize(
    ("name", "ours", "theirs"), [("go_9x9", 2319, 5718), ("go_19x19", 10159, 25318)]
)
def test_state_bytes(name, ours, theirs):
    # The figures in the module docstring of azjax/games/go.py; 4 of our bytes are the
    # float32 `komi` field (komi is state, not a compiled constant).
    key = jax.random.key(0)
    assert state_bytes(azjax.games.make(name).init(key)) == ours
    assert state_bytes(pgx.make(name).init(key)) == theirs


def test_registry_and_options():
    for size in (9, 13, 19):
        game = azjax.games.make(f"go_{size}x{size}")
        assert (game.size, game.komi, game.superko, game.history) == (size, 7.5, True, 8)
        assert game.max_moves == game.max_episode_length == 2 * size * size
        assert game.num_actions == size * size + 1
    game = azjax.games.make("go_9x9", komi=6, superko=False, max_moves=50, history=2)
    assert (game.komi, game.superko, game.max_moves) == (6.0, False, 50)
    assert game.observe(game.init(jax.random.key(0))).shape == (9, 9, 5)
    for options in ({"size": 1}, {"size": 20}, {"max_moves": 0}, {"history": 0}):
        with pytest.raises(UserError, match="bad options"):
            azjax.games.make("go_9x9", **options)
