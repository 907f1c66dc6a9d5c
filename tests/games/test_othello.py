"""Othello against published perft counts, OpenSpiel, pgx, a plain reference and hand-played
positions.

The rules under test: the game ends as soon as neither side has a move, and a pass is legal
exactly when the mover has no move and the opponent has one.

Where each expected figure comes from:
- Perft (leaf positions 1-10 plies from the start, a pass counting as a ply): the published
  Othello perft table (Aart Bik, aartbik.com/MISC/reversi.html, repeated by many engines),
  where a game over before the depth counts as one leaf. OEIS A124004 (positions exactly d
  plies deep) agrees through depth 9 (the shortest game lasts 9 plies) and leaves those
  games out at depth 10: 24,571,056, 228 fewer than 24,571,284, the 228 being the games
  over after 9 plies. These counts do not depend on how a position where neither side can
  move ends, since none occurs within 10 plies (see `test_perft`). On 6x6, which has no
  published table, a plain Python move generator written here (`reference_perft`) gives the
  counts.
- Random play against OpenSpiel (`pyspiel.load_game("othello")`, open_spiel/games/othello
  in open-spiel 2.0), a C++ implementation with our rules and our action ids (points
  row-major from a1 at the top-left, 64 = pass; it names them as we do): legal actions,
  terminal flag and rewards (its returns on the last ply) at every ply of 1,000 games.
- Random play against pgx's Othello (`pgx.make("othello")`, pgx/othello.py in pgx 2.6), a
  separate JAX implementation on a board of rolled boolean arrays. pgx ends a game on a full
  board, a side wiped out, or a pass answering a pass: where neither side can move it has
  both players pass first. That difference is mapped (`PgxEndingAtOnce`); every ply is
  compared with it and the mappings of `pgx_reference` (pgx draws which player id moves
  first, and marks every action legal once over), its observation being our first two
  planes.
- Random play against the plain move generator (`reference_moves`): every position reached
  where the mover must pass or the game ends.
- Hand-played positions: move lists found by random search. Each board below was worked by
  hand (the flips of the last move, the absence of moves where a pass is forced or the game
  ends, the disc counts), and pgx reaches the same final boards and results from the same
  moves (with its two passes where neither side can move).
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import optimized_jit
from openspiel_reference import assert_matches_openspiel, play_random_games
from pgx_reference import play_against_reference
from positions import board, check_finished_game, check_pass_symmetries, play

import azjax.games
from azjax.games import notation
from azjax.games.othello import Othello
from azjax.types import UserError

pgx = pytest.importorskip("pgx")
pyspiel = pytest.importorskip("pyspiel")

NUM_GAMES = 2000
NUM_OPENSPIEL_GAMES = 1000
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


@pytest.fixture(scope="module")
def pgx_othello():
    """pgx's Othello and its `step`, compiled once for the module."""
    env = pgx.make("othello")
    return env, jax.jit(env.step)


def perft(game, depth: int) -> tuple[list[int], list[int]]:
    """Leaf counts of the game tree at depths 1..depth from the start position.

    A level is a batch of states. Its legal (state, action) pairs are flattened and stepped
    with `vmap(game.step)` in fixed-size chunks (one compilation); the positions one ply
    deeper are the legal actions of the level, and the leaves are those plus the games over
    by then. The deepest level needed is only counted, chunk by chunk, not kept.

    Returns:
      (leaves, positions): per depth, the leaves (a game over counting once at every deeper
      depth, as in the published table) and the positions exactly that many plies deep.
    """
    step = optimized_jit(jax.vmap(game.step))  # 24.6 million steps: 2 s, not 6.5 s at -O0
    states = jax.device_get(jax.tree.map(lambda x: x[None], game.init(jax.random.key(0))))
    finished, positions = 0, [int(states.legal_action_mask.sum())]
    leaves = positions[:]
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
        positions.append(num_legal)
        leaves.append(num_legal + finished)
        if children:
            states = jax.tree.map(lambda *xs: np.concatenate(xs), *children)
    return leaves, positions


def reference_moves(discs: dict, player: int, size: int) -> list:
    """The moves of `player` (1 = X, -1 = O) by a plain Python move generator, written for
    this test independently of the bitboards.

    Args:
      discs: {(row, column): 1 or -1} for the occupied points.

    Returns:
      [(point, the points of the discs it turns over)] for every legal point.
    """
    directions = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc]
    moves = []
    for point in itertools.product(range(size), repeat=2):
        flipped = []
        for dr, dc in directions if point not in discs else ():
            line, r, c = [], point[0] + dr, point[1] + dc
            while discs.get((r, c)) == -player:
                line, r, c = [*line, (r, c)], r + dr, c + dc
            if line and discs.get((r, c)) == player:
                flipped += line
        if flipped:
            moves.append((point, flipped))
    return moves


