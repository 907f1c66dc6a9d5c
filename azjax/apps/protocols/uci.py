"""A UCI engine around a trained Xiangqi agent.

    azjax uci --workdir runs/xiangqi --simulations 200
    python -m azjax.apps.protocols.uci --workdir runs/xiangqi       # the same, without the cli

speaks UCI on stdin/stdout (as Pikafish and Fairy-Stockfish do for Xiangqi) so that GUIs
and referees can play it. UCI has no error responses: input is read as bytes (what is not
UTF-8 is replaced), unknown words before a command are skipped (as the UCI spec asks),
and a line with no command, a malformed command or an illegal move is reported with an
`info string` line and otherwise ignored, so that no input stops the engine.

Coordinates: a move is its origin and destination, each a file a-i from Red's left and a
rank 0-9 counted from Red's side ("h2e2" moves Red's cannon to the centre), as in azjax's
ICCS, Pikafish and UCCI. The option `Ranks` (0-9 or 1-10) switches to Fairy-Stockfish's
ranks 1-10 ("h3e3"). Positions: `position startpos` or `position fen FEN` (azjax's FEN,
`azjax.games.notation.xiangqi`; "w - - 0 1" or shorter), then `moves ...`; an illegal move
stops the list there (the position is the one before it). A game that the run's rules
have drawn (repetition, no-capture or move limit) while moves remain is searched on from
its board as a new game's start.

Commands: uci, debug, isready, setoption, register, ucinewgame, position, go, stop,
ponderhit, quit, and `d` (the board and FEN as info strings). Options: UCI_Variant (xiangqi
only), Simulations (the default budget), Ranks.

Search budgets, the info line and its centipawns: `uci_search`.
"""

import argparse
import json
import re
import sys
import time
import traceback
from typing import BinaryIO, TextIO

import jax
import jax.numpy as jnp
import numpy as np

from azjax import __version__, games
from azjax.apps.protocols.uci_search import (
    INTEGER,
    MAX_SIMULATIONS,
    PvSearch,
    budget,
    centipawns,
    parse_go,
    principal_variation,  # noqa: F401  (part of this module's API)
)
from azjax.games import State, notation
from azjax.games.notation import xiangqi
from azjax.matches.agent import Agent, load_agent
from azjax.matches.engines.uci_client import engine_to_iccs, iccs_to_engine
from azjax.types import UserError

COMMANDS = tuple(
    "uci debug isready setoption register ucinewgame position go stop ponderhit quit d".split()
)
_RANKS = {"0-9": 0, "1-10": 1}
_FEN_CACHE = 8  # positions read from FEN kept


