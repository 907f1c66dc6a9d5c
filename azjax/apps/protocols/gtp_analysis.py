"""Analysis as Leela Zero and KataGo stream it, for the analysis views of Sabaki and Lizzie:
`lz-analyze` and `kata-analyze [color] [interval] [interval N] [minmoves N] [maxmoves N]
[pvVisits B] [pvEdgeVisits B] ...`, and `genmove_analyze`, `lz-genmove_analyze`,
`kata-genmove_analyze` with the same arguments (the commands themselves are in
`gtp_extensions`).

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

The network's score and ownership heads, where a run trains them, are the learner's only,
so KataGo's scoreMean, scoreLead, scoreStdev and ownership are not printed; its ownership,
ownershipStdev, movesOwnership, rootInfo and noResultValue flags are accepted and ignored.
avoid and allow are refused.

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
"""

import concurrent.futures
import dataclasses
import functools
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from azjax.apps.protocols.gtp_io import COLORS, FLOAT, INTEGER, GtpError
from azjax.config.settings import AgentSettings
from azjax.games import Game, State

_TAGS_ERROR = "cannot parse analyze tags"  # Leela Zero's answer to bad analyze arguments
_IGNORED_FLAGS = ("ownership", "ownershipStdev", "movesOwnership", "movesOwnershipStdev")
_IGNORED_FLAGS += ("rootInfo", "noResultValue")
_BOOLEANS = {"true": True, "false": False, "1": True, "0": False}
_MAX_INTERVAL = 1e8  # centiseconds, about 11 days
_MAX_ANALYSIS_SIMULATIONS = 4096  # beyond the engine's own, the largest analysis search


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


def make_snapshot_search(
    settings: AgentSettings, game: Game, network, *, num_simulations: int
) -> Callable:
    """`search(variables, states [1], key) -> RootSnapshot`: the search an agent plays with
    (`settings.searcher`: no root noise), with what analysis needs of its tree."""
    search = settings.searcher(game, network, num_simulations=num_simulations, return_tree=True)

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
      agent: the engine's agent (its settings, network and simulations per move).
      game: the engine's game.
      simulations: the simulation counts of an analysis, in order (default:
        `default_analysis_simulations` of the agent's).
    """

    def __init__(self, agent, game: Game, simulations: Sequence[int] | None = None):
        default = default_analysis_simulations(agent.num_simulations)
        self.simulations = tuple(simulations or default)
        self._make = functools.partial(
            make_snapshot_search, agent.settings.agent, game, agent.network
        )
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
