"""Random-play differential testing against pgx, shared by the game tests.

pgx (github.com/sotetsuk/pgx) is a separate JAX implementation of the same games. Two
differences are mapped, not tested: pgx draws which player id moves first at `init` (our
player i is pgx player `(first + i) % 2`), and pgx sets every action legal once a game is
over (ours are all illegal).
"""

import jax
import jax.numpy as jnp
import numpy as np
from conftest import optimized_jit


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


def assert_matches_pgx(
    game, pgx_name: str, num_games: int = 2000, *, observation_planes: int | None = None
) -> dict:
    """Plays `num_games` random games in both implementations and compares every ply.

    Compared: terminated, player to move, rewards (in our player order) and observations at
    every ply; legal masks while the game runs (pgx marks every action legal once over).
    Also checks both seatings of pgx occur, both players win some games and some are drawn.

    Args:
      observation_planes: compare only the first this many observation planes (for a game
        whose observation adds planes to pgx's); None compares them all.

    Returns:
      The trajectory: name -> (ours, pgx's) numpy arrays [T+1, B, ...], as compared.
    """
    import pgx  # noqa: PLC0415

    env = pgx.make(pgx_name)
    trajectory, first = optimized_jit(play_against_reference, static_argnums=(0, 1, 3))(
        game, env, jax.random.key(0), num_games
    )
    assert 0 < first.mean() < 1  # Both pgx seatings occur.
    terminated = trajectory["terminated"][0]  # [T+1, B]
    assert terminated[-1].all()
    for name in ("terminated", "player", "rewards"):
        ours, theirs = trajectory[name]
        np.testing.assert_array_equal(ours, theirs, err_msg=name)
    ours, theirs = trajectory["observation"]
    np.testing.assert_array_equal(ours[..., :observation_planes], theirs, err_msg="observation")
    ours, theirs = trajectory["mask"]
    np.testing.assert_array_equal(ours[~terminated], theirs[~terminated])
    assert not ours[terminated].any()
    final_rewards = trajectory["rewards"][0].sum(axis=0)  # [B, 2]
    assert (final_rewards[:, 0] > 0).any() and (final_rewards[:, 1] > 0).any()
    assert (final_rewards == 0).all(axis=1).any()  # Some random games are draws.
    return trajectory
