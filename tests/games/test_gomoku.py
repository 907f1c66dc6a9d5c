"""Gomoku against independent references and hand-played positions.

References:
- OpenSpiel's m,n,k-game (`pyspiel.load_game("mnk", {"m": columns, "n": rows, "k": k})`,
  open_spiel/games/mnk/mnk.cc in open-spiel 2.0): actions are points row-major from the
  top-left (`row * m + column`) like ours, and a player wins with k or more in a row (it
  scans every window of k on the whole board after each move), our "freestyle" rule.
- OpenSpiel's Gomoku (`pyspiel.load_game("gomoku", {"size": n, "connect": k})`,
  open_spiel/games/gomoku/gomoku.cc in open-spiel 2.0): square boards only, and again k or
  more in a row wins (its options are size, dims, connect, anti and wrap; there is no
  exact-k option), checked by walking the lines through the last stone.
- Neither implements the "standard" rule (exactly k wins, overlines do not), so it is
  tested with hand-played positions and against `_reference_outcome` below, a plain
  Python whole-board scan of maximal runs written for this test (also run under the
  freestyle rule, where OpenSpiel vouches for it).
- The observation planes follow AlphaZero_Gomoku (github.com/junxiaosong/AlphaZero_Gomoku,
  game.py, `Board.current_state`): own stones, opponent stones, last move, and ones when
  the player to move is the one who moved first.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from openspiel_reference import assert_matches_openspiel, play_random_games
from positions import board, check_finished_game, play

import azjax.games
from azjax.games import notation
from azjax.games.gomoku import Gomoku
from azjax.types import UserError

pyspiel = pytest.importorskip("pyspiel")


def final_stones(states) -> np.ndarray:
    """Player 0's and player 1's stones on the final boards of games [T+1, B], [B, 2, H*W]."""
    final_board = states.board[-1]  # [B, H*W]
    return np.stack([final_board == 1, final_board == -1], axis=1).astype(np.float32)


def assert_outcomes_vary(states, *, draws: bool) -> None:
    """Both players win some of the games [T+1, B], and some are drawn if `draws`."""
    rewards = states.rewards.sum(axis=0)  # [B, 2] outcomes
    assert (rewards[:, 0] > 0).any() and (rewards[:, 1] > 0).any()
    assert (rewards == 0).all(axis=1).any() or not draws


# (columns, rows, k, games, whether some are drawn: about 13% of random games on 3 x 3,
# 1% on the k = 4 boards, almost none on the larger ones)
MNK_BOARDS = [
    (3, 3, 3, 2000, True),
    (6, 6, 4, 1000, True),
    (7, 5, 4, 1000, True),
    (5, 7, 4, 500, True),
    (9, 9, 5, 1000, False),
    (15, 15, 5, 300, False),
]


@pytest.mark.parametrize(("width", "height", "k", "num_games", "draws"), MNK_BOARDS)
def test_random_play_matches_openspiel_mnk(width, height, k, num_games, draws):
    """Every ply of random games agrees with OpenSpiel's mnk (freestyle rule); rectangular
    boards both ways round pin which of m and n is the number of columns."""
    game = Gomoku(width=width, height=height, k=k)
    spiel_game = pyspiel.load_game("mnk", {"m": width, "n": height, "k": k})
    ours, theirs = assert_matches_openspiel(game, spiel_game, num_games)
    # mnk observation planes: empty, nought (player 1), cross (player 0).
    planes = np.stack([np.reshape(s.observation_tensor(0), (3, -1))[[2, 1]] for s in theirs])
    np.testing.assert_array_equal(final_stones(ours), planes)
    assert_outcomes_vary(ours, draws=draws)


@pytest.mark.parametrize(("size", "k", "num_games"), [(6, 4, 1000), (15, 5, 200)])
def test_random_play_matches_openspiel_gomoku(size, k, num_games):
    """Every ply of random games agrees with OpenSpiel's Gomoku (square, freestyle)."""
    game = Gomoku(width=size, height=size, k=k)
    spiel_game = pyspiel.load_game("gomoku", {"size": size, "connect": k})
    ours, theirs = assert_matches_openspiel(game, spiel_game, num_games, seed=1)
    # Gomoku observation planes: black (player 0), white (player 1), black to move.
    planes = np.stack([np.reshape(s.observation_tensor(0), (3, -1))[:2] for s in theirs])
    np.testing.assert_array_equal(final_stones(ours), planes)


_DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


def _maximal_runs(board_rows: list[list[int]], stone: int) -> list[int]:
    """Lengths of the maximal runs of `stone` on a [H][W] board, in all four directions."""
    height, width = len(board_rows), len(board_rows[0])

    def holds(row, column):
        return 0 <= row < height and 0 <= column < width and board_rows[row][column] == stone

    runs = []
    for d_row, d_column in _DIRECTIONS:
        for row in range(height):
            for column in range(width):
                if holds(row, column) and not holds(row - d_row, column - d_column):
                    length = 0
                    while holds(row + length * d_row, column + length * d_column):
                        length += 1
                    runs.append(length)
    return runs


def _reference_outcome(board_rows, stone: int, k: int, rule: str) -> bool:
    """Whether the player with `stone`, who just moved, has won.

    Looks at the whole board, not at the last stone: a run of the mover's changes only
    when the mover places a stone, so a winning run present after the move was made by it
    (an earlier one would have ended the game).
    """
    runs = _maximal_runs(board_rows, stone)
    return k in runs if rule == "standard" else max(runs, default=0) >= k


# (columns, rows, k, games, rule): freestyle once, to check the reference against OpenSpiel.
RULE_BOARDS = [
    (5, 5, 3, 400, "freestyle"),
    (5, 5, 3, 400, "standard"),
    (7, 5, 4, 300, "standard"),
    (9, 9, 5, 100, "standard"),
]


@pytest.mark.parametrize(("width", "height", "k", "num_games", "rule"), RULE_BOARDS)
def test_random_play_matches_whole_board_reference(width, height, k, num_games, rule):
    """Every ply of random games agrees with `_reference_outcome`; under the standard rule
    some games hold overlines, so the rule is exercised."""
    game = Gomoku(width=width, height=height, k=k, rule=rule)
    actions, states = play_random_games(game, jax.random.key(2), num_games)
    overlines = 0
    for index in range(num_games):
        board_rows = [[0] * width for _ in range(height)]
        for ply in range(actions.shape[0]):
            if states.terminated[ply, index]:
                break
            stone = 1 - 2 * int(states.current_player[ply, index])
            row, column = divmod(int(actions[ply, index]), width)
            board_rows[row][column] = stone
            won = _reference_outcome(board_rows, stone, k, rule)
            full = ply + 1 == width * height
            expected = [stone * won, -stone * won]
            assert bool(states.terminated[ply + 1, index]) == (won or full), (index, ply)
            assert states.rewards[ply + 1, index].tolist() == expected, (index, ply)
        overlines += max(_maximal_runs(board_rows, 1) + _maximal_runs(board_rows, -1)) > k
    assert rule == "freestyle" or overlines > 0


RECTANGLE = {"width": 7, "height": 6, "k": 4}


@pytest.fixture(scope="module")
def rectangle():
    return azjax.games.make("gomoku", **RECTANGLE)