def reference_perft(size: int, depth: int) -> list[int]:
    """Leaf counts at depths 1..depth by `reference_moves`."""
    centre = size // 2
    start = {(centre - 1, centre - 1): -1, (centre, centre): -1}
    start |= {(centre - 1, centre): 1, (centre, centre - 1): 1}

    def leaves(discs, player, depth):
        if depth == 0:
            return 1
        moves = reference_moves(discs, player, size)
        if not moves:  # A pass while the opponent can move; else the game is over: one leaf.
            return leaves(discs, -player, depth - 1) if reference_moves(discs, -player, size) else 1
        return sum(
            leaves(discs | {point: player} | dict.fromkeys(flipped, player), -player, depth - 1)
            for point, flipped in moves
        )

    return [leaves(start, 1, level) for level in range(1, depth + 1)]


def test_perft(game):
    # Neither side can move, with empty points and both colours on the board, in no position
    # within 10 plies of the start, under this rule or pgx's: a one-off search stepping all
    # 24,571,056 positions 10 plies deep found none (nor on 6x6 within 7 plies), and found
    # 24 positions 8 plies deep and 576 10 plies deep where the mover must pass, the
    # opponent having a move. So both rules play the same tree to depth 10, and the
    # published counts hold for this one. (The leaf counts would not tell the rules apart
    # anyway, a game over counting once at every deeper depth; the counts of positions
    # exactly d plies deep, OEIS's, would: pgx's rule adds two passes.) So the 228 games
    # over within 9 plies (leaves minus positions at depth 10) are all wipeouts.
    leaves, positions = perft(game, len(PERFT))
    assert leaves == PERFT
    assert positions == [*PERFT[:9], 24_571_056]


def test_perft_6x6_matches_a_plain_reference():
    leaves, _ = perft(azjax.games.make("othello_6x6"), 7)
    assert leaves == reference_perft(6, 7)


class PgxEndingAtOnce:
    """pgx's Othello, its two passes where neither side can move played by the move before.

    pgx makes a player with no move pass even when the opponent has none either, and ends
    the game on the opponent's pass answering it. Where pgx's position after a move is such
    a forced pass answered by a forced pass, `step` plays both passes too, so that pgx's game
    is over on the ply where it would have had them; comparing `terminated` and `rewards`
    at every ply then checks this happens exactly where ours ends with neither side able to
    move, with the same result.
    """

    def __init__(self):
        self._env = pgx.make("othello")

    def init(self, key):
        return self._env.init(key)

    def step(self, state, action):
        state = self._env.step(state, action)
        answered = self._env.step(state, PASS)
        over = self._env.step(answered, PASS)
        forced = [s.legal_action_mask[PASS] & ~s.terminated for s in (state, answered)]
        return jax.tree.map(lambda a, b: jnp.where(forced[0] & forced[1], a, b), over, state)


def test_random_play_matches_pgx(game):
    """Every ply of random games matches pgx's, its two passes where neither side can move
    folded into the move before (`PgxEndingAtOnce`)."""
    play = optimized_jit(play_against_reference, static_argnums=(0, 1, 3))
    trajectory, first = play(game, PgxEndingAtOnce(), jax.random.key(0), NUM_GAMES)
    assert 0 < first.mean() < 1  # Both pgx seatings occur.
    terminated = trajectory["terminated"][0]  # [T+1, B]
    assert terminated[-1].all()
    for name in ("terminated", "player", "rewards"):
        np.testing.assert_array_equal(*trajectory[name], err_msg=name)
    ours, theirs = trajectory["observation"]
    np.testing.assert_array_equal(ours[..., :2], theirs, err_msg="observation")
    ours, theirs = trajectory["mask"]
    np.testing.assert_array_equal(ours[~terminated], theirs[~terminated], err_msg="mask")
    assert not ours[terminated].any()
    final_rewards = trajectory["rewards"][0].sum(axis=0)  # [B, 2]
    assert (final_rewards[:, 0] > 0).any() and (final_rewards[:, 1] > 0).any()
    assert (final_rewards == 0).all(axis=1).any()  # Some random games are draws.
    # The random games reach forced passes, never two in a row, and every way a game ends.
    forced_pass = ours[..., PASS]  # [T+1, B]
    discs = trajectory["observation"][0][..., :2].sum(axis=(2, 3))  # [T+1, B, 2]
    ends = ~terminated[:-1] & terminated[1:]  # [T, B]
    assert forced_pass.any(axis=0).mean() > 0.2
    assert not (forced_pass[:-1] & forced_pass[1:]).any()
    assert (ends & (discs[1:].sum(axis=-1) == 64)).any()  # A full board.
    assert (ends & (discs[1:].min(axis=-1) == 0)).any()  # A side wiped out.
    # Neither side can move, with empty points and discs of both colours: pgx's two passes.
    assert (ends & (discs[1:].sum(axis=-1) < 64) & (discs[1:].min(axis=-1) > 0)).any()


