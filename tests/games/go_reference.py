"""Test helpers for Go: ASCII positions, random play against pgx, a brute-force superko check.

pgx (`pgx.go.Go`, pgx/_src/games/go.py in pgx 2.6) and OpenSpiel (`pyspiel.load_game("go")`,
open_spiel/games/go/go.cc) are the independent implementations the tests compare with;
`tests/games/test_go.py` says how their rules are matched to ours.
"""

import textwrap

import jax
import jax.numpy as jnp
import numpy as np

_STONES = {".": 0, "X": 1, "O": -1}


def diagram_board(text: str) -> np.ndarray:
    """A board [N] int8 (+1 black X, -1 white O, 0 empty '.') from rows of a square ASCII
    diagram, top row first, points separated by blanks (row and column labels not allowed)."""
    rows = [line.split() for line in textwrap.dedent(text).strip().splitlines()]
    assert all(len(row) == len(rows) for row in rows), "the diagram must be square"
    return np.array([_STONES[point] for row in rows for point in row], np.int8)


def openspiel_action(action: int, size: int) -> int:
    """Our action id as OpenSpiel's: OpenSpiel numbers the rows from the bottom (a1 = 0)."""
    row, column = divmod(int(action), size)
    return action if row == size else (size - 1 - row) * size + column


def play_against_pgx(game, env, key, num_games: int, *, pass_logit: float = 0.0):
    """Plays the same random legal moves (ours) in `game` and pgx's Go `env`, comparing in the
    compiled scan, and records what the test needs per ply [T+1, B] (T = max_episode_length).

    The actions are uniform over our legal moves, except that a pass gets `pass_logit` added
    to its logit. pgx draws which player id moves first: our player i is pgx player
    `(first + i) % 2`, and its rewards are put in our player order.

    Returns a dict of numpy arrays, each [T+1, B] unless noted:
      actions [T, B]: the actions played.
      board: our board [T+1, B, N] int8; rewards, captures: ours [T+1, B, 2].
      terminated, pgx_terminated, pgx_superko (pgx ended the game on a repetition).
      same_board, same_player, same_observation, same_mask (legal moves, compared only where
      pgx's game runs, as pgx marks all actions legal once over), same_score (black area -
      white area - komi, pgx's count), same_rewards.
    """
    from pgx._src.games.go import _count_scores  # noqa: PLC0415  (pgx's own area count)

    size = game.size
    init_key, play_key = jax.random.split(key)
    init_keys = jax.random.split(init_key, num_games)
    ours, theirs = jax.vmap(game.init)(init_keys), jax.vmap(env.init)(init_keys)
    first = theirs.current_player  # [B] pgx's id for our player 0
    their_order = (first[:, None] + jnp.arange(2)) % 2  # [B, 2] pgx id of our player i

    def record(ours, theirs):
        their_scores = jax.vmap(lambda x: _count_scores(x, size))(theirs._x)  # [B, 2]
        their_score = their_scores[:, 0] - their_scores[:, 1] - env._game.komi
        their_rewards = jnp.take_along_axis(theirs.rewards, their_order, axis=1)
        observation = jax.vmap(game.observe)(ours)
        return {
            "board": ours.board,
            "rewards": ours.rewards,
            "terminated": ours.terminated,
            "pgx_terminated": theirs.terminated,
            "pgx_superko": theirs._x.is_psk,
            "same_board": jnp.all(ours.board == jnp.sign(theirs._x.board), axis=1),
            "same_player": (first + ours.current_player) % 2 == theirs.current_player,
            "same_observation": jnp.all(
                observation == theirs.observation.astype(jnp.float32), axis=(1, 2, 3)
            ),
            "same_mask": jnp.all(ours.legal_action_mask == theirs.legal_action_mask, axis=1)
            | theirs.terminated,
            "captures": ours.captures,
            "same_score": jax.vmap(game.score)(ours) == their_score,
            "same_rewards": jnp.all(ours.rewards == their_rewards, axis=1),
        }

    def ply(carry, key):
        ours, theirs = carry
        logits = jnp.where(ours.legal_action_mask, 0.0, -jnp.inf).at[:, -1].add(pass_logit)
        actions = jax.random.categorical(key, logits).astype(jnp.int32)
        ours, theirs = jax.vmap(game.step)(ours, actions), jax.vmap(env.step)(theirs, actions)
        return (ours, theirs), (record(ours, theirs), actions)

    plies = jax.random.split(play_key, game.max_episode_length)
    _, (trajectory, actions) = jax.lax.scan(ply, (ours, theirs), plies)
    trajectory = jax.tree.map(
        lambda x, xs: jnp.concatenate([x[None], xs]), record(ours, theirs), trajectory
    )
    return {**trajectory, "actions": actions}


def play_with_all_children(game, rules_without_superko, key, num_games: int, pass_logit: float):
    """Random games of `game` (superko on), recording at every ply the board and, for every
    action, the board it would lead to under `rules_without_superko` (the same game with
    `superko=False`, whose legal moves are also recorded).

    Returns boards [T, B, N], masks and basic_masks [T, B, A] (ours and those without
    superko), children [T, B, A, N], terminated [T, B].
    """
    num_actions = game.num_actions

    def ply(states, key):
        logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf).at[:, -1].add(pass_logit)
        actions = jax.random.categorical(key, logits).astype(jnp.int32)
        basic = jax.vmap(rules_without_superko.setup)(states.board, states.current_player)
        basic = basic.replace(ko_point=states.ko_point)
        basic = jax.vmap(rules_without_superko._analyse)(basic)
        children = jax.vmap(
            lambda state: jax.vmap(lambda action: rules_without_superko.step(state, action).board)(
                jnp.arange(num_actions)
            )
        )(basic)
        record = (
            states.board,
            states.legal_action_mask,
            basic.legal_action_mask,
            children,
            states.terminated,
        )
        return jax.vmap(game.step)(states, actions), record

    init_key, play_key = jax.random.split(key)
    states = jax.vmap(game.init)(jax.random.split(init_key, num_games))
    plies = jax.random.split(play_key, game.max_episode_length)
    _, record = jax.lax.scan(ply, states, plies)
    return record
