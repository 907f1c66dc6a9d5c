"""Exact Tic-tac-toe minimax: a perfect player (opponent spec `minimax`) and game values.

Boards are seen from the mover's view as 9 cells row-major from the top-left:
0 = empty, 1 = the mover's mark, 2 = the opponent's mark. Such a board's base-3 number
(cell i is digit i) indexes a table of the optimal moves, built once in Python by
memoized negamax over every reachable board and looked up in JAX.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from azjax import games
from azjax.games import base
from azjax.types import UserError

_NUM_CELLS = 9
_LINES = base.lines(3, 3, 3).tolist()  # [8, 3] cell indices
_POWERS = 3 ** np.arange(_NUM_CELLS)  # [9] digit weights of the board index


def _child(board: tuple[int, ...], cell: int) -> tuple[int, ...]:
    """The board after the mover marks `cell`, seen from the next mover's view."""
    marked = board[:cell] + (1,) + board[cell + 1 :]
    return tuple((0, 2, 1)[mark] for mark in marked)


def _opponent_has_line(board: tuple[int, ...]) -> bool:
    return any(all(board[cell] == 2 for cell in line) for line in _LINES)


@functools.cache
def _negamax(board: tuple[int, ...]) -> int:
    if _opponent_has_line(board):
        return -1  # The opponent's last move completed a line.
    if all(board):
        return 0
    return max(-_negamax(_child(board, cell)) for cell in range(_NUM_CELLS) if not board[cell])


def optimal_value(board) -> int:
    """The game-theoretic value of a board for the player to move: +1 win, 0 draw, -1 loss.

    Args:
      board: 9 cells from the mover's view (0 empty, 1 mover, 2 opponent), row-major.
    """
    return _negamax(tuple(int(mark) for mark in board))


@functools.cache
def _optimal_moves_table() -> np.ndarray:
    """[3**9, 9] bool: the optimal moves of every reachable, unfinished board (by index)."""
    table = np.zeros((3**_NUM_CELLS, _NUM_CELLS), np.bool_)
    stack, seen = [(0,) * _NUM_CELLS], set()
    while stack:
        board = stack.pop()
        if board in seen or _opponent_has_line(board) or all(board):
            continue
        seen.add(board)
        moves = [cell for cell in range(_NUM_CELLS) if not board[cell]]
        values = {cell: -_negamax(_child(board, cell)) for cell in moves}
        best = max(values.values())
        table[int(np.dot(board, _POWERS)), [cell for cell in moves if values[cell] == best]] = True
        stack.extend(_child(board, cell) for cell in moves)
    return table


def make_minimax_player(game: base.Game):
    """Returns a perfect Tic-tac-toe player, jittable: `player(states, key) -> actions`.

    The player picks uniformly at random among the minimax-optimal moves of each game.
    `states` is a batched TicTacToe State [B] and `key` a PRNG key; `actions` is [B] int32
    (0 in finished games, where stepping is a no-op).

    Raises:
      UserError: `game` is not Tic-tac-toe.
    """
    if games.family_of(game) != "tic_tac_toe":
        raise UserError(f"the minimax opponent knows only tic_tac_toe, not {game.name}")
    table = jnp.asarray(_optimal_moves_table())  # [3**9, 9] bool
    powers = jnp.asarray(_POWERS, jnp.int32)  # [9]

    def choose(state, key):
        obs = game.observe(state)  # [3, 3, 2]: the mover's marks, the opponent's marks
        digits = (obs[..., 0] + 2 * obs[..., 1]).reshape(_NUM_CELLS).astype(jnp.int32)
        optimal = table[jnp.dot(digits, powers)]  # [9] bool
        logits = jnp.where(optimal, 0.0, -jnp.inf)
        return jax.random.categorical(key, logits).astype(jnp.int32)

    def player(states, key):
        keys = jax.random.split(key, states.current_player.shape[0])
        return jax.vmap(choose)(states, keys)

    return player