class Engine:
    """Answers UCI commands for one Xiangqi agent.

    Args:
      agent: a Xiangqi agent (`agent.load_agent`); its `num_simulations` is the default
        budget.
      seed: seeds the search.
      min_simulations, max_simulations: the range of search budgets (see the module
        docstring).
    """

    def __init__(
        self,
        agent: Agent,
        *,
        seed: int = 0,
        min_simulations: int = 1,
        max_simulations: int = MAX_SIMULATIONS,
    ):
        if games.family_of(agent.game) != "xiangqi":
            raise UserError(f"the UCI engine plays xiangqi; this run plays {agent.game.name}")
        if not 1 <= min_simulations <= max_simulations:
            raise ValueError(
                "need 1 <= min_simulations <= max_simulations, "
                f"got {min_simulations} and {max_simulations}"
            )
        self.agent, self.game = agent, agent.game
        self.notation = notation.of(self.game)
        self.min_simulations, self.max_simulations = min_simulations, max_simulations
        self.simulations = min(max(agent.num_simulations, min_simulations), max_simulations)
        self.rank_base = 0
        self.finished = False
        self.compilations = 0  # searches traced (one per budget used)
        self._key = jax.random.PRNGKey(seed)
        self._step = jax.jit(self.game.step)
        self._searches: dict[int, object] = {}
        self._rate: float | None = None  # simulations per second of the last search
        self._tree = None  # the last search's tree (`search.tree_reuse`)
        self.carried = 0  # visits the last search took over from the one before
        self._pending: str | None = None  # a bestmove held until stop or ponderhit
        self._start = self.game.init(jax.random.PRNGKey(0))
        self._fens = {xiangqi.START_FEN: self._start}  # FEN -> state, oldest first
        self._base, self._states, self._moves = "startpos", [self._start], []

    @property
    def state(self) -> State:
        """The current position (after the moves of the last `position`)."""
        return self._states[-1]

    def handle(self, words: list[str]) -> list[str]:
        """The output lines for one input line's words (skipping unknown leading words)."""
        for index, word in enumerate(words):
            if word in COMMANDS:
                return getattr(self, "_cmd_" + word)(words[index + 1 :]) or []
        return [f"info string unknown command: {_shorten(' '.join(words))}"] if words else []

    def _cmd_uci(self, args):
        name = json.loads(self.agent.settings.config_json)["name"]
        return [
            f"id name azjax {__version__} ({name}, iteration {self.agent.iteration})",
            "id author azjax",
            "option name UCI_Variant type combo default xiangqi var xiangqi",
            f"option name Simulations type spin default {self.simulations} "
            f"min {self.min_simulations} max {self.max_simulations}",
            "option name Ranks type combo default 0-9 var 0-9 var 1-10",
            "uciok",
        ]

    def _cmd_debug(self, args):
        return []

    _cmd_register = _cmd_debug

    def _cmd_isready(self, args):
        return ["readyok"]

    def _cmd_setoption(self, args):
        if args[:1] != ["name"] or len(args) < 2:
            return ["info string setoption needs: setoption name <id> [value <x>]"]
        split = args.index("value") if "value" in args else len(args)
        name, value = " ".join(args[1:split]), " ".join(args[split + 1 :])
        key = name.lower()
        if key == "uci_variant":
            return [] if value.lower() == "xiangqi" else ["info string only xiangqi is played"]
        if key == "ranks":
            if value not in _RANKS:
                return ["info string Ranks is 0-9 or 1-10"]
            self.rank_base = _RANKS[value]
            return []
        if key == "simulations":
            low, high = self.min_simulations, self.max_simulations
            if not (INTEGER.fullmatch(value) and low <= int(value) <= high):
                return [f"info string Simulations is an integer from {low} to {high}"]
            self.simulations = int(value)
            return []
        return [f"info string unknown option: {_shorten(name)}"]

    def _cmd_ucinewgame(self, args):
        self._pending = None
        self._tree = None  # tree reuse starts afresh
        self._base, self._states, self._moves = "startpos", [self._start], []

    def _cmd_position(self, args):
        moves_at = args.index("moves") if "moves" in args else len(args)
        moves = args[moves_at + 1 :]
        if args[:1] == ["startpos"]:
            base, start = "startpos", self._start
        elif args[:1] == ["fen"] and moves_at > 1:
            base, start = "fen " + " ".join(args[1:moves_at]), None
        else:
            return ["info string position needs: position startpos|fen FEN [moves ...]"]
        texts = [engine_to_iccs(move, self.rank_base) for move in moves]
        common = 0
        if base == self._base:  # moves already played: keep their states
            while (
                common < min(len(texts), len(self._moves)) and texts[common] == self._moves[common]
            ):
                common += 1
            states = self._states[: common + 1]
        else:
            if start is None:
                try:
                    start = self._from_fen(base[4:])
                except UserError as error:
                    return [f"info string {error}; the position is unchanged"]
            states = [start]
        output = []
        for ply in range(common, len(texts)):
            state = self._playable(states[-1])
            try:
                if texts[ply] is None:
                    raise UserError("not a move")
                action = self.notation.parse_action(texts[ply], state)
            except UserError:
                output.append(
                    f"info string illegal move {_shorten(moves[ply])} at ply {ply + 1}; "
                    "the position stands before it"
                )
                texts = texts[:ply]
                break
            states.append(self._step(state, jnp.int32(action)))
        self._base, self._states, self._moves = base, states, texts
        return output

    def _from_fen(self, fen: str) -> State:
        """`xiangqi.from_fen`, remembering the last few positions (it runs eagerly)."""
        state = self._fens.pop(fen, None) or xiangqi.from_fen(self.game, fen)
        self._fens[fen] = state  # now the newest
        while len(self._fens) > _FEN_CACHE:
            del self._fens[next(iter(self._fens))]
        return state

    def _playable(self, state: State) -> State:
        """`state`, or where the run's rules have drawn it while moves remain, its board as a
        new game's start (the no-capture count kept below the limit)."""
        # A terminated state with moves left is one a draw rule ended: a win has rewards,
        # and a set-up position (no plies played) is terminated only without a move.
        if not state.terminated or state.rewards.any() or int(state.step_count) == 0:
            return state
        no_capture = int(state.no_capture_plies)
        if self.game.no_capture_limit:
            no_capture = min(no_capture, self.game.no_capture_limit - 1)
        return self.game.setup(state.board, state.current_player, no_capture)

    def _cmd_go(self, args):
        output = [self._pending] if self._pending else []
        self._pending = None
        values, flags, searchmoves = parse_go(args, output)
        state = self._playable(self.state)
        if state is not self.state:
            output.append("info string the run's rules have drawn this game; searching on")
        if bool(state.terminated):
            return [*output, "info depth 0 score mate 0", "bestmove (none)"]
        if searchmoves:
            chosen = np.zeros(self.game.num_actions, bool)
            for move in searchmoves:
                try:
                    text = engine_to_iccs(move, self.rank_base) or move
                    chosen[self.notation.parse_action(text, state)] = True
                except UserError:
                    output.append(f"info string searchmoves: {_shorten(move)} is not legal")
            if chosen.any():
                state = state.replace(legal_action_mask=jnp.asarray(chosen))
        budget = self._budget(values, flags, int(state.current_player))
        info, moves = self._search(state, budget)
        bestmove = f"bestmove {moves[0]}" + (f" ponder {moves[1]}" if len(moves) > 1 else "")
        if flags & {"infinite", "ponder"}:
            self._pending = bestmove
            return [*output, info]
        return [*output, info, bestmove]

    def _budget(self, values: dict, flags: set, player: int) -> int:
        """Simulations for a `go` (`uci_search.budget`)."""
        return budget(
            values,
            flags,
            player,
            default=self.simulations,
            rate=self._rate,
            low=self.min_simulations,
            high=self.max_simulations,
        )

    def _search(self, state: State, budget: int) -> tuple[str, list[str]]:
        """Searches `state` with `budget` simulations: the info line and the PV's moves."""
        search = self._searches.get(budget)
        compiled = search is not None
        if search is None:
            search = self._searches[budget] = self._make_search(budget)
        self._key, key = jax.random.split(self._key)
        batched = jax.tree.map(lambda x: x[None], state)
        started = time.perf_counter()
        action, value, pv, self._tree = search(self.agent.variables, batched, key, self._tree)
        action, value, pv = jax.device_get((action, value, pv))
        self.carried = search.carried
        elapsed = max(time.perf_counter() - started, 1e-6)
        if compiled:  # a first call's time is mostly compiling
            self._rate = budget / elapsed
        moves, position = [], state
        for move in pv[0]:
            if move < 0 or bool(position.terminated) or not position.legal_action_mask[move]:
                break
            name = self.notation.action_to_string(int(move), position)
            moves.append(iccs_to_engine(name, self.rank_base))
            position = self._step(position, jnp.int32(move))
        if not moves:  # the chosen move is legal (the search masks the root)
            name = self.notation.action_to_string(int(action[0]), state)
            moves = [iccs_to_engine(name, self.rank_base)]
        info = (
            f"info depth {len(moves)} nodes {budget} time {round(elapsed * 1000)} "
            f"nps {round(budget / elapsed)} score cp {centipawns(value[0])} pv {' '.join(moves)}"
        )
        return info, moves

    def _make_search(self, budget: int):
        def traced():  # the search's Python body runs once per compilation
            self.compilations += 1

        return PvSearch(self.agent, budget, on_trace=traced)

    def _cmd_stop(self, args):
        pending, self._pending = self._pending, None
        return [pending] if pending else []

    _cmd_ponderhit = _cmd_stop

    def _cmd_quit(self, args):
        self.finished = True

    def _cmd_d(self, args):
        """The board as Red sees it (FEN letters, ranks 9 to 0) and its FEN (no status line:
        `notation.render` would compute one eagerly, which is slow)."""
        fen = xiangqi.to_fen(self.game, self.state)
        ranks = fen.split()[0].split("/")
        rows = [re.sub("[1-9]", lambda empty: "." * int(empty[0]), rank) for rank in ranks]
        lines = [f"{9 - index} {' '.join(row)}" for index, row in enumerate(rows)]
        return [f"info string {line}" for line in [*lines, "  a b c d e f g h i", f"fen {fen}"]]


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _clean(line: str) -> list[str]:
    """The words of a line, control characters dropped (tabs are spaces)."""
    return "".join(c if c >= " " else " " for c in line.replace("\x7f", " ")).split()


