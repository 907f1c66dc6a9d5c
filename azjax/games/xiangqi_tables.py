"""The constant tables of Xiangqi, built once at import; `xiangqi.py` is the game.

Board geometry, piece codes and the start board, the 2086 from-to move labels with their
rank flips and left-right mirror, the per-kind move slot tables and the fixed slot layout of
a side's 16 pieces, the king-safety watch tables, and the Zobrist keys. Points and labels
are seen from the player to move (see the module docstring of `xiangqi.py`). ICCS square
names (`square_name`) spell out the diagonal labels; the rest of the text is in
`azjax.games.notation.xiangqi`.
"""

import numpy as np

ROWS, FILES = 10, 9
POINTS = ROWS * FILES
OFF = POINTS  # a point off the board: reads as empty, never a destination
FILE_LETTERS = "abcdefghi"

# Piece codes: positive for the side the board is seen from, negative for the other side.
GENERAL, ADVISOR, ELEPHANT, HORSE, CHARIOT, CANNON, SOLDIER = range(1, 8)
# Per code: pieces a side may have.
_MAX_COUNT = {GENERAL: 1, ADVISOR: 2, ELEPHANT: 2, HORSE: 2, CHARIOT: 2, CANNON: 2, SOLDIER: 5}

# Horse jumps as (file step, rank step), in the order of cchess-zero's labels.
_HORSE_JUMPS = ((-2, -1), (-1, -2), (-2, 1), (1, -2), (2, -1), (-1, 2), (2, 1), (1, 2))
# The advisor and elephant diagonals, each labelled both ways, in cchess-zero's order.
_DIAGONALS = (
    "d7e8 e8f9 d0e1 e1f2 d2e1 e1f0 d9e8 e8f7 "
    "a2c4 c0e2 e2g4 g0i2 a7c9 c5e7 e7g9 g5i7 a2c0 c4e2 e2g0 g4i2 a7c5 c9e7 e7g5 g9i7"
)
_PALACE = {(row, col) for row in (7, 8, 9) for col in (3, 4, 5)}  # the mover's palace
_ADVISOR_POINTS = {(7, 3), (7, 5), (8, 4), (9, 3), (9, 5)}
_ELEPHANT_POINTS = {(5, 2), (5, 6), (7, 0), (7, 4), (7, 8), (9, 2), (9, 6)}
_ORTHOGONAL = ((-1, 0), (1, 0), (0, -1), (0, 1))  # (row step, file step): up, down, left, right
_DIAGONAL = ((-1, -1), (-1, 1), (1, -1), (1, 1))


def _start_board() -> np.ndarray:
    """[90] int8, the start position as `XiangqiState.board` (Red positive, row 0 = rank 9):
    each side's back rank, two cannons on its third rank and five soldiers on its fourth."""
    board = np.zeros((ROWS, FILES), np.int8)
    board[9] = (CHARIOT, HORSE, ELEPHANT, ADVISOR, GENERAL, ADVISOR, ELEPHANT, HORSE, CHARIOT)
    board[7, [1, 7]] = CANNON
    board[6, ::2] = SOLDIER
    board[:5] = -board[:4:-1]  # Black's half: Red's mirrored rank for rank
    return board.reshape(-1)


START_BOARD = _start_board()
# The pieces a handicap start may take off (`Xiangqi.handicap_init`): all but the generals and
# the two centre soldiers, which keep the generals from facing each other.
HANDICAP_REMOVABLE = (START_BOARD != 0) & (np.abs(START_BOARD) != GENERAL)
HANDICAP_REMOVABLE[[3 * FILES + 4, 6 * FILES + 4]] = False


def _point(row: int, col: int) -> int:
    return row * FILES + col if 0 <= row < ROWS and 0 <= col < FILES else OFF


def square_name(point: int) -> str:
    """ICCS name of a point seen from Red: file letter, then rank 0-9 from Red's side."""
    row, col = divmod(point, FILES)
    return f"{FILE_LETTERS[col]}{ROWS - 1 - row}"


def _parse_square(name: str) -> int:
    return _point(ROWS - 1 - int(name[1]), FILE_LETTERS.index(name[0]))


def _label_moves() -> np.ndarray:
    """[A, 2] int32 (from, to) points of every label, in cchess-zero's order: per origin
    (files a-i, ranks 0-9 within a file) the points along its rank, along its file and a
    horse jump away; then the advisor and elephant diagonals."""
    moves = []
    for col in range(FILES):
        for rank in range(ROWS):
            targets = [(c, rank) for c in range(FILES)] + [(col, r) for r in range(ROWS)]
            targets += [(col + df, rank + dr) for df, dr in _HORSE_JUMPS]
            origin = _point(ROWS - 1 - rank, col)
            for c, r in targets:
                target = _point(ROWS - 1 - r, c)
                if (c, r) != (col, rank) and target != OFF:
                    moves.append((origin, target))
    for name in _DIAGONALS.split():
        a, b = _parse_square(name[:2]), _parse_square(name[2:])
        moves += [(a, b), (b, a)]
    return np.asarray(moves, np.int32)