def test_random_play_matches_openspiel(game):
    spiel_game = pyspiel.load_game("othello")
    spiel_state = spiel_game.new_initial_state()
    assert spiel_game.num_distinct_actions() == game.num_actions
    names = [f"{'abcdefgh'[i % 8]}{i // 8 + 1}" for i in range(64)] + ["pass"]
    assert [spiel_state.action_to_string(a) for a in range(65)] == names  # Same action ids.
    states, finals = assert_matches_openspiel(game, spiel_game, NUM_OPENSPIEL_GAMES)
    np.testing.assert_array_equal(states.rewards.sum(axis=0), [s.returns() for s in finals])
    boards = states.board[-1]  # [B, 64] the final boards
    stuck = (boards == 0).any(1) & (boards > 0).any(1) & (boards < 0).any(1)
    assert stuck.any()  # Some games end with empty points that neither side can take.


def test_random_play_ends_where_neither_side_can_move(game):
    """The reproduction of the issue: random play reaches positions where the mover has no
    move and the opponent none either, with empty points left; the game is over there
    (scored by the disc counts), not waiting on a pass. Every reached position where the
    mover must pass or the game ends is checked against `reference_moves`."""
    _, states = play_random_games(game, jax.random.key(1), NUM_GAMES)
    # [T+1, B]: positions reached by a move (or the start), not stepped again after the end.
    reached = np.concatenate([np.ones_like(states.terminated[:1]), ~states.terminated[:-1]])
    ends = reached & states.terminated
    num_stuck = 0
    for ply, index in np.argwhere(reached & (states.legal_action_mask[..., PASS] | ends)):
        position = take(states, (ply, index))
        discs = discs_of(position.board)
        mover = 1 - 2 * int(position.current_player)
        opponent_can_move = bool(reference_moves(discs, -mover, 8))
        where = f"game {index} after {ply} plies"
        assert not reference_moves(discs, mover, 8), where
        # Over exactly when neither side can move, else the mover must pass.
        assert bool(position.terminated) == (not opponent_can_move), where
        if opponent_can_move:  # The mover must pass.
            assert np.flatnonzero(position.legal_action_mask).tolist() == [PASS]
            continue
        assert not position.legal_action_mask.any()
        score = np.sign(position.board.sum(dtype=np.int32))
        np.testing.assert_array_equal(position.rewards, [score, -score], err_msg=where)
        num_stuck += len(discs) < 64 and len(set(discs.values())) == 2
    assert num_stuck > 0


