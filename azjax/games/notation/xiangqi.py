"""Xiangqi as text: FEN positions, ICCS moves ("h2e2") and the board drawn as Red sees it.

FEN reads "<board> [<side> [- - [<plies without capture> [<move number>]]]]": the board
rank by rank from rank 9 (Black's side) down to rank 0, files a-i within a rank, digits
counting empty points, Red in uppercase and Black in lowercase (K general, A advisor, B or
E elephant, N or H horse, R chariot, C cannon, P soldier). ICCS names a move by its origin
and destination as Red sees the board: a file a-i from Red's left and a rank 0-9 from Red's
side. The game's action labels are seen from the mover (ranks mirrored for Black), so
naming an action needs the state it is played in.

    state = xiangqi.from_fen(game, "4k4/9/9/9/9/9/9/9/4A4/3K5 w")
    state = game.step(state, notation.parse_action(game, "e1d2", state))
    print(xiangqi.to_fen(game, state), notation.render(game, state))
"""

import re

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games.notation.base import Notation
from azjax.games.xiangqi import Xiangqi, XiangqiState, view
from azjax.games.xiangqi_tables import (
    _ADVISOR_POINTS,
    _ELEPHANT_POINTS,
    _LABEL_OF,
    _MAX_COUNT,
    _MOVE_POINTS,
    _PALACE,
    _RANK_FLIP,
    ADVISOR,
    ELEPHANT,
    FILE_LETTERS,
    FILES,
    GENERAL,
    HORSE,
    ROWS,
    SOLDIER,
    _parse_square,
    _point,
    square_name,
)
from azjax.types import UserError

START_FEN = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1"
_FEN_LETTERS = "kabnrcp"  # FEN letter of each piece code, in code order
_FEN_ALIASES = {"h": HORSE, "e": ELEPHANT}  # also read (WXF-style letters)
_NAMES = ("general", "advisor", "elephant", "horse", "chariot", "cannon", "soldier")


def from_fen(game: Xiangqi, fen: str) -> XiangqiState:
    """Builds the position a FEN describes (host-side), with `game.setup`.

    Reads "<board> [<side> [- - [<plies without capture> [<move number>]]]]" (see the
    module docstring); the side to move "w" (or "r") for Red, "b" for Black, Red if left
    out. The plies-without-capture field starts the no-capture count; the move number is
    read and ignored (the state counts plies from this position). The position starts the
    repetition history. Counts are ASCII digits, below 10**9 (and the no-capture limit),
    checked before any array is built.

    Raises:
      UserError: the FEN is malformed, or describes a position no game can reach (piece
        counts, pieces off their points, the side not to move in check).
    """
    board, player, no_capture = _parse_fen(fen)
    if game.no_capture_limit and no_capture >= game.no_capture_limit:
        raise UserError(
            f"bad FEN {fen.strip()!r}: {no_capture} plies without a capture reach the "
            f"no-capture limit of {game.no_capture_limit}"
        )
    with jax.ensure_compile_time_eval():  # constants, also when called under a trace
        state = game.setup(board, player, no_capture)
        other_in_check = game.in_check(state.replace(current_player=1 - state.current_player))
    if other_in_check:
        raise UserError(
            f"bad FEN {fen.strip()!r}: the side not to move is in check "
            "(or the generals face each other)"
        )
    return state


def to_fen(game: Xiangqi, state: XiangqiState) -> str:
    """The FEN of an unbatched state: "<board> <w|b> - - <plies without capture> <move>",
    the move number counting from 1 at the position the game started from."""
    del game  # The state holds the whole position.
    rows = ["".join(map(_letter, row)) for row in np.asarray(state.board).reshape(ROWS, FILES)]
    ranks = [re.sub(r"\.+", lambda empty: str(len(empty[0])), row) for row in rows]
    player, plies = int(state.current_player), int(state.step_count)
    first_player = (player - plies) % 2
    move_number = 1 + (plies + first_player) // 2
    side = "wb"[player]
    return f"{'/'.join(ranks)} {side} - - {int(state.no_capture_plies)} {move_number}"


