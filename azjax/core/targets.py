"""The training targets, each made here and nowhere else: what a game's positions are
labelled with, the value target and the policy target.

Self-play stores what the targets are made from (`replay.Entry`: the search policy, the
searched root value, the game's result) and `replay.sample` makes the learner's targets from
it; game records (`training/record_data`) label their positions with the same functions. A
new target changes these functions, and, if it needs new per-position data, `replay.Entry`
and `replay.ReplayBuffer`.
"""

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import Game, State
from azjax.types import Array


def game_result(game: Game, games: State, draw_adjudication: float = 0.0) -> Array:
    """[B, 2] what the positions of the games `games` [B] ended in are labelled with, per
    player: their final rewards, or for a drawn game with `draw_adjudication` w != 0 (static)
    w times its `game.adjudicate` score (w < 0: a contempt for draws, the side ahead labelled
    as losing). Read only for the games that ended."""
    result = games.rewards
    if draw_adjudication != 0:
        drawn = games.terminated & jnp.all(games.rewards == 0, axis=-1)
        scores = draw_adjudication * jax.vmap(game.adjudicate)(games)
        result = jnp.where(drawn[:, None], scores, result)
    return result


def outcome(result: Array, mover: Array) -> Array:
    """z, the game's result for the player to move: `result` [..., 2] per player (player 0
    first), `mover` [..., K] (0 or 1; -1, never written, reads player 0) -> [..., K]."""
    return jnp.take_along_axis(result, jnp.clip(mover, 0, 1), axis=-1)


def value_target(outcome: Array, root_value: Array | None = None, mix: float = 0.0) -> Array:
    """The value target [...]: the outcome z for the mover, or with a searched root value v
    and a mix w > 0 (`learner.value_target_mix`) `(1 - w) z + w v` (the averaged target of
    "Lessons from AlphaZero, part 4: improving the training target", Prasad et al., Oracle
    AI blog 2018, measured on Connect Four)."""
    if root_value is None or not mix:
        return outcome
    return (1.0 - mix) * outcome + mix * root_value


def policy_target(policy: Array) -> Array:
    """[..., A] float32 the policy target from a stored search policy (the search's
    `action_weights`, bfloat16 in the replay): renormalised to sum 1 after the rounding."""
    policy = policy.astype(jnp.float32)
    return policy / jnp.maximum(policy.sum(-1, keepdims=True), 1e-30)


def recorded_policy(
    actions: np.ndarray, num_actions: int, policies: np.ndarray | None = None
) -> np.ndarray:
    """[n, A] float32 the policy target of n recorded positions (host arrays): the recorded
    search policy where the record has one (a row of `policies` that sums above 0), else the
    move played, `actions` [n], one-hot."""
    played = np.eye(num_actions, dtype=np.float32)[np.asarray(actions)]
    if policies is None:
        return played
    given = np.asarray(policies, np.float32)
    return np.where(given.sum(-1, keepdims=True) > 0, given, played)