def test_start_position(game):
    state = game.init(jax.random.key(0))
    assert notation.render(game, state) == board(
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
    assert notation.render(game, state) == board(
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
    assert notation.render(game, step(state, notation.parse_action(game, "e3", state))) == board(
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
    assert notation.render(game, state) == board(
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
    assert notation.render(game, step(state, notation.parse_action(game, "f5", state))) == board(
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
    assert notation.render(game, state) == board(
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
        notation.parse_action(game, "d3", state)
    state = step(state, notation.parse_action(game, "pass", state))
    assert not bool(state.terminated) and int(state.current_player) == 1
    np.testing.assert_array_equal(state.rewards, [0.0, 0.0])
    assert legal_moves(game, state) == ["d2", "f4"]  # O moves on; the board is unchanged.
    assert (
        notation.render(game, state).splitlines()[1:-1]
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
        notation.parse_action(game, "pass", state)


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
    # O's c7 flips d7, e7 (east, to f7) and c6 (north, to c5) and leaves g7 and h8 empty.
    # Every line from them runs through one colour to the edge or meets the other empty
    # point (g7: O west, south-west and south, X the other ways but south-east; h8: O west,
    # X north), so neither side can move: the game ends drawn at 31-31.
    "neither_side_can_move": (
        "e6 f6 g6 c5 c6 f4 b5 d6 c3 e7 d8 f8 f5 b6 f7 e3 e8 b4 a5 c8 f2 h6 h5 c4 f3 g2 b3 e2 "
        "h7 g3 b7 g5 h4 a6 b8 a8 h1 g1 d7 d3 e1 g8 f1 a4 c2 d1 a3 h2 b1 d2 c1 a7 h3 b2 g4 a2 "
        "a1 c7",
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
    # X's f2 flips b2-e2 (west, to a2) and e3, d4, c5 (south-west, to b6) and leaves a8
    # the only empty point: from it X runs to the edge north and north-east and O east, so
    # neither side can take it. X wins 36-27.
    "one_point_nobody_can_take": (
        "c4 c3 e6 f6 f5 c5 g7 d6 c7 f4 b5 a6 b3 d7 e3 b4 g5 f7 d3 g6 d8 h8 a4 f3 h7 e2 d2 a2 "
        "a5 a3 g8 c6 b2 c1 a1 e8 a7 h6 d1 b1 e7 b8 f8 b6 f1 c8 g3 e1 h4 c2 h5 g1 b7 g4 h1 h2 "
        "g2 h3 f2",
        """
        a b c d e f g h
        X X X X X X X X 1
        X X X X X X X O 2
        X O O O X X O O 3
        X X O X X O O O 4
        X X X X O O O O 5
        X X X O O X O O 6
        X X X X X X O O 7
        . O O O O O O O 8
        X wins
        """,
    ),
}


@pytest.mark.parametrize("name", FINISHED_GAMES)
def test_finished_games(game, name):
    moves, expected = FINISHED_GAMES[name]
    check_finished_game(game, moves.split(), expected)


@pytest.mark.parametrize("name", ["neither_side_can_move", "one_point_nobody_can_take"])
def test_a_move_leaving_neither_side_a_move_ends_the_game(game, pgx_othello, name):
    """The game is over on the move, with no pass to play; pgx has both sides pass first."""
    moves = FINISHED_GAMES[name][0].split()
    state = play(game, moves)
    assert bool(state.terminated) and not state.legal_action_mask.any()
    discs = discs_of(state.board)
    assert reference_moves(discs, 1, 8) == [] and reference_moves(discs, -1, 8) == []
    env, pgx_step = pgx_othello
    theirs = env.init(jax.random.key(0))
    their_order = (int(theirs.current_player) + np.arange(2)) % 2  # pgx id of our player i
    for move in moves:
        theirs = pgx_step(theirs, PASS if move == "pass" else point(move))
    for _ in range(2):  # pgx: a forced pass, then the forced pass answering it ends the game.
        assert not bool(theirs.terminated)
        assert np.flatnonzero(theirs.legal_action_mask).tolist() == [PASS]
        theirs = pgx_step(theirs, PASS)
    assert bool(theirs.terminated)
    np.testing.assert_array_equal(theirs.rewards[their_order], state.rewards)


def test_symmetries_map_pass_to_pass(game):
    check_pass_symmetries(game, "f5", 8)


def test_parse_action(game):
    state = game.init(jax.random.key(0))
    names = [notation.action_to_string(game, action) for action in (0, 7, 19, 56, 63, 64)]
    assert names == "a1 h1 d3 a8 h8 pass".split()
    assert notation.parse_action(game, " D3 ", state) == 19
    assert notation.parse_action(game, "e6", state) == 44
    for text in ("i1", "a9", "a0", "", "d", "d 3", "passe"):
        with pytest.raises(UserError, match="not a move"):
            notation.parse_action(game, text, state)
    small = Othello(size=6)
    assert (
        notation.action_to_string(small, 35) == "f6"
        and notation.action_to_string(small, 36) == "pass"
    )
    with pytest.raises(UserError, match="not a move"):
        notation.parse_action(small, "g1", small.init(jax.random.key(0)))


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
    return [notation.action_to_string(game, a) for a in np.flatnonzero(state.legal_action_mask)]


def discs_of(board) -> dict:
    """An [64] int8 board as `reference_moves` reads it: {(row, column): 1 or -1}."""
    return {divmod(int(p), 8): int(board[p]) for p in np.flatnonzero(board)}


def point(name: str) -> int:
    """The action id of a point named as in Othello notation ("d3" = 19), read here without
    the game's own parser."""
    return (int(name[1:]) - 1) * 8 + "abcdefgh".index(name[0])
