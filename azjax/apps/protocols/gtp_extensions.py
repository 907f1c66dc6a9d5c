"""The GTP commands that Go GUIs and servers use beyond the core of `gtp.py`, mixed into
its `Engine` (`ExtensionCommands`):

- The analysis commands `lz-analyze`, `kata-analyze`, `genmove_analyze`, `lz-genmove_analyze`
  and `kata-genmove_analyze` (their arguments, searches and output: `gtp_analysis`).
- `kgs-time_settings` (accepted; the search is fixed by the engine's simulations).
- Handicap: `fixed_handicap N`, `place_free_handicap N`, `set_free_handicap V...`.
- `loadsgf FILE [MOVE_NUMBER]`, `final_status_list alive|dead|seki`, `kgs-genmove_cleanup C`.

Handicap stones are setup stones (`Go.setup`) and White moves next. `place_free_handicap`
places GTP's fixed points where the board has them, then the network's favourite points;
like KataGo it places at most a quarter of the points (30 at most).

`final_status_list` calls every stone alive (seki and dead list nothing), as Leela Zero does:
our games are scored by Tromp-Taylor area counting (`final_score`), where every stone on the
board counts, so a controller that removed stones we called dead would score another game
than the one our network learned. `kgs-genmove_cleanup` captures dead stones by play: it is
genmove, except that where the search passes it plays the most visited legal move that fills
no eye of its own (Leela Zero's NOPASS, `UCTNode::get_nopass_child`), and passes only when no
such move is left.
"""

from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from azjax.apps.protocols.gtp_analysis import format_info, parse_request, stream_analysis
from azjax.apps.protocols.gtp_io import GtpError, Streaming, integer, integers
from azjax.games import State
from azjax.games.records import sgf_parse

COMMANDS = (
    "kgs-time_settings",
    "fixed_handicap",
    "place_free_handicap",
    "set_free_handicap",
    "loadsgf",
    "final_status_list",
    "kgs-genmove_cleanup",
    "lz-analyze",
    "kata-analyze",
    "genmove_analyze",
    "lz-genmove_analyze",
    "kata-genmove_analyze",
)
_MAX_SGF_BYTES = 16 << 20
_GAME_FIELDS = ("_states", "_moves", "_comments", "_setup", "_date")  # a game in progress