class XiangqiNotation(Notation):
    """FEN positions and ICCS moves ("h2e2", as Red sees the board) for `Xiangqi`."""

    game: Xiangqi

    def from_fen(self, fen: str) -> XiangqiState:
        """The position a FEN describes (`from_fen`)."""
        return from_fen(self.game, fen)

    def to_fen(self, state: XiangqiState) -> str:
        """The FEN of an unbatched state (`to_fen`)."""
        return to_fen(self.game, state)

    def render(self, state: XiangqiState) -> str:
        """Draws the board as Red sees it (FEN letters, '.' empty) with the ranks 9-0 on the
        left and the files a-i below, the names `parse_action` reads, then a status line."""
        board = np.asarray(state.board).reshape(ROWS, FILES)
        lines = [
            f"{ROWS - 1 - row} {' '.join(map(_letter, codes))}" for row, codes in enumerate(board)
        ]
        return "\n".join([*lines, "  " + " ".join(FILE_LETTERS), self._status(state)])

    def _status(self, state: XiangqiState) -> str:
        game = self.game
        mover, other = ("Red", "Black") if int(state.current_player) == 0 else ("Black", "Red")
        check = game.in_check(state)
        if not bool(state.terminated):
            return f"{mover} to move" + (" (in check)" if check else "")
        if not bool(jnp.any(game.legal_action_mask(state))):
            ending = "checkmated" if check else "stalemated"
            return f"{mover} is {ending}: {other} wins"
        if game.repetition_limit and int(state.repetitions) >= game.repetition_limit:
            checker = game.perpetual_checker(state)
            if checker is not None:
                loser, winner = ("Red", "Black")[checker], ("Black", "Red")[checker]
                return f"{loser} checked perpetually: {winner} wins"
            return f"draw: position repeated {int(state.repetitions)} times"
        if game.no_capture_limit and int(state.no_capture_plies) >= game.no_capture_limit:
            return f"draw: {int(state.no_capture_plies)} plies without a capture"
        return f"draw: move limit of {game.max_episode_length} plies"

    def action_to_string(self, action: int, state: XiangqiState | None = None) -> str:
        """ICCS name of a move ("h2e2") as Red sees the board. Without `state` the label is
        named as seen from the mover (which is how Red sees it)."""
        player = 0 if state is None else int(state.current_player)
        origin, target = _MOVE_POINTS[player, int(action)]
        return square_name(int(origin)) + square_name(int(target))

    def parse_action(self, text: str, state: XiangqiState) -> int:
        """Reads a move in ICCS coordinates as Red sees the board, like "h2e2" or "H2-E2".

        Raises:
          UserError: `text` is not a move in that form, the move is not legal now, or the
            game is over.
        """
        if bool(state.terminated):
            raise UserError("the game is over; no more moves can be played")
        name = text.strip()
        name = name.lower() if name.isascii() else name  # "\u212a".lower() is "k"
        match = re.fullmatch(r"([a-i][0-9])-?([a-i][0-9])", name)
        if not match:
            raise UserError(
                f"{text.strip()!r} is not a move; type ICCS coordinates as Red sees the board, "
                "a file a-i and a rank 0-9 for the origin then the destination, like h2e2"
            )
        player = int(state.current_player)
        origin, target = (
            int(_RANK_FLIP[p]) if player else p for p in map(_parse_square, match.groups())
        )
        action = _LABEL_OF.get((origin, target))
        if action is None or not bool(state.legal_action_mask[action]):
            legal = np.flatnonzero(np.asarray(state.legal_action_mask))
            moves = " ".join(sorted(self.action_to_string(a, state) for a in legal))
            raise UserError(f"move {match[1]}{match[2]} is not legal now; legal moves: {moves}")
        return action


def _letter(code: int) -> str:
    """FEN letter of a piece code (uppercase for Red), '.' for an empty point."""
    letter = "." + _FEN_LETTERS
    return letter[code].upper() if code >= 0 else letter[-code]