# (moves, the final board as `render` draws it), on 7 columns x 6 rows with k = 4: every
# direction, every edge and corner, winning stones placed at the end or inside the line.
RECTANGLE_GAMES = {
    "horizontal_on_the_bottom_edge": (
        "a1 a2 b1 b2 d1 c2 c1",
        """
        6 . . . . . . .
        5 . . . . . . .
        4 . . . . . . .
        3 . . . . . . .
        2 O O O . . . .
        1 X X X X . . .
          a b c d e f g
        X wins
        """,
    ),
    "horizontal_to_the_top_right_corner": (
        "a1 d6 c1 e6 e1 f6 b3 g6",
        """
        6 . . . O O O O
        5 . . . . . . .
        4 . . . . . . .
        3 . X . . . . .
        2 . . . . . . .
        1 X . X . X . .
          a b c d e f g
        O wins
        """,
    ),
    "vertical_on_the_right_edge": (
        "g6 a1 g5 b1 g3 c1 g4",
        """
        6 . . . . . . X
        5 . . . . . . X
        4 . . . . . . X
        3 . . . . . . X
        2 . . . . . . .
        1 O O O . . . .
          a b c d e f g
        X wins
        """,
    ),
    "vertical_from_the_bottom_left_corner": (
        "b1 a1 c1 a2 e1 a3 b5 a4",
        """
        6 . . . . . . .
        5 . X . . . . .
        4 O . . . . . .
        3 O . . . . . .
        2 O . . . . . .
        1 O X X . X . .
          a b c d e f g
        O wins
        """,
    ),
    "falling_diagonal_from_the_top_left_corner": (
        "a6 a1 b5 b1 d3 c1 c4",
        """
        6 X . . . . . .
        5 . X . . . . .
        4 . . X . . . .
        3 . . . X . . .
        2 . . . . . . .
        1 O O O . . . .
          a b c d e f g
        X wins
        """,
    ),
    "falling_diagonal_to_the_bottom_right_corner": (
        "g1 a6 f2 b6 d4 c6 e3",
        """
        6 O O O . . . .
        5 . . . . . . .
        4 . . . X . . .
        3 . . . . X . .
        2 . . . . . X .
        1 . . . . . . X
          a b c d e f g
        X wins
        """,
    ),
    "rising_diagonal_from_the_bottom_left_corner": (
        "a1 g1 c3 g2 d4 g3 b2",
        """
        6 . . . . . . .
        5 . . . . . . .
        4 . . . X . . .
        3 . . X . . . O
        2 . X . . . . O
        1 X . . . . . O
          a b c d e f g
        X wins
        """,
    ),
    "rising_diagonal_to_the_top_right_corner": (
        "a1 g6 b1 f5 d1 d3 a3 e4",
        """
        6 . . . . . . O
        5 . . . . . O .
        4 . . . . O . .
        3 X . . O . . .
        2 . . . . . . .
        1 X X . X . . .
          a b c d e f g
        O wins
        """,
    ),
}


@pytest.mark.parametrize("name", RECTANGLE_GAMES)
def test_wins_in_every_direction(rectangle, name):
    """Final boards and results worked out by hand."""
    moves, expected = RECTANGLE_GAMES[name]
    check_finished_game(rectangle, moves.split(), expected)


@pytest.mark.parametrize(
    "moves",
    [
        "f2 a6 g2 b6 a1 c6 b1",  # Points 33-36 row-major: f2 g2 | a1 b1.
        "e5 a6 f4 b6 g3 c6 a1",  # Points 11, 19, 27, 35: e5 f4 g3 | a1.
    ],
)
def test_lines_do_not_wrap_around_the_edge(rectangle, moves):
    """Four consecutive points of a row-major step (1 or width + 1) that cross the right
    edge are no line: worked out by hand on 7 x 6, point = (6 - row) * 7 + column."""
    state = play(rectangle, moves.split())
    assert not bool(state.terminated)
    assert notation.render(rectangle, state).splitlines()[-1] == "O to move"