def fixed_handicap_points(size: int, count: int) -> list[int] | None:
    """GTP's fixed handicap placement (GTP 2 specification, section 4.1.1, as KataGo's
    `PlayUtils::placeFixedHandicap`): points row-major from the top-left, or None where the
    board has no such placement (below 7x7, more than 4 stones on even or 7x7 boards, fewer
    than 2 or more than 9 stones)."""
    if size < 7 or not 2 <= count <= 9 or (count > 4 and (size % 2 == 0 or size == 7)):
        return None
    edge = 2 if size <= 12 else 3
    lines = (edge, size - 1 - edge, size // 2)  # near corner, far corner, middle
    corners = [(0, 1), (1, 0), (0, 0), (1, 1)]  # (column, row from the top) indices
    sides = {5: [(2, 2)], 6: [(0, 2), (1, 2)], 7: [(0, 2), (1, 2), (2, 2)]}
    sides |= {8: [(0, 2), (1, 2), (2, 0), (2, 1)], 9: [(0, 2), (1, 2), (2, 0), (2, 1), (2, 2)]}
    pairs = corners[:count] + sides.get(count, [])
    return [lines[row] * size + lines[column] for column, row in pairs]


def is_eye(board: np.ndarray, point: int, colour: int, size: int) -> bool:
    """Whether empty `point` is an eye of `colour` (+1 black, -1 white) on `board` [N]: all
    its neighbours are that colour's stones (or the edge) and at most one diagonal point is
    the opponent's, none on the edge (Leela Zero's `FastBoard::is_eye`)."""
    row, column = divmod(point, size)

    def on_board(r, c):
        return 0 <= r < size and 0 <= c < size

    for r, c in ((row - 1, column), (row + 1, column), (row, column - 1), (row, column + 1)):
        if on_board(r, c) and board[r * size + c] != colour:
            return False
    diagonals = [(row + dr, column + dc) for dr in (-1, 1) for dc in (-1, 1)]
    stones = [board[r * size + c] for r, c in diagonals if on_board(r, c)]
    opponents = sum(stone == -colour for stone in stones)
    return opponents == 0 if len(stones) < 4 else opponents < 2


def cleanup_action(state: State, action: int, weights: np.ndarray, size: int) -> int:
    """kgs-genmove_cleanup's move: `action`, but instead of a pass the legal move with the
    largest search weight (`weights` [A]) that fills no eye of the mover's, where there is one."""
    num_points = size * size
    if action != num_points:
        return action
    board, legal = np.asarray(state.board), np.asarray(state.legal_action_mask)
    colour = 1 - 2 * int(state.current_player)
    for candidate in np.argsort(-np.asarray(weights), kind="stable").tolist():
        if (
            candidate < num_points
            and legal[candidate]
            and not is_eye(board, candidate, colour, size)
        ):
            return candidate
    return action


class ExtensionCommands:
    """The commands of this module, mixed into `gtp.Engine`, whose game bookkeeping they use:
    `game`, `size`, `agent`, `state`, `_step`, `_key`, `_analyzer`, the game in progress
    (`_GAME_FIELDS`), `_name`, `_vertex`, `_align`, `_push`, `_new_game`, `_finish_move`,
    `_generate`, `_set_komi` and `save_game`."""

    def _cmd_kgs_time_settings(self, system, *values):
        if system not in ("none", "absolute", "byoyomi", "canadian"):
            raise GtpError("syntax error")
        integers(*values)
        return ""

    def _board_is_empty(self) -> bool:
        return not self._moves and not bool(jnp.any(self.state.board != 0))

    def _place_handicap(self, points: list[int]) -> str:
        board = np.zeros(self.size * self.size, np.int8)
        board[points] = 1
        self._new_game(setup=board, first_player=1)
        return " ".join(self._name(point) for point in points)

    def _cmd_fixed_handicap(self, count):
        points = fixed_handicap_points(self.size, integer(count, "invalid number of stones"))
        if points is None:
            raise GtpError("invalid number of stones")
        if not self._board_is_empty():
            raise GtpError("board not empty")
        return self._place_handicap(points)

    def _cmd_place_free_handicap(self, count):
        count, num_points = integer(count, "invalid number of stones"), self.size * self.size
        if not 2 <= count < num_points:
            raise GtpError("invalid number of stones")
        if not self._board_is_empty():
            raise GtpError("board not empty")
        count = min(count, max(2, min(num_points // 4, 30)))
        fixed = (fixed_handicap_points(self.size, n) for n in range(min(count, 9), 1, -1))
        points = next((found for found in fixed if found is not None), [])
        while len(points) < count:  # the network's favourite point for black, one by one
            board = np.zeros(num_points, np.int8)
            board[points] = 1
            states = jax.tree.map(lambda x: x[None], self.game.setup(board, 0))
            logits, _ = self.agent.policy_value(states)
            legal = np.asarray(states.legal_action_mask[0, :num_points])
            points.append(
                int(np.argmax(np.where(legal, np.asarray(logits[0, :num_points]), -np.inf)))
            )
        return self._place_handicap(points)

    def _cmd_set_free_handicap(self, *vertices):
        points = [self._vertex(vertex) for vertex in vertices]
        num_points = self.size * self.size
        if not 2 <= len(set(points)) == len(points) < num_points or num_points in points:
            raise GtpError("bad vertex list")
        if not self._board_is_empty():
            raise GtpError("board not empty")
        self._place_handicap(points)
        return ""

    def _cmd_loadsgf(self, path, *move_number):
        if len(move_number) > 1:
            raise GtpError("syntax error")
        limit = integer(move_number[0]) - 1 if move_number else None
        if limit is not None and limit < 0:
            raise GtpError("move number must be at least 1")
        try:
            if Path(path).exists() and not Path(path).is_file():  # a FIFO would block the engine
                raise GtpError("cannot load file: not a regular file")
            with Path(path).open("rb") as file:
                data = file.read(_MAX_SGF_BYTES + 1)
            if len(data) > _MAX_SGF_BYTES:
                raise GtpError(f"cannot load file: larger than {_MAX_SGF_BYTES} bytes")
            record = sgf_parse.parse_game(data.decode("utf-8", errors="replace"))
        except (OSError, ValueError) as error:  # ValueError: SgfError, or a NUL in the path
            reason = getattr(error, "strerror", None) or str(error)
            raise GtpError(f"cannot load file: {reason}") from None
        if record.size != self.size:
            raise GtpError(f"cannot load file: the game is {record.size}x{record.size}")
        if record.komi is not None and not abs(record.komi) <= self.size * self.size:
            raise GtpError(f"cannot load file: komi {record.komi:g} is out of range")
        previous = self._game_in_progress()
        self._new_game(record.setup, record.first_player, date=record.date)
        try:
            for number, (player, action) in enumerate(record.moves[:limit], 1):
                self._replay(number, player, action)
        except GtpError:
            self._install_game(previous)
            raise
        loaded = self._game_in_progress()
        self._install_game(previous)
        self.save_game()
        self._install_game(loaded)
        if record.komi is not None:
            self._set_komi(record.komi)
        return ""

    def _replay(self, number: int, player: int, action: int) -> None:
        """Plays move `number` of a loaded game (a pass inserted where one colour moves
        twice, as `play` does)."""
        try:
            if bool(self.state.terminated):
                raise GtpError("the game has ended")
            self._align(player)
            if not bool(self.state.legal_action_mask[action]):
                raise GtpError("illegal move")
        except GtpError as error:
            raise GtpError(f"cannot load file: move {number}: {error}") from None
        self._push(action)

    def _game_in_progress(self) -> tuple:
        return tuple(getattr(self, field) for field in _GAME_FIELDS)

    def _install_game(self, game: tuple) -> None:
        for field, value in zip(_GAME_FIELDS, game, strict=True):
            setattr(self, field, value)

    def _cmd_final_status_list(self, status):
        if status.lower() not in ("alive", "dead", "seki"):
            raise GtpError("syntax error")
        if status.lower() != "alive":
            return ""
        board, chain = jax.device_get((self.state.board, self.state.chain))
        chains: dict[int, list[int]] = {}
        for point in np.flatnonzero(board).tolist():
            chains.setdefault(int(chain[point]), []).append(point)
        return "\n".join(" ".join(map(self._name, stones)) for stones in chains.values())

    def _cmd_kgs_genmove_cleanup(self, color):
        return self._generate(color, play=True, cleanup=True)

    def _analysis_state(self, color: int | None) -> State:
        """The position to analyse for `color`: the current one, after a pass where the
        other colour is to move."""
        state = self.state
        if color is None or color == int(state.current_player) or bool(state.terminated):
            return state
        if self._moves and self._moves[-1] == self.size * self.size:
            raise GtpError("cannot analyze for that color: a pass of the other would end the game")
        return self._step(state, jnp.int32(self.size * self.size))

    def _analyze(self, command: str, args: Sequence[str]) -> Streaming:
        request = parse_request(command, args)
        state = self._analysis_state(request.color)
        self._key, key = jax.random.split(self._key)
        analyzer, variables, name = self._analyzer, self.agent.variables, self._name
        return Streaming(
            lambda emit, wait: stream_analysis(
                analyzer, variables, state, key, request, name, emit, wait
            )
        )

    def _genmove_analyze(self, command: str, args: Sequence[str]) -> Streaming:
        request = parse_request(command, args)
        color = int(self.state.current_player) if request.color is None else request.color
        lines = []
        if bool(self.state.terminated):
            move = "pass"
        else:
            played = len(self._moves)
            self._align(color)
            self._key, key = jax.random.split(self._key)
            simulations, variables = self.agent.num_simulations, self.agent.variables
            snapshot = self._analyzer.submit(simulations, variables, self.state, key).result()
            if request.interval:
                lines.append(format_info(snapshot, request, self._name))
            move = self._finish_move(played, int(snapshot.action), float(snapshot.value))

        def run(emit, wait):
            for line in lines:
                emit(line)
            return f"play {move}\n\n"

        return Streaming(run)

    def _cmd_lz_analyze(self, *args):
        return self._analyze("lz-analyze", args)

    def _cmd_kata_analyze(self, *args):
        return self._analyze("kata-analyze", args)

    def _cmd_genmove_analyze(self, *args):
        return self._genmove_analyze("genmove_analyze", args)

    def _cmd_lz_genmove_analyze(self, *args):
        return self._genmove_analyze("lz-genmove_analyze", args)

    def _cmd_kata_genmove_analyze(self, *args):
        return self._genmove_analyze("kata-genmove_analyze", args)
