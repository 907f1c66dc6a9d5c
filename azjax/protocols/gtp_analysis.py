"""The GTP commands that Go GUIs and servers use beyond the core of `gtp.py`.

- Analysis as Leela Zero and KataGo stream it, for the analysis views of Sabaki and Lizzie:
  `lz-analyze` and `kata-analyze [color] [interval] [interval N] [minmoves N] [maxmoves N]
  [pvVisits B] [pvEdgeVisits B] ...`, and `genmove_analyze`, `lz-genmove_analyze`,
  `kata-genmove_analyze` with the same arguments.
- `kgs-time_settings` (accepted; the search is fixed by the engine's simulations).
- Handicap: `fixed_handicap N`, `place_free_handicap N`, `set_free_handicap V...`.
- `loadsgf FILE [MOVE_NUMBER]`, `final_status_list alive|dead|seki`, `kgs-genmove_cleanup C`.

An analysis answers `=` (with the command's id) on a line of its own, then a line of `info`
blocks every `interval` centiseconds (none without an interval), and ends with an empty line
when the next input line arrives, which is then answered as usual (Leela Zero's
`UCTSearch::ponder`, KataGo's `GTPEngine::analyze` and its command loop). A genmove variant
prints the info line of its search, then `play MOVE` and the empty line. One line holds a
block per root move, best first, joined by spaces:

    lz-analyze (Leela Zero, UCTSearch.cpp, OutputAnalysisData::get_info_string):
    info move D4 visits 5 winrate 5123 prior 1234 lcb 4567 order 0 pv D4 Q16 info move ...
    kata-analyze (KataGo, command/gtp.cpp, getAnalyzeCallback):
    info move D4 visits 5 utility 0.0246000 winrate 0.512300 prior 0.123400 lcb 0.456700
        order 0 pv D4 Q16 [pvVisits 5 3] [pvEdgeVisits 5 3] info move ...

Leela Zero's numbers are integers in units of 1/10000, truncated as its `static_cast<int>`
does; KataGo's are floats with six significant digits and always a decimal point (C++'s
`std::showpoint`, which KataGo keeps for Sabaki, whose parser reads a win rate without one
as Leela Zero's integer). The fields:

- visits: the move's visits; winrate: its searched value for the player analysed, as a win
  rate in [0, 1] (draws count half); utility (KataGo): the same value in [-1, 1]. A move
  without visits (listed only for `minmoves`) shows win rate 0 as Leela Zero does, and under
  KataGo the root's searched value, the value the search gives unvisited moves (KataGo shows
  its first-play value).
- prior: the network's prior; order: 0 for the move the search chooses (genmove's), then by
  visits, win rate and prior.
- lcb: an estimate of a lower confidence bound of the win rate: p - 1.96 sqrt(p (1 - p) / n)
  for win rate p after n visits, p (1 - p) being the largest variance a value in [0, 1] with
  mean p can have; 0 below 2 visits (as Leela Zero prints it). Our search keeps no variance
  of the values.
- pv: the move, then the most visited child repeatedly, until a node without visited
  children or one that ends the game (Leela Zero's `UCTSearch::get_pv`); pvVisits and
  pvEdgeVisits: the visits along it (the same numbers in a tree).

We have no score or ownership head, so KataGo's scoreMean, scoreLead, scoreStdev and
ownership are not printed; its ownership, ownershipStdev, movesOwnership, rootInfo and
noResultValue flags are accepted and ignored. avoid and allow are refused.

What is reported: an analysis runs searches of a small fixed set of simulation counts, one
after the other (`analysis_simulations`: by default S, 2S, 4S, 8S and 16S, at most 4096
unless S is larger, S the engine's simulations per move), each count compiled once, in worker
threads, so that the engine reads its input while they run. Every line reports the latest
finished search: each is a fresh search with more simulations, nothing is added up across
searches (they are deterministic without root noise, so added up they would repeat one
search). The first search always finishes, so every analysis reports (Leela Zero posts at
least once); without an interval it is the only one. Once the largest search is reported
nothing more is printed until the next line. A search still running when the next line
arrives is not reported; it finishes in the background (after `quit` the process exits once
it has).

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

import concurrent.futures
import dataclasses
import functools
import math
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO, NamedTuple, TextIO

import jax
import jax.numpy as jnp
import numpy as np

from azjax import build
from azjax.games import Game, State
from azjax.protocols import sgf
from azjax.search import make_search, network_evaluator

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
COLORS = {"b": 0, "black": 0, "w": 1, "white": 1}
# GTP numbers in ASCII only: integers (at most 18 digits) and floats (komi, intervals).
INTEGER = re.compile(r"-?[0-9]{1,18}")
FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_TAGS_ERROR = "cannot parse analyze tags"  # Leela Zero's answer to bad analyze arguments
_IGNORED_FLAGS = ("ownership", "ownershipStdev", "movesOwnership", "movesOwnershipStdev")
_IGNORED_FLAGS += ("rootInfo", "noResultValue")
_BOOLEANS = {"true": True, "false": False, "1": True, "0": False}
_MAX_INTERVAL = 1e8  # centiseconds, about 11 days
_MAX_ANALYSIS_SIMULATIONS = 4096  # beyond the engine's own, the largest analysis search
_MAX_SGF_BYTES = 16 << 20
_GAME_FIELDS = ("_states", "_moves", "_comments", "_setup", "_date")  # a game in progress


class GtpError(Exception):
    """A command failed; the message is the GTP error response."""


def integer(text: str, message: str = "syntax error") -> int:
    """A GTP integer in ASCII digits (str.isdigit would take "²" and "١"), else GtpError."""
    if not INTEGER.fullmatch(text):
        raise GtpError(message)
    return int(text)


def integers(*values: str) -> None:
    """Checks that every value is a GTP integer (else GtpError)."""
    for value in values:
        integer(value)


class Streaming:
    """A response written while it is computed. After the `=` line, `run(emit, wait)` writes
    lines with `emit` and returns the rest of the response; `wait(timeout)` blocks at most
    `timeout` seconds (None: without limit) and says whether the next input line is there."""

    def __init__(self, run: Callable[[Callable[[str], None], Callable], str]):
        self.run = run

    def finish(self, command_id: str, emit: Callable | None, wait: Callable | None) -> str:
        """Writes the `=` line and runs; returns what is left to write (without `emit`, the
        whole response, stopped as though the next line were there)."""
        chunks: list[str] = []
        emit = emit or chunks.append
        emit(f"={command_id}\n")
        try:
            rest = self.run(emit, wait or (lambda timeout: True))
        except Exception:  # after the "=" line a response can only end
            traceback.print_exc(file=sys.stderr)
            rest = "\n"
        return "".join(chunks) + rest


class LineReader:
    """GTP input lines, decoded as UTF-8 with undecodable bytes replaced.

    Lines are read in the caller's thread and never ahead of need (after `quit` the rest of
    the input stays unread), except while a response streams: `wait` then reads the next
    line in a helper thread, so that an analysis notices it without blocking on the input.
    """

    def __init__(self, stdin: BinaryIO | TextIO):
        self._stream = getattr(stdin, "buffer", stdin)
        self._reader: threading.Thread | None = None
        self._line: bytes | str | None = None

    def _read(self) -> None:
        self._line = self._stream.readline()

    def wait(self, timeout: float | None) -> bool:
        if self._reader is None:
            self._reader = threading.Thread(target=self._read, daemon=True)
            self._reader.start()
        self._reader.join(timeout)
        return not self._reader.is_alive()

    def readline(self) -> str | None:
        """The next line, or None at the end of the input."""
        if self._reader is None:
            self._read()
        else:
            self._reader.join()
            self._reader = None
        line, self._line = self._line, None
        if not line:
            return None
        return line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line


def write(stdout: TextIO, text: str) -> None:
    """Writes response text as UTF-8 (to `stdout.buffer` where there is one, so that a
    stdout with a narrower encoding cannot fail on a response that echoes the input)."""
    binary = getattr(stdout, "buffer", None)
    if binary is None:
        stdout.write(text)
        stdout.flush()
        return
    stdout.flush()
    binary.write(text.encode("utf-8", errors="replace"))
    binary.flush()


@dataclasses.dataclass(frozen=True)
class AnalyzeRequest:
    """The arguments of an analysis command."""

    kata: bool  # KataGo's fields and number format, else Leela Zero's
    color: int | None  # the player to analyse for, 0 black or 1 white; None: the one to move
    interval: float  # seconds between reports; 0: none
    min_moves: int  # list at least this many moves, with or without visits
    max_moves: int  # list at most this many moves
    pv_visits: bool  # KataGo's pvVisits
    pv_edge_visits: bool  # KataGo's pvEdgeVisits


def parse_request(command: str, args: Sequence[str]) -> AnalyzeRequest:
    """Reads analysis arguments as Leela Zero and KataGo do (`AnalyzeTags::AnalyzeTags`,
    `parseAnalyzeCommand`): a colour and an interval (a number, in centiseconds) anywhere,
    and keys with values; a key without value or an unknown key is an error."""
    kata = not command.startswith("lz-")
    color, words = None, list(args)
    options = {"interval": 0.0, "minmoves": 0, "maxmoves": 1 << 30}
    options |= {"pvVisits": False, "pvEdgeVisits": False}
    while words:
        key = words.pop(0)
        if key.lower() in COLORS:
            color = COLORS[key.lower()]
            continue
        if FLOAT.fullmatch(key):
            key, words = "interval", [key, *words]
        if not words:
            raise GtpError(_TAGS_ERROR)
        value = words.pop(0)
        if key == "interval" and FLOAT.fullmatch(value) and 0 <= float(value) <= _MAX_INTERVAL:
            options[key] = float(value) / 100
        elif key in ("minmoves", "maxmoves") and INTEGER.fullmatch(value) and int(value) >= 0:
            options[key] = int(value)
        elif kata and key in (*_IGNORED_FLAGS, "pvVisits", "pvEdgeVisits"):
            if value.lower() not in _BOOLEANS:
                raise GtpError(_TAGS_ERROR)
            options[key] = _BOOLEANS[value.lower()]
        else:
            raise GtpError(_TAGS_ERROR)
    return AnalyzeRequest(
        kata=kata,
        color=color,
        interval=options["interval"],
        min_moves=options["minmoves"],
        max_moves=options["maxmoves"],
        pv_visits=options["pvVisits"],
        pv_edge_visits=options["pvEdgeVisits"],
    )


class RootSnapshot(NamedTuple):
    """What one analysis search found (A actions, N = simulations + 1 nodes, row 0 the root);
    numpy arrays once `Analyzer` has fetched them."""

    action: jax.Array  # [] int32, the move the search chooses (genmove's)
    value: jax.Array  # [] float32, the searched value of the root for the player to move
    legal: jax.Array  # [A] bool, the legal moves at the root
    prior: jax.Array  # [A] float32, the network's prior at the root
    qvalues: jax.Array  # [A] float32, each root move's searched value for the player to move
    children_visits: jax.Array  # [N, A] int32, the visits of each node's children
    children_index: jax.Array  # [N, A] int32, the node of each child, -1 if not expanded
    terminated: jax.Array  # [N] bool, whether a node's position ends the game


def make_snapshot_search(config, game: Game, network, *, num_simulations: int) -> Callable:
    """`search(variables, states [1], key) -> RootSnapshot`: the search an agent plays with
    (`build.make_agent_searcher`: no root noise), with what analysis needs of its tree."""
    search = make_search(
        game,
        network_evaluator(game, network),
        num_simulations=num_simulations,
        algorithm=config.search.algorithm,
        max_num_considered_actions=config.search.max_num_considered_actions,
        params=build.make_search_params(config, explore=False),
        return_tree=True,
    )

    def snapshot(variables, states: State, key: jax.Array) -> RootSnapshot:
        output = search(variables, states, key)
        tree = output.tree
        return RootSnapshot(
            action=output.action[0],
            value=output.value[0],
            legal=states.legal_action_mask[0],
            prior=jax.nn.softmax(tree.children_prior_logits[0, 0]),
            qvalues=tree.qvalues(jnp.zeros(1, jnp.int32))[0],
            children_visits=tree.children_visits[0],
            children_index=tree.children_index[0],
            terminated=tree.embeddings.terminated[0],
        )

    return snapshot


def default_analysis_simulations(simulations: int) -> tuple[int, ...]:
    """S, 2S, 4S, 8S, 16S for S simulations per move, none above 4096 but S itself."""
    sizes = (simulations * 2**k for k in range(5))
    return (simulations, *(n for n in sizes if simulations < n <= _MAX_ANALYSIS_SIMULATIONS))


class Analyzer:
    """Runs the analysis searches of an agent in worker threads, each simulation count
    compiled once (`make_snapshot_search`). There are a few workers, so that a search that
    an interrupted analysis left running does not hold up the next one.

    Args:
      agent: the engine's agent (its config, network and simulations per move).
      game: the engine's game.
      simulations: the simulation counts of an analysis, in order (default:
        `default_analysis_simulations` of the agent's).
    """

    def __init__(self, agent, game: Game, simulations: Sequence[int] | None = None):
        default = default_analysis_simulations(agent.num_simulations)
        self.simulations = tuple(simulations or default)
        self._make = functools.partial(make_snapshot_search, agent.config, game, agent.network)
        self._searches: dict[int, tuple[threading.Lock, Callable]] = {}
        self._lock = threading.Lock()
        self._workers = concurrent.futures.ThreadPoolExecutor(4, "azjax-analysis")

    def submit(self, simulations: int, variables, state: State, key) -> concurrent.futures.Future:
        """Starts a search of `state` (unbatched); its future holds a numpy `RootSnapshot`."""
        return self._workers.submit(self._search, simulations, variables, state, key)

    def _search(self, simulations: int, variables, state: State, key) -> RootSnapshot:
        with self._lock:
            if simulations not in self._searches:
                search = jax.jit(self._make(num_simulations=simulations))
                self._searches[simulations] = (threading.Lock(), search)
            lock, search = self._searches[simulations]
        states = jax.tree.map(lambda x: x[None], state)
        with lock:  # one thread at a time per search, so that it compiles once
            return jax.device_get(search(variables, states, key))


def principal_variation(snapshot: RootSnapshot, action: int) -> tuple[list[int], list[int]]:
    """The moves the search expects after root move `action` (it first) and their visits."""
    visits, index = snapshot.children_visits, snapshot.children_index
    moves, counts = [action], [int(visits[0, action])]
    node = int(index[0, action])
    while node >= 0 and not snapshot.terminated[node]:
        best = int(np.argmax(visits[node]))
        if visits[node, best] == 0:
            break
        moves.append(best)
        counts.append(int(visits[node, best]))
        node = int(index[node, best])
    return moves, counts


def _float(x: float) -> str:
    return f"{x + 0.0:#g}"  # C++'s `out << std::showpoint << x`; + 0.0 turns -0.0 into 0.0


def format_info(snapshot: RootSnapshot, request: AnalyzeRequest, name: Callable) -> str:
    """One analysis line (see the module docstring); "" when there is no move to list.

    Args:
      snapshot: a search's `RootSnapshot` (numpy).
      request: the analysis arguments.
      name: the GTP vertex of an action.
    """
    visits = snapshot.children_visits[0]
    unvisited = float(snapshot.value) if request.kata else -1.0
    values = np.where(visits > 0, snapshot.qvalues, unvisited)  # [A], in [-1, 1]
    winrates = (1 + values) / 2
    chosen, prior = int(snapshot.action), snapshot.prior
    ranked = sorted(
        np.flatnonzero(snapshot.legal).tolist(),
        key=lambda a: (a != chosen or not visits[a], -visits[a], -winrates[a], -prior[a], a),
    )
    listed = [a for i, a in enumerate(ranked) if visits[a] > 0 or i < request.min_moves]
    blocks = []
    for order, action in enumerate(listed[: request.max_moves]):
        count, winrate = int(visits[action]), float(winrates[action])
        lcb = 0.0 if count < 2 else winrate - 1.96 * math.sqrt(winrate * (1 - winrate) / count)
        lcb = max(0.0, lcb)
        pv, pv_visits = principal_variation(snapshot, action)
        if request.kata:
            block = (
                f"info move {name(action)} visits {count} utility {_float(values[action])} "
                f"winrate {_float(winrate)} prior {_float(prior[action])} lcb {_float(lcb)} "
                f"order {order} pv {' '.join(map(name, pv))}"
            )
            numbers = " ".join(map(str, pv_visits))
            block += f" pvVisits {numbers}" if request.pv_visits else ""
            block += f" pvEdgeVisits {numbers}" if request.pv_edge_visits else ""
        else:
            block = (
                f"info move {name(action)} visits {count} winrate {int(winrate * 10000)} "
                f"prior {int(prior[action] * 10000)} lcb {int(lcb * 10000)} "
                f"order {order} pv {' '.join(map(name, pv))}"
            )
        blocks.append(block)
    return " ".join(blocks) + "\n" if blocks else ""


def stream_analysis(
    analyzer: Analyzer,
    variables,
    state: State,
    key: jax.Array,
    request: AnalyzeRequest,
    name: Callable,
    emit: Callable[[str], None],
    wait: Callable[[float | None], bool],
) -> str:
    """Analyses `state` until `wait` reports the next input line (see the module docstring);
    returns the empty line that ends the response."""
    if bool(state.terminated):
        wait(None)
        return "\n"
    sizes = analyzer.simulations
    keys = jax.random.split(key, len(sizes))
    start = time.monotonic()
    wait(0.0)  # start watching the input while the first search runs
    snapshot = analyzer.submit(sizes[0], variables, state, keys[0]).result()
    following = iter(zip(sizes[1:], keys[1:], strict=True) if request.interval else ())
    running, last, shown, final_shown, timeout = None, start, False, False, 0.0
    while not wait(timeout):
        if running is not None and running.done():
            snapshot, running = running.result(), None
        if running is None and (search := next(following, None)) is not None:
            running = analyzer.submit(search[0], variables, state, search[1])
        now = time.monotonic()
        if request.interval and not final_shown and now - last >= request.interval:
            emit(format_info(snapshot, request, name))
            last, shown, final_shown = now, True, running is None
        if running is not None:
            timeout = 0.01  # as Leela Zero's ponder loop, which wakes every 10 ms
        elif request.interval and not final_shown:
            timeout = max(0.0, last + request.interval - now)
        else:
            timeout = None
    if running is not None:
        running.cancel()
    if request.interval and not shown:  # Leela Zero: "Make sure to post at least once."
        emit(format_info(snapshot, request, name))
    return "\n"


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
            record = sgf.parse_game(data.decode("utf-8", errors="replace"))
        except (OSError, ValueError) as error:  # ValueError: sgf.SgfError, or a NUL in the path
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