LABELS = _label_moves()  # [A, 2] (from, to), from the mover's view
NUM_ACTIONS = len(LABELS)  # 2086
_LABEL_OF = {(int(a), int(b)): i for i, (a, b) in enumerate(LABELS)}
_RANK_FLIP = np.arange(POINTS).reshape(ROWS, FILES)[::-1].reshape(-1)  # point -> mirrored rank
_FILE_FLIP = np.arange(POINTS).reshape(ROWS, FILES)[:, ::-1].reshape(-1)  # point -> mirrored file
# [2, A, 2] int32: (from, to) on the board as it stands, per player to move.
_MOVE_POINTS = np.stack([LABELS, _RANK_FLIP[LABELS]]).astype(np.int32)
_MIRROR_LABELS = np.asarray([_LABEL_OF[(int(a), int(b))] for a, b in _FILE_FLIP[LABELS]], np.int32)


# Slot fields: label, destination, blocking point (must be empty), and the two prefix-count
# indices whose difference counts the pieces strictly between origin and destination.
_PREFIX_ZERO = 2 * POINTS  # index of a zero in the prefix vector [181]
_NO_SLOT = (NUM_ACTIONS, OFF, OFF, _PREFIX_ZERO, _PREFIX_ZERO)


def _slot_table(width: int, moves_from) -> np.ndarray:
    """[91, width, 5] int32: the move slots of a piece kind from each point (row 90: none).

    `moves_from(row, col)` lists (destination point, blocking point, hi, lo) per move.
    """
    table = np.tile(np.int32(_NO_SLOT), (POINTS + 1, width, 1))
    for origin in range(POINTS):
        for i, (target, block, hi, lo) in enumerate(moves_from(*divmod(origin, FILES))):
            table[origin, i] = (_LABEL_OF[(origin, target)], target, block, hi, lo)
    return table


def _steps(row, col, steps, allowed):
    return [
        (_point(row + dr, col + dc), OFF, _PREFIX_ZERO, _PREFIX_ZERO)
        for dr, dc in steps
        if (row, col) in allowed and (row + dr, col + dc) in allowed
    ]


def _elephant_moves(row, col):
    return [
        (_point(row + 2 * dr, col + 2 * dc), _point(row + dr, col + dc), _PREFIX_ZERO, _PREFIX_ZERO)
        for dr, dc in _DIAGONAL
        if (row, col) in _ELEPHANT_POINTS and (row + 2 * dr, col + 2 * dc) in _ELEPHANT_POINTS
    ]


