"""Xiangqi king safety: is the mover's general attacked after a move (`xiangqi` uses it for
the legal-move mask and for check).

King safety asks whether the mover's general is attacked after the move. The squares that
matter are fixed by the general's point: four rays (chariots, cannons, the flying general),
eight horse points with their legs, three soldier points. They are packed as bit words (a
bit per ray step, per horse, per leg, per soldier) once per position; a move changes only
the bits of its origin and destination, read from a [91 * 91, 7] table, and the first and
second piece along a ray are the lowest set bits of the ray's occupancy word. A move of the
general itself recomputes the words at its destination (at most 4 such moves). The same
words at the general's own point tell whether the mover is in check, which the repetition
rule records for each position, and `cycle_checks` reads those records back over a
repetition cycle (perpetual check, see `Xiangqi`).
"""

import jax.numpy as jnp

from azjax.games.xiangqi_tables import (
    _WATCH_MASKS,
    _WATCH_POINTS,
    CANNON,
    CHARIOT,
    GENERAL,
    HORSE,
    OFF,
    POINTS,
    SOLDIER,
)
from azjax.types import Array


def watch(cells: Array, general: Array) -> Array:
    """The bit words of the points that can attack a general on `general`.

    Args:
      cells: [91] int8, the board seen from the mover, with the point OFF empty.
      general: [...] int32, points of the mover's general (OFF: nothing is watched).

    Returns:
      [..., 15] int32: per ray (up, down, left, right) a word with bit s set where the point
      s + 1 steps away is occupied (words 0-3), holds an opposing chariot or the opposing
      general (4-7), holds an opposing cannon (8-11); bit i for an opposing horse on horse
      point i (12) and where its leg is occupied (13); bit j for an opposing soldier on
      soldier point j (14).
    """
    seen = cells[jnp.asarray(_WATCH_POINTS)[general]]  # [..., 55] int8
    rays = seen[..., :36].reshape(*seen.shape[:-1], 1, 4, 9)
    flags = (rays != 0, (rays == -CHARIOT) | (rays == -GENERAL), rays == -CANNON)
    others = (seen[..., None, 36:44] == -HORSE, seen[..., None, 44:52] != 0)
    bits = 1 << jnp.arange(9, dtype=jnp.int32)
    return jnp.concatenate(
        [
            jnp.sum(jnp.concatenate(flags, axis=-3) * bits, axis=-1).reshape(*seen.shape[:-1], 12),
            jnp.sum(jnp.concatenate(others, axis=-2) * bits[:8], axis=-1),
            jnp.sum((seen[..., None, 52:55] == -SOLDIER) * bits[:3], axis=-1),
        ],
        axis=-1,
    ).astype(jnp.int32)


def attacked_after(words: Array, general: Array, origin: Array, target: Array) -> Array:
    """[...] bool, whether the general on `general` is attacked once the mover's piece on
    `origin` has moved to `target` (capturing whatever stood there).

    Args:
      words: [..., 15] int32, `watch` of the board before the move at `general`.
      general, origin, target: [...] int32 points (OFF for "no move").
    """
    masks = jnp.asarray(_WATCH_MASKS)
    leaving = masks[general * (POINTS + 1) + origin]  # [..., 7]
    arriving = masks[general * (POINTS + 1) + target]
    occupied = (words[..., 0:4] & ~leaving[..., :4]) | arriving[..., :4]
    first = occupied & -occupied  # the lowest set bit: the nearest piece on each ray
    rest = occupied ^ first
    second = rest & -rest
    line = ((first & words[..., 4:8]) | (second & words[..., 8:12])) & ~arriving[..., :4]
    legs = (words[..., 13] & ~leaving[..., 5]) | arriving[..., 5]
    horse = words[..., 12] & ~arriving[..., 4] & ~legs
    soldier = words[..., 14] & ~arriving[..., 6]
    return jnp.any(line != 0, axis=-1) | (horse != 0) | (soldier != 0)


def in_check(board: Array) -> Array:
    """[] bool, whether the mover's general is attacked on a board seen from the mover."""
    cells = jnp.append(board, jnp.int8(0))
    general = jnp.argmax(board == GENERAL).astype(jnp.int32)
    return attacked_after(watch(cells, general), general, jnp.int32(OFF), jnp.int32(OFF))


def cycle_checks(history: Array, checks: Array, ply: Array) -> tuple[Array, Array]:
    """Whether each side gave check with every one of its moves since the first stored
    occurrence of the position at `ply`.

    Args:
      history: [R, 2] uint32, `XiangqiState.history` holding position `ply` at `ply % R`.
      checks: [R] bool, `XiangqiState.checks`, the same ring.
      ply: [] int32, the ply of the current position.

    Returns:
      ([] bool, [] bool): the side that made the last move checked with each of its moves
      in the cycle, the other side did. Both are True when the position has no earlier
      occurrence (an empty cycle).
    """
    length = history.shape[0]
    age = (ply - jnp.arange(length)) % length  # [R] plies since each stored position
    occurrences = jnp.all(history == history[ply % length], axis=-1)
    cycle = jnp.max(jnp.where(occurrences, age, 0))  # plies since the first occurrence
    # Positions 0, 2, ... plies back were reached by the last mover's moves; the first
    # occurrence itself (age `cycle`) is the current position again and is left out.
    unchecked = ~checks & (age < cycle)
    mover_checked = ~jnp.any(unchecked & (age % 2 == 0))
    opponent_checked = ~jnp.any(unchecked & (age % 2 == 1))
    return mover_checked, opponent_checked
