"""Perfect Hex play on small boards: an exact solver of any position, swap rule included.

    solver = HexSolver(4)                  # 2x2 to 5x5
    solver.outcomes(state)                 # {action: +1 win / -1 loss} for the mover
    solver.best(state)                     # a winning action (any action where none wins)
    solver.wins(board, player)             # whether `player`, to move, wins (no swap)

Hex has no draws, so a position is a win or a loss for the mover. The search is depth-first
negamax over bitboards (Python ints; a row of n cells in n + 1 bits, so that shifts find the
six neighbours without wrapping), with what makes Hex searches short (Henderson, Arneson
and Hayward, "Solving 8x8 Hex", IJCAI 2009, in their simplest forms):

- a win in one (a cell joining a chain from one side to a chain from the other) and a win
  in two (a cell after which two such cells exist: the opponent can take only one);
- the must-play region: the mover has to play in every carrier (the cell and its two
  winning cells) of the opponent's wins in two, so only the cells in all of them are tried;
- proof sets: each solved position returns the empty cells the winner's strategy needs.
  Hex is monotone (a stone never hurts its owner), so once a move loses to a strategy that
  needs cells C, every move outside C loses too, and a losing position tries only the
  moves in all the proofs so far;
- a transposition table, up to the half turn of the board, cleared when it holds
  `max_entries` positions.

On a 2-core CPU a 4x4 position solves in milliseconds (its 16 openings in about 0.05 s),
the empty 5x5 board in about 10 s and its 25 openings in about 2.5 minutes; the 5x5
openings are kept in `OPENINGS` (checked by the deep tests), so `outcomes` of the empty
board is a lookup.
"""

import numpy as np

from azjax.games import State
from azjax.types import UserError

MAX_SIZE = 5  # the largest board it takes (5x5 openings take minutes; 6x6 was not tried)
# The winning first moves of the empty n x n board without the swap (row-major cells).
# Every other first move loses. 5x5 (two and a half minutes to solve): the deep tests.
OPENINGS = {
    2: (1, 2),
    3: (2, 3, 4, 5, 6),
    4: (3, 6, 9, 12),
    5: (4, 6, 7, 8, 9, 11, 12, 13, 15, 16, 17, 18, 20),
}


