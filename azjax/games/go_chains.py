"""Go's chains: each stone labelled with its chain, and the values at each point's neighbours.

A chain is found by label propagation on the board [S, S]: every stone starts with its own
point number and takes, until nothing changes, the smallest label among its same-coloured
neighbours. `Go.setup` labels a position from scratch this way; a move then keeps the
labels up to date by relabelling (`go`).
"""

import jax
import jax.numpy as jnp

from azjax.types import Array

OFF_BOARD = 2  # board value read off the edge of the board


def neighbour_values(values: Array, fill) -> Array:
    """The values [4, S, S] at each point's neighbour above, below, left and right on a board
    [S, S], `fill` off the board."""
    size = values.shape[0]
    padded = jnp.pad(values, 1, constant_values=fill)
    return jnp.stack(
        [
            padded[:size, 1:-1],
            padded[2:, 1:-1],
            padded[1:-1, :size],
            padded[1:-1, 2:],
        ]
    )


# The loop functions below are module-level (not closures over arrays), so that eager calls
# of the loops reuse one compilation.
def _spread_labels(carry: tuple[Array, ...]) -> tuple[Array, ...]:
    """One step of label propagation: each stone takes the smallest label of its own
    colour's stones among itself and its neighbours (`same` [4, S, S] marks those)."""
    labels, _, same = carry
    num_points = labels.size
    neighbour_labels = neighbour_values(labels, num_points)
    spread = jnp.min(jnp.where(same, neighbour_labels, num_points), axis=0)
    return jnp.minimum(labels, spread), labels, same


def _labels_spreading(carry: tuple[Array, ...]) -> Array:
    labels, previous, _ = carry
    return jnp.any(labels != previous)


def label_chains(board: Array, size: int) -> Array:
    """[N] int16 chain labels of a board [N] from scratch: the smallest point of each chain,
    N on empty points (label propagation until nothing changes)."""
    num_points = size * size
    stones = (board != 0).reshape(size, size)
    grid = board.reshape(size, size)
    same = (neighbour_values(grid, jnp.int8(OFF_BOARD)) == grid) & stones  # [4, S, S]
    start = jnp.where(stones, jnp.arange(num_points).reshape(size, size), num_points)
    carry = _spread_labels((start, start, same))
    labels = jax.lax.while_loop(_labels_spreading, _spread_labels, carry)[0]
    return labels.reshape(-1).astype(jnp.int16)
