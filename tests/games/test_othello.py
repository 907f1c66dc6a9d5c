"""Othello against published perft counts, pgx, a plain reference and hand-played positions.

Where each expected figure comes from:
- Perft (leaf positions 1-10 plies from the start, a pass counting as a ply): the published
  Othello perft table (Aart Bik, aartbik.com/MISC/reversi.html, repeated by many engines),
  where a game over before the depth counts as one leaf. OEIS A124004 agrees through depth
  9 (the shortest game lasts 9 plies) and leaves those games out at depth 10: 24,571,056,
  228 fewer than 24,571,284, the 228 being the games over after 9 plies. On 6x6, which has
  no published table, a plain Python move generator written here (`reference_perft`) gives
  the counts.
- Random play: pgx's Othello (`pgx.make("othello")`, pgx/othello.py in pgx 2.6), a
  separate JAX implementation on a board of rolled boolean arrays. It has our end rule (a
  full board, one side wiped out, or a pass answering a pass), so every ply is compared with
  only the mappings of `pgx_reference` (pgx draws which player id moves first, and marks
  every action legal once over) and its observation being our first two planes.
- Hand-played positions: move lists found by random search. Each board below was worked by
  hand (the flips of the last move, the absence of moves where a pass is forced, the disc
  counts), and pgx reaches the same final boards and results from the same moves.
"""

import jax
import numpy as np
import pytest
from pgx_reference import assert_matches_pgx
from positions import board, check_finished_game, check_pass_symmetries, play

import azjax.games
from azjax.games.othello import Othello
from azjax.types import UserError

pgx = pytest.importorskip("pgx")

NUM_GAMES = 2000
# Published, depths 1-10; depth 10 counts the 228 games over after 9 plies (see above).
PERFT = [4, 12, 56, 244, 1396, 8200, 55092, 390216, 3005288, 24571284]
PERFT_CHUNK = 8192  # States stepped per call while expanding a perft level.
PASS = 64  # The pass action on 8x8.


@pytest.fixture(scope="module")
def game():
    return azjax.games.make("othello")


@pytest.fixture(scope="module")
def step(game):
    """`game.step`, compiled once for the module (eager steps dispatch op by op)."""
    return jax.jit(game.step)


def perft(game, depth: int) -> list[int]:
    """Leaf counts of the game tree at depths 1..depth from the start position.

    A level is a batch of states. Its legal (state, action) pairs are flattened and stepped
    with `vmap(game.step)` in fixed-size chunks (one compilation); the leaves one ply
    deeper are the legal actions of the level plus the games over by then. The deepest
    level needed is only counted, chunk by chunk, not kept.
    """
    step = jax.jit(jax.vmap(game.step))
    states = jax.device_get(jax.tree.map(lambda x: x[None], game.init(jax.random.key(0))))
    finished, leaves = 0, [int(states.legal_action_mask.sum())]
    for level in range(2, depth + 1):
        parents, actions = np.nonzero(states.legal_action_mask)  # [M] each, the children
        num_legal, children = 0, []
        for start in range(0, len(parents), PERFT_CHUNK):
            chunk = slice(start, start + PERFT_CHUNK)
            size = len(parents[chunk])
            padding = (0, PERFT_CHUNK - size)  # Padded pairs step state 0 and are dropped.
            batch = step(
                take(states, np.pad(parents[chunk], padding)), np.pad(actions[chunk], padding)
            )
            batch = take(jax.device_get(batch), slice(size))
            num_legal += int(batch.legal_action_mask.sum())
            finished += int(batch.terminated.sum())
            if level < depth:
                children.append(batch)
        leaves.append(num_legal + finished)
        if children:
            states = jax.tree.map(lambda *xs: np.concatenate(xs), *children)
    return leaves


