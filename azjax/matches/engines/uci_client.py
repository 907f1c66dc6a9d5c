"""Xiangqi engines that speak UCI (Fairy-Stockfish, Pikafish) as host players.

    player = UciPlayer("fairy-stockfish", depth=1)
    player.start(game, state)          # uci, UCI_Variant xiangqi, isready, ucinewgame
    player.observe(state, action)      # remembered for the next `position ... moves ...`
    action = player.choose(state)      # position fen START moves ...; go depth 1; bestmove

Coordinates: azjax's ICCS and Pikafish (UCCI) name a point by a file a-i and a rank 0-9
counted from Red's side ("h2e2"); Fairy-Stockfish counts the ranks 1-10 ("h3e3"). The
`ranks` option picks one: "0-9", "1-10", or "auto" (1-10 when the engine's `id name`
holds "Fairy-Stockfish", else 0-9). Positions are sent as FEN with the moves played since
the game's start position; both engines read azjax's FEN ("... w - - 0 1").
"""

import re
import shlex
from collections.abc import Sequence

from azjax import games
from azjax.games import Game, State, notation
from azjax.games.notation import xiangqi
from azjax.matches.engines.base import DEFAULT_TIMEOUT, EngineError, EngineProcess, HostPlayer
from azjax.types import UserError

_ENGINE_MOVE = {
    0: re.compile(r"([a-i])([0-9])([a-i])([0-9])"),
    1: re.compile(r"([a-i])(10|[1-9])([a-i])(10|[1-9])"),
}
_RANK_BASES = {"0-9": 0, "1-10": 1}
DEFAULT_MOVETIME = 1000  # milliseconds per move when no limit is given


def iccs_to_engine(move: str, rank_base: int) -> str:
    """An ICCS move ("h2e2") in an engine's coordinates: ranks 0-9 (`rank_base` 0) or
    1-10 (`rank_base` 1, "h3e3")."""
    return f"{move[0]}{int(move[1]) + rank_base}{move[2]}{int(move[3]) + rank_base}"


def engine_to_iccs(text: str, rank_base: int) -> str | None:
    """An engine's move (ranks 0-9 or 1-10 by `rank_base`) as ICCS, or None when `text`
    is no move in those coordinates."""
    match = _ENGINE_MOVE[rank_base].fullmatch(text.strip().lower())
    if not match:
        return None
    file_a, rank_a, file_b, rank_b = match.groups()
    return f"{file_a}{int(rank_a) - rank_base}{file_b}{int(rank_b) - rank_base}"