def _horse_moves(row, col):
    moves = []
    for df, dr in _HORSE_JUMPS:
        d_row, d_col = -dr, df  # a rank step up is a row step down
        leg = _point(row + d_row // 2 * (abs(d_row) == 2), col + d_col // 2 * (abs(d_col) == 2))
        if _point(row + d_row, col + d_col) != OFF:
            moves.append((_point(row + d_row, col + d_col), leg, _PREFIX_ZERO, _PREFIX_ZERO))
    return moves


def _line_moves(row, col):
    # Prefix vector: [0, 90) counts along each row up to a point, [90, 180) along each file.
    moves = []
    for c in range(FILES):
        if c != col:
            lo, hi = _point(row, min(c, col)), _point(row, max(c, col) - 1)
            moves.append((_point(row, c), OFF, hi, lo))
    for r in range(ROWS):
        if r != row:
            lo, hi = _point(min(r, row), col), _point(max(r, row) - 1, col)
            moves.append((_point(r, col), OFF, POINTS + hi, POINTS + lo))
    return moves


def _soldier_moves(row, col):
    steps = [(-1, 0)] + ([(0, -1), (0, 1)] if row <= 4 else [])  # sideways once across
    return [
        (_point(row + dr, col + dc), OFF, _PREFIX_ZERO, _PREFIX_ZERO)
        for dr, dc in steps
        if _point(row + dr, col + dc) != OFF
    ]


# (code, pieces per side, [91, width, 5] slot table) per kind, in slot order.
_KINDS = (
    (GENERAL, 1, _slot_table(4, lambda r, c: _steps(r, c, _ORTHOGONAL, _PALACE))),
    (ADVISOR, 2, _slot_table(4, lambda r, c: _steps(r, c, _DIAGONAL, _ADVISOR_POINTS))),
    (ELEPHANT, 2, _slot_table(4, _elephant_moves)),
    (HORSE, 2, _slot_table(8, _horse_moves)),
    (CHARIOT, 2, _slot_table(17, _line_moves)),
    (CANNON, 2, _slot_table(17, _line_moves)),
    (SOLDIER, 5, _slot_table(3, _soldier_moves)),
)


def _slot_layout() -> tuple[np.ndarray, ...]:
    """The fixed order of a side's 16 pieces and of their 119 move slots.

    Returns:
      piece_picks: [16] int32, where each piece's point is among the points that
        `xiangqi_moves.piece_points` finds: [7 kinds x 2] lowest points, then the 3rd to
        5th soldiers.
      piece_codes: [16] int8, the code of each piece.
      table: [rows, 5] int32, the kinds' slot tables stacked (row 90 of each: no moves).
      slot_pieces: [119] int32, the piece of each slot.
      slot_rows: [119] int32 and slot_widths: [119] int32; a slot's row in `table` is
        `slot_rows + point * slot_widths` for its piece on `point`.
      cannon_slots: [119] bool.
    """
    picks, codes, tables, pieces, rows, widths, cannon = [], [], [], [], [], [], []
    offset = 0
    for code, count, table in _KINDS:
        width = table.shape[1]
        for j in range(count):
            pieces += [len(codes)] * width
            rows += [offset + i for i in range(width)]
            picks.append((code - 1) * 2 + j if j < 2 else 14 + j - 2)
            codes.append(code)
        widths += [width] * count * width
        cannon += [code == CANNON] * count * width
        tables.append(table.reshape(-1, 5))
        offset += table.shape[0] * width
    return (
        np.asarray(picks, np.int32),
        np.asarray(codes, np.int8),
        np.concatenate(tables),
        np.asarray(pieces, np.int32),
        np.asarray(rows, np.int32),
        np.asarray(widths, np.int32),
        np.asarray(cannon),
    )


_PIECE_PICKS, _PIECE_CODES, _SLOTS, _SLOT_PIECES, _SLOT_ROWS, _SLOT_WIDTHS, _CANNON_SLOTS = (
    _slot_layout()
)
_GENERAL_SLOTS = _KINDS[0][2].shape[1]  # the general's slots come first
# [119] int32, per slot the general point its king safety is judged from, as an index into
# [the general's point, the targets of the general's slots].
_SLOT_WATCH = np.concatenate(
    [np.arange(1, _GENERAL_SLOTS + 1), np.zeros(len(_SLOT_PIECES) - _GENERAL_SLOTS, int)]
)


def _watch_tables() -> tuple[np.ndarray, np.ndarray]:
    """The points that can attack a general on each point, and how a point enters them.

    Returns:
      points: [91, 55] int32 per general point: 4 rays x 9 steps (up, down, left, right),
        8 horse points, the 8 legs of those horses, 3 soldier points (ahead, left, right;
        sideways only on the opponent's half); OFF where none.
      masks: [91 * 91, 7] int32, row `general * 91 + point`: the bits `point` holds in the
        four ray words (bit = step), the horse word, the leg word and the soldier word.
    """
    points = np.full((POINTS + 1, 55), OFF, np.int32)
    masks = np.zeros((POINTS + 1, POINTS + 1, 7), np.int32)
    for general in range(POINTS):
        row, col = divmod(general, FILES)
        watched = []  # (point, word, bit)
        for word, (dr, dc) in enumerate(_ORTHOGONAL):
            watched += [(_point(row + dr * s, col + dc * s), word, s - 1) for s in range(1, 10)]
        horses, legs = [], []
        for i, (df, dr) in enumerate(_HORSE_JUMPS):
            h_row, h_col = row + dr, col - df  # the horse jumps (df, dr) onto the general
            leg_row = h_row - dr // 2 * (abs(dr) == 2)
            leg_col = h_col + df // 2 * (abs(df) == 2)
            on_board = _point(h_row, h_col) != OFF
            horses.append((_point(h_row, h_col), 4, i))
            legs.append((_point(leg_row, leg_col) if on_board else OFF, 5, i))
        watched += horses + legs
        watched.append((_point(row - 1, col), 6, 0))
        for j, dc in ((1, -1), (2, 1)):
            watched.append((_point(row, col + dc) if row >= 5 else OFF, 6, j))
        for slot, (point, word, bit) in enumerate(watched):
            points[general, slot] = point
            if point != OFF:
                masks[general, point, word] |= 1 << bit
    return points, masks.reshape(-1, 7)


_WATCH_POINTS, _WATCH_MASKS = _watch_tables()


def _zobrist_keys() -> tuple[np.ndarray, np.ndarray]:
    """64-bit Zobrist keys as uint32 pairs: [90 * 15, 2] per (point, code + 7), zero for
    an empty point, and [2] for Black to move."""
    keys = np.random.default_rng(20240601).integers(0, 2**32, (POINTS, 15, 2), dtype=np.uint32)
    keys[:, 7] = 0
    side = np.random.default_rng(7).integers(0, 2**32, 2, dtype=np.uint32)
    return keys.reshape(-1, 2), side


_ZOBRIST, _ZOBRIST_SIDE = _zobrist_keys()