def reference_perft(size: int, depth: int) -> list[int]:
    """Leaf counts at depths 1..depth by a plain Python move generator (a dict board, a loop
    over the eight directions), written for this test independently of the bitboards."""
    centre = size // 2
    start = {(centre - 1, centre - 1): -1, (centre, centre): -1}
    start |= {(centre - 1, centre): 1, (centre, centre - 1): 1}
    directions = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc]

    def flips(discs, player, row, column):
        flipped = []
        for dr, dc in directions:
            line, r, c = [], row + dr, column + dc
            while discs.get((r, c)) == -player:
                line, r, c = [*line, (r, c)], r + dr, c + dc
            if line and discs.get((r, c)) == player:
                flipped += line
        return flipped

    def leaves(discs, player, depth, passed):
        if depth == 0:
            return 1
        empty = [(r, c) for r in range(size) for c in range(size) if (r, c) not in discs]
        moves = [(point, flips(discs, player, *point)) for point in empty]
        moves = [(point, flipped) for point, flipped in moves if flipped]
        if not moves:  # A game over is one leaf; otherwise the pass is a ply.
            return 1 if passed else leaves(discs, -player, depth - 1, True)
        return sum(
            leaves(
                discs | {point: player} | dict.fromkeys(flipped, player), -player, depth - 1, False
            )
            for point, flipped in moves
        )

    return [leaves(start, 1, level, False) for level in range(1, depth + 1)]


def test_perft(game):
    assert perft(game, len(PERFT)) == PERFT


def test_perft_6x6_matches_a_plain_reference():
    assert perft(azjax.games.make("othello_6x6"), 7) == reference_perft(6, 7)


def test_random_play_matches_pgx(game):
    trajectory = assert_matches_pgx(game, "othello", NUM_GAMES, observation_planes=2)
    # The random games reach forced passes and every way a game ends.
    terminated = trajectory["terminated"][0]  # [T+1, B]
    forced_pass = trajectory["mask"][0][..., PASS] & ~terminated  # [T+1, B]
    discs = trajectory["observation"][0][..., :2].sum(axis=(2, 3))  # [T+1, B, 2]
    ends = ~terminated[:-1] & terminated[1:]  # [T, B]
    assert forced_pass.any(axis=0).mean() > 0.2
    assert (forced_pass[:-1] & forced_pass[1:]).any()  # A pass answering a pass.
    assert (ends & (discs[1:].sum(axis=-1) == 64)).any()  # A full board.
    assert (ends & (discs[1:].min(axis=-1) == 0)).any()  # A side wiped out.


def test_start_position(game):
    state = game.init(jax.random.key(0))
    assert game.render(state) == board(
        """
        a b c d e f g h
        . . . . . . . . 1
        . . . . . . . . 2
        . . . . . . . . 3
        . . . O X . . . 4
        . . . X O . . . 5
        . . . . . . . . 6
        . . . . . . . . 7
        . . . . . . . . 8
        X to move
        """
    )
    assert legal_moves(game, state) == ["d3", "c4", "f5", "e6"]
    small = azjax.games.make("othello_6x6")
    assert small.name == "othello_6x6"
    assert legal_moves(small, small.init(jax.random.key(0))) == ["c2", "b3", "e4", "d5"]


def test_observation_is_from_the_movers_view(game):
    obs = game.observe(game.init(jax.random.key(0)))  # [8, 8, 3]
    assert obs.shape == (8, 8, 3)
    np.testing.assert_array_equal(np.argwhere(obs[..., 0]), [[3, 4], [4, 3]])  # X: e4, d5
    np.testing.assert_array_equal(np.argwhere(obs[..., 1]), [[3, 3], [4, 4]])  # O: d4, e5
    np.testing.assert_array_equal(np.argwhere(obs[..., 2]), [[2, 3], [3, 2], [4, 5], [5, 4]])
    state = play(game, ["d3"])  # X takes d4; O to move, with e5 left.
    obs = game.observe(state)
    np.testing.assert_array_equal(np.argwhere(obs[..., 0]), [[4, 4]])  # O: e5
    np.testing.assert_array_equal(np.argwhere(obs[..., 1]), [[2, 3], [3, 3], [3, 4], [4, 3]])
    assert legal_moves(game, state) == ["c3", "e3", "c5"]


def test_move_flipping_in_three_directions(game, step):
    state = play(game, "c4 c3 d3 c5 d6".split())
    assert game.render(state) == board(
        """
        a b c d e f g h
        . . . . . . . . 1
        . . . . . . . . 2
        . . O X . . . . 3
        . . O X X . . . 4
        . . O X O . . . 5
        . . . X . . . . 6
        . . . . . . . . 7
        . . . . . . . . 8
        O to move
        """
    )
    # e3 flanks d3 (west, to c3), e4 (south, to e5) and d4 (south-west, to c5).
    assert game.render(step(state, game.parse_action("e3", state))) == board(
        """
        a b c d e f g h
        . . . . . . . . 1
        . . . . . . . . 2
        . . O O O . . . 3
        . . O O O . . . 4
        . . O X O . . . 5
        . . . X . . . . 6
        . . . . . . . . 7
        . . . . . . . . 8
        X to move
        """
    )