# (rule, moves, the final board as `render` draws it), on 9 x 9 with k = 5. O's stones
# sit on the top rows two points apart, where they make no line.
OVERLINE_GAMES = {
    "freestyle_six_wins": (
        "freestyle",
        "a1 a9 b1 c9 c1 e9 e1 g9 f1 i9 d1",
        """
        9 O . O . O . O . O
        8 . . . . . . . . .
        7 . . . . . . . . .
        6 . . . . . . . . .
        5 . . . . . . . . .
        4 . . . . . . . . .
        3 . . . . . . . . .
        2 . . . . . . . . .
        1 X X X X X X . . .
          a b c d e f g h i
        X wins
        """,
    ),
    "standard_six_does_not_win": (
        "standard",
        "a1 a9 b1 c9 c1 e9 e1 g9 f1 i9 d1",
        """
        9 O . O . O . O . O
        8 . . . . . . . . .
        7 . . . . . . . . .
        6 . . . . . . . . .
        5 . . . . . . . . .
        4 . . . . . . . . .
        3 . . . . . . . . .
        2 . . . . . . . . .
        1 X X X X X X . . .
          a b c d e f g h i
        O to move
        """,
    ),
    # The new stone a1 sees five stones on its right: it must look k points away to know
    # the run is not exactly k.
    "standard_lengthening_an_overline_does_not_win": (
        "standard",
        "b1 a9 c1 c9 d1 e9 f1 g9 g1 i9 e1 a7 a1",
        """
        9 O . O . O . O . O
        8 . . . . . . . . .
        7 O . . . . . . . .
        6 . . . . . . . . .
        5 . . . . . . . . .
        4 . . . . . . . . .
        3 . . . . . . . . .
        2 . . . . . . . . .
        1 X X X X X X X . .
          a b c d e f g h i
        O to move
        """,
    ),
    "standard_five_wins": (
        "standard",
        "b1 a1 c1 g1 d1 a9 f1 c9 e1",
        """
        9 O . O . . . . . .
        8 . . . . . . . . .
        7 . . . . . . . . .
        6 . . . . . . . . .
        5 . . . . . . . . .
        4 . . . . . . . . .
        3 . . . . . . . . .
        2 . . . . . . . . .
        1 O X X X X X O . .
          a b c d e f g h i
        X wins
        """,
    ),
    "standard_five_beside_a_gap_wins": (
        "standard",
        "a1 a9 b1 c9 c1 e9 g1 g9 d1 i9 e1",
        """
        9 O . O . O . O . O
        8 . . . . . . . . .
        7 . . . . . . . . .
        6 . . . . . . . . .
        5 . . . . . . . . .
        4 . . . . . . . . .
        3 . . . . . . . . .
        2 . . . . . . . . .
        1 X X X X X . X . .
          a b c d e f g h i
        X wins
        """,
    ),
    # e1 makes six in row 1 and exactly five in column e: the five wins.
    "standard_five_and_six_at_once_wins": (
        "standard",
        "b1 a9 c1 c9 d1 e9 f1 g9 g1 i9 e2 a7 e3 c7 e4 e7 e5 g7 e1",
        """
        9 O . O . O . O . O
        8 . . . . . . . . .
        7 O . O . O . O . .
        6 . . . . . . . . .
        5 . . . . X . . . .
        4 . . . . X . . . .
        3 . . . . X . . . .
        2 . . . . X . . . .
        1 . X X X X X X . .
          a b c d e f g h i
        X wins
        """,
    ),
}


@pytest.mark.parametrize("name", OVERLINE_GAMES)
def test_overlines(name):
    """Final boards and results worked out by hand from the rules: freestyle wins with k or
    more in a row; standard wins with exactly k in some direction through the new stone."""
    rule, moves, expected = OVERLINE_GAMES[name]
    game = azjax.games.make("gomoku_9x9", rule=rule)
    if board(expected).endswith("to move"):
        state = play(game, moves.split())
        assert notation.render(game, state) == board(expected)
        assert not bool(state.terminated)
        np.testing.assert_array_equal(state.rewards, [0.0, 0.0])
    else:
        check_finished_game(game, moves.split(), expected)


# (columns and rows, k, moves, the final board as `render` draws it)
FULL_BOARD_GAMES = {
    "win_on_the_ninth_move": (
        3,
        3,
        "b2 b3 c3 a2 b1 a1 a3 c2 c1",
        """
        3 X O X
        2 O X O
        1 O X X
          a b c
        X wins
        """,
    ),
    "draw_on_3x3": (
        3,
        3,
        "a3 b2 c1 c3 a1 a2 c2 b1 b3",
        """
        3 X X O
        2 O O X
        1 X O X
          a b c
        game over
        """,
    ),
    "o_wins_on_the_sixteenth_move": (
        4,
        4,
        "b4 a4 c4 c3 d4 d3 a3 b2 b3 a1 a2 b1 c2 c1 d2 d1",
        """
        4 O X X X
        3 X X O O
        2 X O X X
        1 O O O O
          a b c d
        O wins
        """,
    ),
    "draw_on_4x4": (
        4,
        4,
        "b4 a4 c4 d4 a3 c3 b3 a2 d3 c2 b2 b1 d2 c1 a1 d1",
        """
        4 O X X O
        3 X X O X
        2 O X O X
        1 X O O O
          a b c d
        game over
        """,
    ),
}


