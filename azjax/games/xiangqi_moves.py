"""Xiangqi's move generation: the legal moves on a board seen from the mover.

Move generation is piece-centric. Each side has at most 16 pieces whose moves fit in 119
slots (general 4, 2 advisors x 4, 2 elephants x 4, 2 horses x 8, 2 chariots x 17, 2 cannons
x 17, 5 soldiers x 3), so a per-kind table indexed by the piece's point gives every slot's
label, destination, blocking point (horse leg, elephant eye) and two indices into the row
and file prefix counts of occupied points, whose difference counts the pieces a chariot or
cannon passes over. A slot is pseudo-legal by a few gathers and comparisons.
"""

import jax.numpy as jnp

from azjax.games.xiangqi_check import attacked_after, watch
from azjax.games.xiangqi_tables import (
    _CANNON_SLOTS,
    _GENERAL_SLOTS,
    _MAX_COUNT,
    _PIECE_PICKS,
    _SLOT_PIECES,
    _SLOT_ROWS,
    _SLOT_WATCH,
    _SLOT_WIDTHS,
    _SLOTS,
    FILES,
    NUM_ACTIONS,
    OFF,
    POINTS,
    ROWS,
    SOLDIER,
)
from azjax.types import Array


def legal_moves(board: Array) -> tuple[Array, Array]:
    """The legal labels ([A] bool) on a board seen from the mover ([90] int8) and whether
    the mover is in check ([] bool), which the king-safety words give for free."""
    cells = jnp.append(board, jnp.int8(0))  # [91], the point OFF reads as empty
    occupied = (board != 0).reshape(ROWS, FILES).astype(jnp.int32)
    prefix = jnp.concatenate(
        [
            jnp.cumsum(occupied, axis=1).reshape(-1),
            jnp.cumsum(occupied, axis=0).reshape(-1),
            jnp.zeros(1, jnp.int32),
        ]
    )  # [181]
    origin = piece_points(board)[_SLOT_PIECES]  # [119]
    slots = jnp.asarray(_SLOTS)[_SLOT_ROWS + origin * _SLOT_WIDTHS]  # [119, 5]
    label, target, block, hi, lo = slots.T  # [119] each
    victim = cells[target]
    between = prefix[hi] - prefix[lo]
    line_ok = jnp.where(
        jnp.asarray(_CANNON_SLOTS),
        jnp.where(victim == 0, between == 0, between == 1),
        between == 0,
    )
    pseudo = (target != OFF) & (victim <= 0) & (cells[block] == 0) & line_ok
    # King safety: a move of the general is judged from its target, the others from
    # the general's point, origin[0]. So the watch words are needed at 5 points.
    words = watch(cells, jnp.concatenate([origin[:1], target[:_GENERAL_SLOTS]]))  # [5, 15]
    general = jnp.where(jnp.arange(len(origin)) < _GENERAL_SLOTS, target, origin[0])
    legal = pseudo & ~attacked_after(words[_SLOT_WATCH], general, origin, target)
    mask = jnp.zeros(NUM_ACTIONS + 1, jnp.bool_)
    mask = mask.at[jnp.where(legal, label, NUM_ACTIONS)].set(True)[:NUM_ACTIONS]
    off = jnp.int32(OFF)
    return mask, attacked_after(words[0], origin[0], off, off)


def piece_points(board: Array) -> Array:
    """[16] int32, the points of the mover's pieces in slot order, OFF for missing ones.

    The j-th piece of a kind is on its j-th lowest point: a masked minimum over the points
    above the (j-1)-th (XLA:CPU runs these far faster than `argmax`, `top_k` or `nonzero`).
    """
    points = jnp.arange(POINTS)
    present = board == jnp.arange(1, 8, dtype=jnp.int8)[:, None]  # [7, 90]
    lowest = [jnp.min(jnp.where(present, points, OFF), axis=1)]  # [7]
    lowest.append(jnp.min(jnp.where(present & (points > lowest[0][:, None]), points, OFF), axis=1))
    soldiers = [lowest[1][SOLDIER - 1]]
    for _ in range(_MAX_COUNT[SOLDIER] - 2):
        above = present[SOLDIER - 1] & (points > soldiers[-1])
        soldiers.append(jnp.min(jnp.where(above, points, OFF)))
    found = jnp.concatenate([jnp.stack(lowest, axis=1).reshape(-1), jnp.stack(soldiers[1:])])
    return found[_PIECE_PICKS].astype(jnp.int32)