def test_move_flipping_in_four_directions(game, step):
    state = play(game, "e6 f6 d3 d6 d7 e3 f7 e7".split())
    assert game.render(state) == board(
        """
        a b c d e f g h
        . . . . . . . . 1
        . . . . . . . . 2
        . . . X O . . . 3
        . . . X O . . . 4
        . . . X O . . . 5
        . . . X O O . . 6
        . . . X O X . . 7
        . . . . . . . . 8
        X to move
        """
    )
    # f5 flanks e4 (north-west, to d3), e5 (west, to d5), e6 (south-west, to d7) and f6
    # (south, to f7); e3 and e7 stay, being on no line from f5.
    assert game.render(step(state, game.parse_action("f5", state))) == board(
        """
        a b c d e f g h
        . . . . . . . . 1
        . . . . . . . . 2
        . . . X O . . . 3
        . . . X X . . . 4
        . . . X X X . . 5
        . . . X X X . . 6
        . . . X O X . . 7
        . . . . . . . . 8
        O to move
        """
    )


def test_forced_pass(game, step):
    state = play(game, "c4 c3 e6 b4 a4 a5 c2 a3".split())
    # Every O disc lies on the a-file or b4; no line through one ends on a point X can fill.
    assert game.render(state) == board(
        """
        a b c d e f g h
        . . . . . . . . 1
        . . X . . . . . 2
        O . X . . . . . 3
        O O X X X . . . 4
        O . . X X . . . 5
        . . . . X . . . 6
        . . . . . . . . 7
        . . . . . . . . 8
        X to move
        """
    )
    assert legal_moves(game, state) == ["pass"]
    with pytest.raises(UserError, match="not legal"):
        game.parse_action("d3", state)
    state = step(state, game.parse_action("pass", state))
    assert not bool(state.terminated) and int(state.current_player) == 1
    np.testing.assert_array_equal(state.rewards, [0.0, 0.0])
    assert legal_moves(game, state) == ["d2", "f4"]  # O moves on; the board is unchanged.
    assert (
        game.render(state).splitlines()[1:-1]
        == board(
            """
        . . . . . . . . 1
        . . X . . . . . 2
        O . X . . . . . 3
        O O X X X . . . 4
        O . . X X . . . 5
        . . . . X . . . 6
        . . . . . . . . 7
        . . . . . . . . 8
        """
        ).splitlines()
    )


def test_pass_is_illegal_while_a_move_exists(game):
    state = game.init(jax.random.key(0))
    assert not bool(state.legal_action_mask[PASS])
    with pytest.raises(UserError, match="not legal"):
        game.parse_action("pass", state)


