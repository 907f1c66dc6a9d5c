"""Tromp-Taylor area counting of a Go board: Go's score and its ownership map.

A colour's area is its stones plus the empty points whose region (connected through empty
points) reaches stones of that colour only; every stone counts, dead or not. The regions
are found by flood fills on one uint32 word per board row (bit c of word r is point (r, c)),
grown from each colour's stones through the empty points until they stop growing.
"""

import jax
import jax.numpy as jnp

from azjax.types import Array


def areas(board: Array, size: int, needed: Array) -> tuple[Array, Array]:
    """Black's and white's areas [size] uint32, a word per row (bit c of row r: point (r, c)).

    Args:
      board: [N] int8, +1 black, -1 white, 0 empty (N = size * size, row-major).
      size: the board's side (static).
      needed: [] bool; when False no flood-fill round runs (the areas are then the stones
        alone), so that stepping pays for the count only on the final ply.
    """
    bits = jnp.left_shift(jnp.uint32(1), jnp.arange(size, dtype=jnp.uint32))  # [size]

    def rows(points):  # [N] bool -> [size] uint32, bit c of row r = point (r, c)
        cells = jnp.where(points.reshape(size, size), bits, jnp.uint32(0))
        return jnp.sum(cells, axis=1, dtype=jnp.uint32)

    black, white, empty = rows(board == 1), rows(board == -1), rows(board == 0)
    start = jnp.stack([black, white])
    carry = _grow_reach((start, start, empty, jnp.asarray(needed)))
    reach = jax.lax.while_loop(_reach_growing, _grow_reach, carry)[0]
    return black | (reach[0] & ~reach[1]), white | (reach[1] & ~reach[0])


def area_difference(board: Array, size: int, needed: Array) -> Array:
    """[] float32: black's area minus white's; 0 unless `needed`."""
    black_area, white_area = areas(board, size, needed)
    count = jax.lax.population_count
    difference = jnp.sum(count(black_area).astype(jnp.int32) - count(white_area))
    return jnp.where(needed, difference, 0).astype(jnp.float32)


def ownership(board: Array, size: int) -> Array:
    """[N] float32 per point: +1 in black's area, -1 in white's, 0 in neither (an empty
    region reaching both colours, such as dame or a seki's shared liberties, or none)."""
    black_area, white_area = areas(board, size, jnp.bool_(True))
    shifts = jnp.arange(size, dtype=jnp.uint32)

    def points(area):  # [size] uint32 -> [N] bool
        return ((area[:, None] >> shifts) & jnp.uint32(1)).astype(bool).reshape(-1)

    return points(black_area).astype(jnp.float32) - points(white_area).astype(jnp.float32)


# The loop functions below are module-level (not closures over arrays), so that eager calls
# of the loops reuse one compilation.
def _grow_reach(carry: tuple[Array, ...]) -> tuple[Array, ...]:
    """One flood-fill step of black's and white's reach (stones and the empty points joined
    to them) [2, size] uint32, a word per row, through the `empty` points [size]."""
    reach, _, empty, needed = carry
    full_row = jnp.uint32((1 << reach.shape[1]) - 1)
    zero = jnp.zeros((2, 1), jnp.uint32)
    spread = reach | ((reach << 1) & full_row) | (reach >> 1)
    spread |= jnp.concatenate([zero, reach[:, :-1]], axis=1)
    spread |= jnp.concatenate([reach[:, 1:], zero], axis=1)
    return reach | (spread & empty), reach, empty, needed


def _reach_growing(carry: tuple[Array, ...]) -> Array:
    reach, previous, _, needed = carry
    return needed & jnp.any(reach != previous)