def _parse_fen(fen: str) -> tuple[np.ndarray, int, int]:
    """Reads a FEN into (board [90] int8 as `XiangqiState.board`, player, plies without a
    capture), checking the piece counts and points (the check rule needs the game: see
    `from_fen`)."""

    def fail(reason: str):
        raise UserError(f"bad FEN {_shorten(fen.strip(), 120)!r}: {reason}")

    fields = fen.split()
    if not 1 <= len(fields) <= 6:
        fail("expected '<board> <side> - - <plies without capture> <move number>'")
    ranks = fields[0].split("/")
    if len(ranks) != ROWS:
        fail(f"expected 10 ranks separated by '/', got {len(ranks)}")
    board = np.zeros((ROWS, FILES), np.int8)
    for row, rank in enumerate(ranks):
        col = 0
        for char in rank:
            if char in "123456789":
                col += int(char)
                continue
            lower = char.lower() if char.isascii() else ""  # "\u212a".lower() is "k"
            code = (_FEN_ALIASES.get(lower) or _FEN_LETTERS.find(lower) + 1) if lower else 0
            if not code:
                fail(f"unknown piece letter {ascii(char)} (use KABNRCP, lowercase for Black)")
            if col < FILES:
                board[row, col] = code if char.isupper() else -code
            col += 1
        if col != FILES:
            fail(f"rank {ROWS - 1 - row} ({rank!r}) covers {col} files instead of 9")
    side = fields[1].lower() if len(fields) > 1 else "w"
    if side not in ("w", "r", "b"):
        fail(f"side to move must be 'w' (Red) or 'b' (Black), got {fields[1]!r}")
    player = int(side == "b")
    if any(field != "-" for field in fields[2:4]):
        fail("xiangqi has no castling or en passant: fields 3 and 4 must be '-'")
    counters = fields[4:]
    for field in counters:  # ASCII digits: str.isdigit also takes "²", which int() refuses
        if not _COUNT.fullmatch(field):
            fail("the plies without capture and the move number must be whole numbers")
        if len(field.lstrip("0")) > _COUNT_DIGITS:
            fail(f"{_shorten(field)} is too large for a count (at most {_COUNT_DIGITS} digits)")
    if len(counters) == 2 and not counters[1].strip("0"):
        fail("the move number starts at 1")
    board = board.reshape(-1)
    for side in (0, 1):
        _check_placement(np.asarray(view(jnp.asarray(board), side)), side, fail)
    return board, player, int(counters[0]) if counters else 0


_COUNT = re.compile("[0-9]+")  # ASCII digits only: a str pattern's [0-9] is not \d
_COUNT_DIGITS = 9  # counts below 10**9: int32 with room for the plies of any game


def _shorten(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_placement(board: np.ndarray, player: int, fail) -> None:
    """Fails unless the pieces of `player` (positive, on a board seen from that player) are
    within their counts and on points they can reach."""
    colour = ("Red", "Black")[player]
    reachable = {
        GENERAL: _PALACE,
        ADVISOR: _ADVISOR_POINTS,
        ELEPHANT: _ELEPHANT_POINTS,
        # Soldiers never step back; before the river they only advance on their files.
        SOLDIER: {(r, c) for r in range(5) for c in range(FILES)}
        | {(r, c) for r in (5, 6) for c in range(0, FILES, 2)},
    }
    for code, most in _MAX_COUNT.items():
        points = [divmod(int(p), FILES) for p in np.flatnonzero(board == code)]
        name = _NAMES[code - 1]
        if code == GENERAL and len(points) != 1:
            fail(f"{colour} has {len(points)} generals instead of one")
        if len(points) > most:
            fail(f"{colour} has {len(points)} {name}s, at most {most} allowed")
        for row, col in points:
            if code in reachable and (row, col) not in reachable[code]:
                point = _point(row, col)
                square = square_name(_RANK_FLIP[point] if player else point)
                fail(f"a {colour} {name} cannot stand on {square}")


NOTATION = XiangqiNotation  # what `azjax.games.notation.of` finds for this game