def respond(engine: Engine, line: str) -> list[str]:
    """The output lines for one input line (none for most commands); a bug is reported as
    an info string, not raised."""
    try:
        lines = engine.handle(_clean(line))
    except Exception as error:  # a bug must not kill a running game: report it and go on
        traceback.print_exc(file=sys.stderr)
        lines = [f"info string internal error: {type(error).__name__}: {error}"]
    return [" ".join(line.splitlines()) for line in lines]


def serve(engine: Engine, stdin: BinaryIO | TextIO, stdout: TextIO) -> int:
    """Answers commands from `stdin` until `quit` or the end of input; returns 0.

    Lines are read as bytes (from `stdin.buffer` where there is one) and decoded as UTF-8
    with undecodable bytes replaced; output is written as UTF-8 and flushed per line."""
    binary = getattr(stdout, "buffer", None)
    for line in getattr(stdin, "buffer", stdin):
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        lines = respond(engine, line)
        if lines:
            text = "".join(output + "\n" for output in lines)
            if binary is None:
                stdout.write(text)
                stdout.flush()
            else:
                stdout.flush()
                binary.write(text.encode("utf-8", errors="replace"))
                binary.flush()
        if engine.finished:
            break
    return 0


def main_from_args(workdir: str, simulations: int | None = None, seed: int = 0) -> int:
    """`azjax uci`: loads the run's agent and serves UCI on stdin/stdout.

    Raises:
      UserError: not a Xiangqi run, or no readable checkpoint.
    """
    agent = load_agent(workdir, num_simulations=simulations)
    return serve(Engine(agent, seed=seed), sys.stdin, sys.stdout)


def main(argv: list[str] | None = None) -> int:
    """`python -m azjax.apps.protocols.uci --workdir RUN [--simulations N] [--seed S]`."""
    parser = argparse.ArgumentParser(
        prog="python -m azjax.apps.protocols.uci", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--workdir", required=True, help="run directory or checkpoint path")
    parser.add_argument(
        "--simulations", type=int, default=None, help="default simulations per move"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        return main_from_args(args.workdir, args.simulations, args.seed)
    except UserError as error:
        print(f"azjax: error: {error}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main())
