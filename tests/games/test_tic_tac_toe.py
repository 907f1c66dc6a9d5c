"""Tic-tac-toe against an independent reference and hand-played positions.

The reference is pgx's Tic-tac-toe (`pgx.make("tic_tac_toe")`, pgx/tic_tac_toe.py and
pgx/_src/games/tic_tac_toe.py in pgx 2.6), a separate JAX implementation. Two differences
are mapped, not tested: pgx draws which player id moves first at `init` (our player i is
pgx player `(first + i) % 2`), and pgx sets every action legal once a game is over (ours
are all illegal).
"""

import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import azjax.games
from azjax.types import UserError

pgx = pytest.importorskip("pgx")

NUM_GAMES = 2000


@pytest.fixture(scope="module")
def game():
    return azjax.games.make("tic_tac_toe")


def random_legal_action(key, legal_action_mask):
    """A uniform legal action; action 0 when none is legal (stepping is then a no-op)."""
    logits = jnp.where(legal_action_mask, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits).astype(jnp.int32)


def play_against_reference(game, env, key, num_games):
    """Feeds the same random legal actions to `game` and pgx `env`; records every ply [T+1, B]."""
    init_key, play_key = jax.random.split(key)
    init_keys = jax.random.split(init_key, num_games)
    ours, theirs = jax.vmap(game.init)(init_keys), jax.vmap(env.init)(init_keys)
    first = theirs.current_player  # [B] pgx's id for our player 0
    their_order = (first[:, None] + jnp.arange(2)) % 2  # [B, 2] pgx id of our player i

    def record(ours, theirs):
        return {
            "terminated": (ours.terminated, theirs.terminated),
            "player": ((first + ours.current_player) % 2, theirs.current_player),
            "rewards": (ours.rewards, jnp.take_along_axis(theirs.rewards, their_order, axis=1)),
            "mask": (ours.legal_action_mask, theirs.legal_action_mask),
            "observation": (jax.vmap(game.observe)(ours), theirs.observation.astype(jnp.float32)),
        }

    def ply(carry, key):
        ours, theirs = carry
        actions = jax.vmap(random_legal_action)(
            jax.random.split(key, num_games), ours.legal_action_mask
        )
        ours, theirs = jax.vmap(game.step)(ours, actions), jax.vmap(env.step)(theirs, actions)
        return (ours, theirs), record(ours, theirs)

    plies = jax.random.split(play_key, game.max_episode_length + 1)
    _, trajectory = jax.lax.scan(ply, (ours, theirs), plies)
    trajectory = jax.tree.map(
        lambda x, xs: jnp.concatenate([x[None], xs]), record(ours, theirs), trajectory
    )
    return jax.device_get(trajectory), jax.device_get(first)


def test_random_play_matches_pgx(game):
    env = pgx.make("tic_tac_toe")
    trajectory, first = jax.jit(play_against_reference, static_argnums=(0, 1, 3))(
        game, env, jax.random.key(0), NUM_GAMES
    )
    assert 0 < first.mean() < 1  # Both pgx seatings occur.
    terminated = trajectory["terminated"][0]  # [T+1, B]
    assert terminated[-1].all()
    for name in ("terminated", "player", "rewards", "observation"):
        ours, theirs = trajectory[name]
        np.testing.assert_array_equal(ours, theirs, err_msg=name)
    ours, theirs = trajectory["mask"]
    np.testing.assert_array_equal(ours[~terminated], theirs[~terminated])
    assert not ours[terminated].any()
    final_rewards = trajectory["rewards"][0].sum(axis=0)  # [B, 2]
    assert (final_rewards[:, 0] > 0).any() and (final_rewards[:, 1] > 0).any()
    assert (final_rewards == 0).all(axis=1).any()  # Some random games are draws.


def play(game, moves: str):
    """Plays human cell numbers (1-9) from the start, checking each move is accepted."""
    state = game.init(jax.random.key(0))
    step = jax.jit(game.step)
    for move in moves:
        assert not bool(state.terminated)
        state = step(state, game.parse_action(move, state))
    return state


def board(text: str) -> str:
    return textwrap.dedent(text).strip()


