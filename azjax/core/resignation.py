"""AlphaGo Zero's resignation in self-play (Silver et al. 2017, "Methods: Self-play").

A game resigns when the mover's searched value and the value of its chosen move are both
below v_resign. A fraction of the games may not resign and measure the false positives
instead; v_resign adapts after each self-play call (`adapt_threshold`). `selfplay` calls
these per ply; `Resignation` is part of its state, and so of checkpoints.
"""

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from azjax.core.selfplay_rules import where_rows
from azjax.games import State
from azjax.types import Array, PRNGKey, SearchOutput

# The thresholds whose false-positive rates resignation measures (v_resign moves among them).
RESIGN_THRESHOLDS = tuple(round(-0.98 + 0.03 * k, 2) for k in range(17))  # -0.98 ... -0.5
NO_RESIGN = -1.0  # a threshold no searched value falls below


@dataclasses.dataclass(frozen=True)
class ResignRule:
    """AlphaGo Zero's resignation (Silver et al. 2017, "Methods: Self-play").

    A game resigns when the mover's searched value and the value of its chosen move are both
    below `v_resign`. A fraction of games may not resign; in them the first player whose
    values fell below each of `RESIGN_THRESHOLDS` is noted, and a *false positive* at that
    threshold is such a game whose would-be resigner did not lose. `v_resign` becomes the
    highest threshold whose false-positive rate (over the decayed count of those games) is
    at most `target`, once `min_games` of them have ended; before that it is `initial`.
    """

    initial: float = -0.9  # v_resign before enough games were checked
    no_resign_fraction: float = 0.1  # games that never resign and measure false positives
    target: float = 0.05  # highest false-positive rate allowed
    min_games: int = 20  # checked games before v_resign adapts
    decay: float = 0.98  # per self-play call, of the checked-game counts


@struct.dataclass
class Resignation:
    """Resignation's state: per slot, and the measured false positives."""

    allowed: Array  # [B] bool: the slot's game may resign (the others check false positives)
    would_resign: Array  # [B, K] int8: first player whose values fell below threshold k, or -1
    threshold: Array  # [] float32 v_resign now
    checked: Array  # [] float32 games that could not resign and ended (decayed)
    false_positives: Array  # [K] float32 of those, games the would-be resigner did not lose


def init(rule: ResignRule, key: PRNGKey, batch_size: int) -> Resignation:
    """Resignation's state for `batch_size` new games (B)."""
    return Resignation(
        allowed=jax.random.uniform(key, (batch_size,)) >= rule.no_resign_fraction,
        would_resign=jnp.full((batch_size, len(RESIGN_THRESHOLDS)), -1, jnp.int8),
        threshold=jnp.float32(rule.initial),
        checked=jnp.float32(0.0),
        false_positives=jnp.zeros(len(RESIGN_THRESHOLDS), jnp.float32),
    )


def restart(resignation: Resignation, restarted: Array, rule: ResignRule, key: PRNGKey):
    """The per-slot state of the games that restart (`restarted` [B] bool) drawn afresh."""
    allowed = jax.random.uniform(key, restarted.shape) >= rule.no_resign_fraction
    return resignation.replace(
        allowed=jnp.where(restarted, allowed, resignation.allowed),
        would_resign=jnp.where(restarted[:, None], -1, resignation.would_resign).astype(jnp.int8),
    )


def resign(
    resignation: Resignation,
    states: State,
    next_games: State,
    output: SearchOutput,
    rule: ResignRule,
) -> tuple[Resignation, Array, State]:
    """Ends the games whose mover resigns; notes would-be resignations in the others and
    counts their false positives when they end.

    Args:
      states: [B] the positions searched.
      next_games: [B] the positions after the moves chosen.
      output: the search's output (`value`, `action_value`).

    Returns:
      (the resignation state, [B] bool the games that resigned, the next games with those
      ended as losses for their resigners).
    """
    movers = states.current_player
    # The mover's searched value and its chosen move's value, both below the threshold.
    value = jnp.maximum(output.value, output.action_value)
    live = ~states.terminated
    resigned = live & resignation.allowed & (value < resignation.threshold)
    loser_rewards = jnp.where(jnp.arange(2)[None, :] == movers[:, None], -1.0, 1.0)
    resigned_games = next_games.replace(
        terminated=jnp.ones_like(next_games.terminated),
        rewards=loser_rewards.astype(next_games.rewards.dtype),
        legal_action_mask=jnp.zeros_like(next_games.legal_action_mask),
        step_count=states.step_count + 1,
    )
    next_games = where_rows(resigned, resigned_games, next_games)

    thresholds = jnp.asarray(RESIGN_THRESHOLDS, jnp.float32)
    below = live[:, None] & ~resignation.allowed[:, None] & (value[:, None] < thresholds)
    first = (resignation.would_resign < 0) & below
    would_resign = jnp.where(first, movers[:, None], resignation.would_resign).astype(jnp.int8)
    checked = next_games.terminated & ~resignation.allowed & live
    resigner = jnp.clip(would_resign, 0, 1).astype(jnp.int32)
    resigner_reward = jnp.take_along_axis(next_games.rewards, resigner, axis=1)  # [B, K]
    wrong = checked[:, None] & (would_resign >= 0) & (resigner_reward >= 0)
    resignation = resignation.replace(
        would_resign=would_resign,
        checked=resignation.checked + jnp.sum(checked),
        false_positives=resignation.false_positives + jnp.sum(wrong, axis=0),
    )
    del rule
    return resignation, resigned, next_games


def false_positive_rates(resignation: Resignation) -> Array:
    """[K] the measured false-positive rate at each of `RESIGN_THRESHOLDS`."""
    return resignation.false_positives / jnp.maximum(resignation.checked, 1.0)


def adapt_threshold(resignation: Resignation, rule: ResignRule) -> Resignation:
    """v_resign: the highest threshold whose false-positive rate is at most the target (none
    qualifying: `NO_RESIGN`), once enough games were checked; the counts then decay."""
    thresholds = jnp.asarray(RESIGN_THRESHOLDS, jnp.float32)
    good = false_positive_rates(resignation) <= rule.target
    best = jnp.max(jnp.where(good, thresholds, NO_RESIGN))
    ready = resignation.checked >= rule.min_games
    return resignation.replace(
        threshold=jnp.where(ready, best, resignation.threshold).astype(jnp.float32),
        checked=resignation.checked * rule.decay,
        false_positives=resignation.false_positives * rule.decay,
    )