# (moves, the final board as `render` draws it); the last move ends each game.
FINISHED_GAMES = {
    # b2 flanks c3, d4 and e5 against f6: O has no disc left, X wins 13-0.
    "wipeout": (
        "f5 f4 f3 f6 f7 e3 d3 c3 b2",
        """
        a b c d e f g h
        . . . . . . . . 1
        . X . . . . . . 2
        . . X X X X . . 3
        . . . X X X . . 4
        . . . X X X . . 5
        . . . . . X . . 6
        . . . . . X . . 7
        . . . . . . . . 8
        X wins
        """,
    ),
    # O's a1 (flipping a2-a4) fills the board: O wins 53-11.
    "full_board": (
        "e6 f4 e3 f6 g6 f2 f5 e7 d7 d6 c5 c6 d8 f7 g7 c8 g1 d3 g3 b6 g5 h8 c2 f3 h7 h3 b4 h4 "
        "h5 g4 c3 c7 h2 d2 e1 c4 b8 d1 b5 b3 c1 g8 e2 e8 a7 h6 a6 g2 b7 h1 a2 a5 a3 b2 f8 a8 "
        "f1 b1 a4 a1",
        """
        a b c d e f g h
        O O O O O O O O 1
        O O O O X X O O 2
        O O O X X X O O 3
        O X X O O X O O 4
        O O X O O X O O 5
        O X O X O X O O 6
        O O X O X X O O 7
        O O O O O O O O 8
        O wins
        """,
    ),
    # O's h1 (flipping g2, f3 and h2) fills the board at 32-32.
    "full_board_draw": (
        "c4 c5 c6 c3 e6 b4 d3 e2 b2 d2 a4 c7 b5 a1 b3 a5 d1 d6 b7 e3 c2 a7 d7 c1 f3 a3 c8 d8 "
        "a8 a6 b6 f5 b1 f2 g6 g3 f6 f4 e7 b8 e8 f8 f7 g7 a2 g4 g5 h5 h8 g8 h4 e1 h6 h7 h2 h3 "
        "f1 g1 g2 h1",
        """
        a b c d e f g h
        O O O O O O O O 1
        X X X X X X O O 2
        X X X X O O X O 3
        X X O O O X X O 4
        X X X X X O X O 5
        X O X O O X O O 6
        X O O O X O O O 7
        X X X X X O O X 8
        game over
        """,
    ),
    # g7 and h8 stay empty: every line from them runs through one colour to the edge, so
    # X passes, O passes, and the game ends drawn at 31-31.
    "neither_side_can_move": (
        "e6 f6 g6 c5 c6 f4 b5 d6 c3 e7 d8 f8 f5 b6 f7 e3 e8 b4 a5 c8 f2 h6 h5 c4 f3 g2 b3 e2 "
        "h7 g3 b7 g5 h4 a6 b8 a8 h1 g1 d7 d3 e1 g8 f1 a4 c2 d1 a3 h2 b1 d2 c1 a7 h3 b2 g4 a2 "
        "a1 c7 pass pass",
        """
        a b c d e f g h
        X X X X X X X X 1
        O X O O O O X X 2
        O O X O X X X X 3
        O O O X X X X X 4
        O O O O X X X X 5
        O O O X X X X X 6
        O O O O O O . X 7
        O O O O O O O . 8
        game over
        """,
    ),
}


@pytest.mark.parametrize("name", FINISHED_GAMES)
def test_finished_games(game, name):
    moves, expected = FINISHED_GAMES[name]
    check_finished_game(game, moves.split(), expected)


def test_a_pass_answering_a_pass_ends_the_game(game, step):
    moves = FINISHED_GAMES["neither_side_can_move"][0].split()
    state = play(game, moves[:-2])
    assert legal_moves(game, state) == ["pass"] and int(state.current_player) == 0
    state = step(state, PASS)
    assert legal_moves(game, state) == ["pass"] and not bool(state.terminated)
    state = step(state, PASS)
    assert bool(state.terminated)


def test_symmetries_map_pass_to_pass(game):
    check_pass_symmetries(game, "f5", 8)


def test_parse_action(game):
    state = game.init(jax.random.key(0))
    names = [game.action_to_string(action) for action in (0, 7, 19, 56, 63, 64)]
    assert names == "a1 h1 d3 a8 h8 pass".split()
    assert game.parse_action(" D3 ", state) == 19
    assert game.parse_action("e6", state) == 44
    for text in ("i1", "a9", "a0", "", "d", "d 3", "passe"):
        with pytest.raises(UserError, match="not a move"):
            game.parse_action(text, state)
    small = Othello(size=6)
    assert small.action_to_string(35) == "f6" and small.action_to_string(36) == "pass"
    with pytest.raises(UserError, match="not a move"):
        small.parse_action("g1", small.init(jax.random.key(0)))


@pytest.mark.parametrize("size", [3, 5, 10, 0])
def test_bad_sizes_are_refused(size):
    with pytest.raises(ValueError, match="even number from 4 to 8"):
        Othello(size=size)
    with pytest.raises(UserError, match="bad options"):
        azjax.games.make("othello", size=size)


def take(tree, index):
    """Indexes every leaf of a pytree of numpy arrays along its first axis."""
    return jax.tree.map(lambda x: x[index], tree)


def legal_moves(game, state) -> list[str]:
    """The names of the legal actions of `state`, in action order."""
    return [game.action_to_string(a) for a in np.flatnonzero(state.legal_action_mask)]