class UciPlayer(HostPlayer):
    """A UCI engine playing Xiangqi.

    Args:
      command: the engine's command line (or argv list).
      depth, nodes, movetime: the search limit of each move (at most one; default
        movetime=1000 milliseconds).
      timeout: seconds the engine may take for one answer, beyond `movetime`.
      ranks: the engine's rank numbers: "0-9", "1-10" or "auto" (see the module docstring).
      skill: the engine's `Skill Level` option (Fairy-Stockfish: -20, the weakest, to 20,
        its default); None leaves it as the engine has it.
    """

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        depth: int | None = None,
        nodes: int | None = None,
        movetime: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        ranks: str = "auto",
        skill: int | None = None,
    ):
        limits = {"depth": depth, "nodes": nodes, "movetime": movetime}
        limits = {key: int(value) for key, value in limits.items() if value is not None}
        if len(limits) > 1:
            raise UserError("give a UCI engine at most one of depth, nodes and movetime")
        if any(value < 1 for value in limits.values()):
            raise UserError(f"UCI search limits must be positive, got {limits}")
        if ranks not in ("auto", *_RANK_BASES):
            raise UserError(f"ranks must be auto, 0-9 or 1-10, got {ranks!r}")
        self.command = command if isinstance(command, str) else shlex.join(command)
        self.name = f"uci:{self.command}"
        limits = limits or {"movetime": DEFAULT_MOVETIME}
        self.limit = " ".join(f"{key} {value}" for key, value in limits.items())  # go's limit
        self.timeout = timeout + limits.get("movetime", 0) / 1000
        self.ranks = ranks
        self.skill = skill
        self.engine_name = ""  # the engine's `id name`
        self.rank_base = 0
        self._process: EngineProcess | None = None
        self._game: Game | None = None
        self._start_fen = ""
        self._moves: list[str] = []  # in the engine's coordinates

    def _engine(self) -> EngineProcess:
        """The running engine, started with the UCI handshake when there is none."""
        if self._process is not None and self._process.alive:
            return self._process
        self._stop()
        self._process = engine = EngineProcess(self.command, name=self.name, timeout=self.timeout)
        try:
            engine.send("uci")
            lines = engine.read_until(lambda line: line.strip() == "uciok", waiting_for="uciok")
            options = {}
            for line in lines:
                words = line.split()
                if words[:2] == ["id", "name"]:
                    self.engine_name = " ".join(words[2:])
                elif words[:2] == ["option", "name"] and "type" in words:
                    type_at = words.index("type")
                    options[" ".join(words[2:type_at]).lower()] = words[type_at + 1 :]
            auto = 1 if "fairy-stockfish" in self.engine_name.lower() else 0
            self.rank_base = _RANK_BASES.get(self.ranks, auto)
            if "uci_variant" in options:
                if "xiangqi" not in options["uci_variant"]:
                    raise engine.error("offers no xiangqi in its UCI_Variant option")
                engine.send("setoption name UCI_Variant value xiangqi")
            if self.skill is not None:
                if "skill level" not in options:
                    raise engine.error("has no Skill Level option")
                engine.send(f"setoption name Skill Level value {self.skill}")
            self._ready()
        except EngineError:
            self._stop()
            raise
        return engine

    def _ready(self) -> None:
        self._process.send("isready")
        self._process.read_until(lambda line: line.strip() == "readyok", waiting_for="readyok")

    def _stop(self) -> None:
        if self._process is not None:
            self._process.close()
            self._process = None

    def start(self, game: Game, state: State) -> None:
        """A new game from `state`: `ucinewgame`, and its FEN as the start of `position`."""
        if games.family_of(game) != "xiangqi":
            raise UserError(f"{self.name} plays xiangqi over UCI, not {game.name}")
        engine = self._engine()
        self._game, self._moves = game, []
        self._start_fen = xiangqi.to_fen(game, state)
        try:
            engine.send("ucinewgame")
            self._ready()
        except EngineError:
            self._stop()
            raise

    def observe(self, state: State, action: int) -> None:
        move = notation.action_to_string(self._game, action, state)
        self._moves.append(iccs_to_engine(move, self.rank_base))

    def choose(self, state: State) -> int:
        """Sends the position and `go`; reads `bestmove` (an illegal or unreadable move, or
        none where moves exist, is an `EngineError`)."""
        engine = self._engine()
        position = f"position fen {self._start_fen}"
        if self._moves:
            position += " moves " + " ".join(self._moves)
        try:
            engine.send(position)
            engine.send(f"go {self.limit}")
            lines = engine.read_until(
                lambda line: line.split()[:1] == ["bestmove"], waiting_for="bestmove"
            )
        except EngineError:
            self._stop()
            raise
        words = lines[-1].split()
        text = words[1] if len(words) > 1 else "(none)"
        move = engine_to_iccs(text, self.rank_base)
        if move is None:
            self._stop()  # it may not be speaking xiangqi in our coordinates
            base = "1-10" if self.rank_base else "0-9"
            raise engine.error(f"sent {lines[-1].strip()!r}, no move in ranks {base}")
        try:
            return notation.parse_action(self._game, move, state)
        except UserError as error:
            self._stop()
            fen = xiangqi.to_fen(self._game, state)
            reason = str(error).split(";")[0]
            raise engine.error(f"played an illegal move {text} in {fen}: {reason}") from None

    def close(self) -> None:
        self._stop()