# (moves as cells 1-9, the final board as `render` draws it)
FINISHED_GAMES = {
    "row": (
        "14253",
        """
        X X X    1 2 3
        O O .    4 5 6
        . . .    7 8 9
        X wins
        """,
    ),
    "column_for_o": (
        "135986",
        """
        X . O    1 2 3
        . X O    4 5 6
        . X O    7 8 9
        O wins
        """,
    ),
    "anti_diagonal_for_o": (
        "152397",
        """
        X X O    1 2 3
        . O .    4 5 6
        O . X    7 8 9
        O wins
        """,
    ),
    "win_on_the_ninth_move": (
        "523487169",
        """
        X O X    1 2 3
        O X O    4 5 6
        O X X    7 8 9
        X wins
        """,
    ),
    "draw": (
        "159374682",
        """
        X X O    1 2 3
        O O X    4 5 6
        X O X    7 8 9
        game over
        """,
    ),
    "draw_from_the_centre": (
        "519746382",
        """
        O X X    1 2 3
        X X O    4 5 6
        O O X    7 8 9
        game over
        """,
    ),
}


@pytest.mark.parametrize("name", FINISHED_GAMES)
def test_finished_games(game, name):
    moves, expected = FINISHED_GAMES[name]
    state = play(game, moves)
    assert game.render(state) == board(expected)
    assert bool(state.terminated)
    assert int(state.step_count) == len(moves)
    assert not state.legal_action_mask.any()
    winner = {"X wins": [1.0, -1.0], "O wins": [-1.0, 1.0], "game over": [0.0, 0.0]}
    np.testing.assert_array_equal(state.rewards, winner[board(expected).splitlines()[-1]])
    before_last = play(game, moves[:-1])
    assert not bool(before_last.terminated)
    np.testing.assert_array_equal(before_last.rewards, [0.0, 0.0])


def test_render_start(game):
    expected = """
        . . .    1 2 3
        . . .    4 5 6
        . . .    7 8 9
        X to move
        """
    assert game.render(game.init(jax.random.key(0))) == board(expected)


def test_observation_is_from_the_movers_view(game):
    state = play(game, "5")
    obs = game.observe(state)  # O to move: X's mark is the opponent's.
    assert int(state.current_player) == 1
    np.testing.assert_array_equal(obs[1, 1], [0.0, 1.0])
    assert obs.sum() == 1.0
    state = play(game, "51")
    obs = game.observe(state)
    np.testing.assert_array_equal(obs[1, 1], [1.0, 0.0])
    np.testing.assert_array_equal(obs[0, 0], [0.0, 1.0])
    assert obs.sum() == 2.0


# Symmetry index (base.dihedral_perms order) -> where cells 1, 2, 3 go, worked out by hand:
# identity, left-right mirror, up-down mirror, half turn, transpose, quarter turn clockwise,
# quarter turn anticlockwise, anti-transpose.
CELL_IMAGES = {
    0: "123",
    1: "321",
    2: "789",
    3: "987",
    4: "147",
    5: "369",
    6: "741",
    7: "963",
}


@pytest.mark.parametrize("index", range(8))
def test_symmetries(game, index):
    image = dict(zip("123", CELL_IMAGES[index], strict=True))
    state = play(game, "123")
    transformed = play(game, "".join(image[cell] for cell in "123"))
    obs, mask = game.observe(state), state.legal_action_mask
    got_obs, got_mask = game.apply_symmetry(obs, mask, index)
    np.testing.assert_array_equal(got_obs, game.observe(transformed))
    np.testing.assert_array_equal(got_mask, transformed.legal_action_mask)
    policy = jax.nn.one_hot(2, 9)  # All weight on cell 3.
    _, got_policy = game.apply_symmetry(obs, policy, index)
    assert game.action_to_string(int(jnp.argmax(got_policy))) == image["3"]


def test_parse_action(game):
    state = play(game, "5")
    assert game.parse_action("1", state) == 0
    assert game.parse_action(" 9 ", state) == 8
    assert [game.action_to_string(action) for action in range(9)] == list("123456789")
    with pytest.raises(UserError, match="not legal"):
        game.parse_action("5", state)
    for text in ("0", "10", "a1", ""):
        with pytest.raises(UserError, match="not a move"):
            game.parse_action(text, state)