@pytest.mark.parametrize("name", FULL_BOARD_GAMES)
def test_full_board(name):
    """A win on the last empty point is a win; a full board without a line is a draw.
    Boards found by hand (the 4 x 4 ones with a throwaway script) and checked line by line."""
    size, k, moves, expected = FULL_BOARD_GAMES[name]
    game = Gomoku(width=size, height=size, k=k)
    check_finished_game(game, moves.split(), expected)


def test_render_15x15():
    """Two-digit row numbers stay aligned; h8 is the centre, a15 the top-left corner."""
    game = azjax.games.make("gomoku_15x15")
    expected = """
        15 O . . . . . . . . . . . . . .
        14 . . . . . . . . . . . . . . .
        13 . . . . . . . . . . . . . . .
        12 . . . . . . . . . . . . . . .
        11 . . . . . . . . . . . . . . .
        10 . . . . . . . . . . . . . . .
         9 . . . . . . . . . . . . . . .
         8 . . . . . . . X . . . . . . .
         7 . . . . . . . . . . . . . . .
         6 . . . . . . . . . . . . . . .
         5 . . . . . . . . . . . . . . .
         4 . . . . . . . . . . . . . . .
         3 . . . . . . . . . . . . . . .
         2 . . . . . . . . . . . . . . .
         1 . . . . . . . . . . . . . . X
           a b c d e f g h i j k l m n o
        O to move
        """
    state = play(game, ["h8", "a15", "o1"])
    assert notation.render(game, state) == board(expected)