class HexSolver:
    """Solves positions of Hex on `size` x `size` cells (the rules of `azjax.games.hex`:
    Black, player 0, joins top and bottom).

    Args:
      size: cells on a side, 2 to MAX_SIZE.
      max_entries: positions the transposition table holds before it is cleared (about
        100 bytes each).

    Raises:
      UserError: a size out of range.
    """

    def __init__(self, size: int, *, max_entries: int = 2_000_000):
        if not 2 <= size <= MAX_SIZE:
            raise UserError(
                f"the Hex solver solves boards of 2x2 to {MAX_SIZE}x{MAX_SIZE}, not {size}x{size}"
            )
        self.size, self.max_entries = size, max_entries
        n = size
        self._stride = stride = n + 1
        self._bit = [(cell // n) * stride + cell % n for cell in range(n * n)]  # cell -> bit
        self._mask = sum(1 << bit for bit in self._bit)
        top, left = sum(1 << c for c in range(n)), sum(1 << (r * stride) for r in range(n))
        # Each player's two sides: Black's top and bottom rows, White's left and right columns.
        self._sides = ((top, top << ((n - 1) * stride)), (left, left << (n - 1)))
        centre = (n - 1) / 2
        distance = [
            abs(r - centre) + abs(c - centre) + abs(r + c - 2 * centre)
            for r, c in (divmod(cell, n) for cell in range(n * n))
        ]
        self._order = [1 << self._bit[cell] for cell in np.argsort(distance, kind="stable")]
        self._shift = 2 * stride * n  # keys: mover | opponent << shift | mover's colour
        self._width = (n - 1) * stride + n  # bits the half turn reverses
        self._table: dict[int, int] = {}
        self.searched = 0  # positions searched (not found in the table) since construction

    # The board as bits.

    def _bits(self, cells) -> tuple[int, int]:
        """(Black's bits, White's bits) of an azjax board (`cells` [n*n], > 0 Black)."""
        cells = np.asarray(cells).reshape(-1)
        black = sum(1 << self._bit[c] for c in np.flatnonzero(cells > 0))
        white = sum(1 << self._bit[c] for c in np.flatnonzero(cells < 0))
        return black, white

    def _neighbours(self, x: int) -> int:
        s = self._stride
        return (
            (x >> s) | (x >> (s - 1)) | (x << 1) | (x << s) | (x << (s - 1)) | (x >> 1)
        ) & self._mask

    def _flood(self, stones: int, reach: int) -> int:
        """The stones joined to `reach` (stones themselves) through stones."""
        while True:
            grown = stones & (reach | self._neighbours(reach))
            if grown == reach:
                return reach
            reach = grown

    def _reach(self, stones: int, empty: int, colour: int):
        """The stones joined to each side and the empty cells next to them (or on the side)."""
        first, second = self._sides[colour]
        near_first = self._flood(stones, stones & first)
        near_second = self._flood(stones, stones & second)
        return (
            near_first,
            near_second,
            (self._neighbours(near_first) | first) & empty,
            (self._neighbours(near_second) | second) & empty,
        )

    def _wins_in_two(self, stones: int, empty: int, colour: int, reach):
        """(cell, its winning cells) for each cell after which `stones` has two cells that
        win in one."""
        first, second = self._sides[colour]
        near_first, near_second, touch_first, touch_second = reach
        found = []
        for x in self._order:
            if not (touch_first | touch_second) & x:
                continue  # a cell that touches neither chain adds no winning cell
            joined = stones | x
            new_first = self._flood(joined, near_first | x) if touch_first & x else near_first
            new_second = self._flood(joined, near_second | x) if touch_second & x else near_second
            winning = (
                (self._neighbours(new_first) | first)
                & (self._neighbours(new_second) | second)
                & empty
                & ~x
            )
            if winning & (winning - 1):
                found.append((x, winning))
        return found

    def _turn(self, x: int) -> int:
        """The half turn of a bitboard (bit i to bit width - 1 - i)."""
        return int(format(x, f"0{self._width}b")[::-1], 2)

    # The search.

    def _solve(self, mover: int, other: int, colour: int) -> tuple[bool, int]:
        """(whether the mover wins, the proof: the empty cells the winner needs), with the
        mover's stones, the other's and the mover's colour (0 Black, 1 White)."""
        key = mover | other << self._shift | colour << (2 * self._shift)
        found = self._table.get(key)
        if found is not None:
            return bool(found & 1), found >> 1
        turned = self._turn(mover) | self._turn(other) << self._shift | colour << (2 * self._shift)
        found = self._table.get(turned)
        if found is not None:
            return bool(found & 1), self._turn(found >> 1)
        if len(self._table) >= self.max_entries:
            self._table.clear()
        self.searched += 1
        won, proof = self._search(mover, other, colour)
        self._table[key] = proof << 1 | won
        return won, proof

    def _search(self, mover: int, other: int, colour: int) -> tuple[bool, int]:
        empty = self._mask & ~(mover | other)
        mine = self._reach(mover, empty, colour)
        winning = mine[2] & mine[3]
        if winning:
            return True, winning & -winning
        theirs = self._reach(other, empty, 1 - colour)
        threats = theirs[2] & theirs[3]
        if threats & (threats - 1):
            return False, threats  # two cells that win for the opponent: one stays
        if threats:
            must, proof = threats, threats
        else:
            for x, cells in self._wins_in_two(mover, empty, colour, mine):
                return True, cells | x
            must, proof = empty, 0
            for x, cells in self._wins_in_two(other, empty, 1 - colour, theirs):
                carrier = cells | x
                if must & ~carrier:
                    must &= carrier
                    proof |= carrier
                    if not must:
                        return False, proof
        for move in self._order:
            if not must & move:
                continue
            won, child = self._solve(other, mover | move, 1 - colour)
            if not won:
                return True, child | move
            must &= child  # the moves outside the proof lose to the same strategy
            proof |= child | move
        return False, proof

    # The interface, on azjax's boards and states.

    def wins(self, board, player: int) -> bool:
        """Whether `player` (0 Black, 1 White), to move on `board` ([n*n] azjax cells, a
        game that has not ended), wins with perfect play (no swap left to play)."""
        black, white = self._bits(board)
        mover, other = (black, white) if player == 0 else (white, black)
        return self._solve(mover, other, player)[0]

    def _swapped_wins(self, board) -> bool:
        """Whether White wins by the swap on `board` (Black's one stone)."""
        cell = int(np.flatnonzero(np.asarray(board).reshape(-1))[0])
        row, column = divmod(cell, self.size)
        turned = np.zeros(self.size * self.size, np.int8)
        turned[column * self.size + row] = -1
        return not self.wins(turned, 0)

    def outcomes(self, state: State) -> dict[int, int]:
        """{action: +1 if it wins for the mover, -1 if it loses} over the legal actions of
        an unbatched azjax Hex state that has not ended (the swap, action n*n, included
        where legal; under the swap rule Black's first move is answered by the better of
        White's moves and the swap)."""
        return {action: 1 if self._wins_by(state, action) else -1 for action in self._legal(state)}

    def best(self, state: State) -> int:
        """A winning action of the mover (the swap first, then the cell nearest the centre),
        or where none wins the legal cell nearest the centre; it stops at the first win."""
        legal = self._legal(state)
        return next((action for action in legal if self._wins_by(state, action)), legal[0])

    def _legal(self, state: State) -> list[int]:
        """The legal actions of `state`, the swap first, then the cells nearest the centre."""
        mask = np.asarray(state.legal_action_mask)
        order = [self.size * self.size, *self._cells_by_centre()]
        return [action for action in order if action < mask.size and mask[action]]

    def _wins_by(self, state: State, action: int) -> bool:
        """Whether the legal `action` wins for the mover of `state`."""
        board = np.asarray(state.board).reshape(-1)
        swap_rule = np.asarray(state.legal_action_mask).size > board.size
        if action == board.size:
            return self._swapped_wins(board)
        if not board.any():  # a winning opening loses to the swap: every one loses
            return action in OPENINGS[self.size] and not swap_rule
        player = int(state.current_player)
        child = board.copy()
        child[action] = 1 - 2 * player
        return not self.wins(child, 1 - player)

    def _cells_by_centre(self) -> list[int]:
        bits = {bit: cell for cell, bit in enumerate(self._bit)}
        return [bits[x.bit_length() - 1] for x in self._order]