def test_observation_planes():
    """Planes as in AlphaZero_Gomoku: own stones, opponent stones, the last stone placed,
    ones when the player to move moved first. h8 is row 7, column 7 (of 0-14)."""
    game = azjax.games.make("gomoku_15x15")
    start = game.observe(game.init(jax.random.key(0)))
    assert start.shape == (15, 15, 4) and start.dtype == jnp.float32
    np.testing.assert_array_equal(start[..., :3], 0.0)
    np.testing.assert_array_equal(start[..., 3], 1.0)

    state = play(game, ["h8"])  # O to move: X's stone is the opponent's.
    assert int(state.last_move) == 7 * 15 + 7
    obs = game.observe(state)
    np.testing.assert_array_equal(obs[7, 7], [0.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(obs.sum(axis=(0, 1)), [0.0, 1.0, 1.0, 0.0])

    obs = game.observe(play(game, ["h8", "h9"]))  # h9 is row 6, column 7.
    np.testing.assert_array_equal(obs[7, 7], [1.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(obs[6, 7], [0.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(obs.sum(axis=(0, 1)), [1.0, 1.0, 1.0, 225.0])


# The images of the moves' points under each symmetry index (base.dihedral_perms order),
# worked out by hand: identity, left-right mirror, up-down mirror, half turn, then on square
# boards the transpose (a15 stays), transpose + left-right (quarter turn clockwise),
# transpose + up-down (anticlockwise) and the anti-transpose (o1 stays).
SQUARE_MOVES = "a15 b15 c12"
SQUARE_IMAGES = [
    "a15 b15 c12",
    "o15 n15 m12",
    "a1 b1 c4",
    "o1 n1 m4",
    "a15 a14 d13",
    "o15 o14 l13",
    "a1 a2 d3",
    "o1 o2 l3",
]
RECTANGLE_MOVES = "a6 b6 c3"
RECTANGLE_IMAGES = ["a6 b6 c3", "g6 f6 e3", "a1 b1 c4", "g1 f1 e4"]
SYMMETRY_CASES = [
    *(
        pytest.param("gomoku_15x15", {}, SQUARE_MOVES, SQUARE_IMAGES, i, id=f"15x15-{i}")
        for i in range(8)
    ),
    *(
        pytest.param("gomoku", RECTANGLE, RECTANGLE_MOVES, RECTANGLE_IMAGES, i, id=f"7x6-{i}")
        for i in range(4)
    ),
]


@pytest.mark.parametrize(("name", "options", "moves", "images", "index"), SYMMETRY_CASES)
def test_symmetries(name, options, moves, images, index):
    """Playing the image moves gives the transformed observation (last-move plane
    included) and mask; a policy follows its point. Images worked out by hand."""
    game = azjax.games.make(name, **options)
    assert game.symmetries == len(images)
    image = images[index].split()
    state, transformed = play(game, moves.split()), play(game, image)
    obs, mask = game.observe(state), state.legal_action_mask
    got_obs, got_mask = game.apply_symmetry(obs, mask, index)
    np.testing.assert_array_equal(got_obs, game.observe(transformed))
    np.testing.assert_array_equal(got_mask, transformed.legal_action_mask)
    start = game.init(jax.random.key(0))
    policy = jax.nn.one_hot(notation.parse_action(game, moves.split()[-1], start), game.num_actions)
    _, got_policy = game.apply_symmetry(obs, policy, index)
    assert notation.action_to_string(game, int(jnp.argmax(got_policy))) == image[-1]


def test_presets():
    """Shapes and sizes that follow from each preset's board (registry in games/__init__)."""
    for name, (width, height, k) in {
        "gomoku": (15, 15, 5),
        "gomoku_15x15": (15, 15, 5),
        "gomoku_9x9": (9, 9, 5),
        "gomoku_8x8": (8, 8, 5),
        "gomoku_6x6_k4": (6, 6, 4),
    }.items():
        game = azjax.games.make(name)
        assert (game.width, game.height, game.k, game.rule) == (width, height, k, "freestyle")
        assert game.num_actions == game.max_episode_length == width * height
        assert game.observation_shape == (height, width, 4)
        assert game.symmetries == 8
    assert azjax.games.make("gomoku", **RECTANGLE).symmetries == 4


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"k": 16}, "larger than the 15 x 15 board"),
        ({"width": 7, "height": 5, "k": 8}, "larger than the 7 x 5 board"),
        ({"k": 1}, "at least 2"),
        ({"width": 27}, "between 2 and 26"),
        ({"height": 1}, "at least 2"),
        ({"width": 9.0}, "integer"),
        ({"rule": "renju"}, "unknown rule 'renju'"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(ValueError, match=message):
        Gomoku(**options)
    with pytest.raises(UserError, match=message):
        azjax.games.make("gomoku", **options)


def test_a_long_line_fits_one_way_only():
    """k = 6 fits on 7 x 5 along the rows only; the game is still playable."""
    game = Gomoku(width=7, height=5, k=6)
    state = play(game, "a1 a2 b1 b2 c1 c2 d1 d2 e1 e2 f1".split())
    assert notation.render(game, state).splitlines()[-1] == "X wins"


def test_parse_action():
    """Names: column letter, then row number from the bottom (as `render` labels them)."""
    game = azjax.games.make("gomoku_15x15")
    state = play(game, ["h8"])
    assert notation.parse_action(game, "a15", state) == 0
    assert notation.parse_action(game, " O1 ", state) == 224
    assert notation.parse_action(game, "H9", state) == 6 * 15 + 7
    names = [notation.action_to_string(game, action) for action in range(225)]
    assert names[:3] == ["a15", "b15", "c15"] and names[112] == "h8" and names[-1] == "o1"
    start = game.init(jax.random.key(0))
    assert [notation.parse_action(game, n, start) for n in names] == list(range(225))
    with pytest.raises(UserError, match="not legal"):
        notation.parse_action(game, "h8", state)
    for text in ("p1", "a0", "a16", "8h", "h", "", "h 8", "11"):
        with pytest.raises(UserError, match="not a move"):
            notation.parse_action(game, text, state)
    finished = play(game, "a1 a2 b1 b2 c1 c2 d1 d2 e1".split())
    with pytest.raises(UserError, match="over"):
        notation.parse_action(game, "h8", finished)
