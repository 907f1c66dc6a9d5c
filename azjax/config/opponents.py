"""Opponent specs of the command line and the config: `parse_opponent_spec` reads every
kind (baselines, runs, zoo agents, engines), `parse_engine_spec` those of outside engines and
the solver.

`parse_engine_spec` reads the engine specs of the command line:

    gtp:"gnugo --mode gtp --level 5"          Go over GTP (`gtp_client.GtpPlayer`)
    uci:fairy-stockfish depth=1               Xiangqi over UCI (`uci_client.UciPlayer`)
    uci:pikafish movetime=200 timeout=30
    solver                                    perfect Connect Four play (`solver.SolverPlayer`:
                                              bitbully, in this process; the solver extra)

The command is quoted when it holds spaces; options follow as key=value: for both
`timeout=SECONDS` (per answer, default 30); for GTP `cleanup=true|false` (default true: moves
by `kgs-genmove_cleanup` where the engine has it, so that it captures dead stones before
passing, see `gtp_client`); for UCI one of `depth=N`, `nodes=N`, `movetime=MS` (default
movetime=1000), `ranks=auto|0-9|1-10` (see `uci_client`) and `skill=N` (the engine's
`Skill Level`, -20 to 20: Fairy-Stockfish at its weakest is `skill=-20`).
`azjax.matches.engines.open_player(spec)` starts the player a spec names.
"""

import dataclasses
import shlex
from pathlib import Path

from azjax import games
from azjax.config.keys import MAX_SIMULATIONS
from azjax.games import Game
from azjax.types import UserError


@dataclasses.dataclass(frozen=True)
class EngineSpec:
    """A parsed engine spec (`engines.open_player` starts a player from it).

    Attributes:
      protocol: "gtp" (Go, Othello), "uci" (Xiangqi) or "solver" (Connect Four).
      command: the engine's command line ("" for the solver, which runs no program).
      options: the key=value options, typed (see the module docstring).
    """

    protocol: str
    command: str
    options: dict

    @property
    def name(self) -> str:
        return f"{self.protocol}:{self.command}" if self.command else self.protocol

    def plays(self, game: Game) -> bool:
        """Whether this engine's protocol plays `game`."""
        return games.family_of(game) in _FAMILIES[self.protocol]

    def require_plays(self, game: Game, spec: str | None = None) -> None:
        """Raises UserError (naming `spec`, the user's words, or the engine) unless this
        engine's protocol plays `game`."""
        if not self.plays(game):
            raise UserError(
                f"{spec or self.name} cannot play {game.name}: {self.protocol} plays "
                f"{' and '.join(_FAMILIES[self.protocol])} only"
            )


# protocol -> the game families it plays
_FAMILIES = {"gtp": ("go", "othello"), "uci": ("xiangqi",), "solver": ("connect_four",)}


def is_engine_spec(spec: str) -> bool:
    """Whether an opponent spec names an outside engine or the solver (`parse_engine_spec`)."""
    spec = spec.strip()
    return spec == "solver" or spec.startswith(("gtp:", "uci:"))


def _boolean(text: str) -> bool:
    """true/false (also yes/no, on/off, 1/0, any case) as a bool; ValueError otherwise."""
    words = {"true": True, "yes": True, "on": True, "1": True}
    words.update({"false": False, "no": False, "off": False, "0": False})
    try:
        return words[text.lower()]
    except KeyError:
        raise ValueError(text) from None


_OPTIONS = {  # protocol -> option -> (type, check, what it must be)
    "gtp": {
        "timeout": (float, lambda v: 0 < v < 1e6, "a positive number of seconds"),
        "cleanup": (_boolean, lambda v: True, "true or false"),
    },
    "uci": {
        "timeout": (float, lambda v: 0 < v < 1e6, "a positive number of seconds"),
        "depth": (int, lambda v: 1 <= v <= 1000, "an integer from 1 to 1000"),
        "nodes": (int, lambda v: 1 <= v <= 10**15, "a positive integer"),
        "movetime": (int, lambda v: 1 <= v <= 10**9, "a positive number of milliseconds"),
        "ranks": (str, lambda v: v in ("auto", "0-9", "1-10"), "auto, 0-9 or 1-10"),
        "skill": (int, lambda v: -20 <= v <= 20, "an integer from -20 to 20"),
    },
}


def parse_engine_spec(spec: str) -> EngineSpec:
    """Reads `gtp:COMMAND [key=value ...]` or `uci:COMMAND [key=value ...]`; COMMAND is
    quoted when it holds spaces (`gtp:"gnugo --mode gtp --level 5"`); or `solver`.

    Raises:
      UserError: a spec that is not of that form, or an unknown or bad option (one line).
    """
    if spec.strip() == "solver":
        return EngineSpec("solver", "", {})
    protocol, colon, rest = spec.strip().partition(":")
    protocol = protocol.lower()

    def fail(reason: str):
        raise UserError(f"bad engine spec {spec!r}: {reason}")

    if not colon or protocol not in _OPTIONS:
        fail('expected gtp:COMMAND or uci:COMMAND, like gtp:"gnugo --mode gtp"')
    try:
        words = shlex.split(rest)
    except ValueError as error:
        fail(str(error))
    if not words or not words[0].strip():
        fail("no command")
    command, options, known = words[0], {}, _OPTIONS[protocol]
    for word in words[1:]:
        key, equals, value = word.partition("=")
        if not equals:
            fail(f"{word!r} is no key=value option (quote a command that holds spaces)")
        if key not in known:
            fail(f"unknown option {key!r}; {protocol} takes {', '.join(known)}")
        kind, check, what = known[key]
        try:
            typed = kind(value)
        except ValueError:
            typed = None
        if typed is None or not check(typed):
            fail(f"{key} must be {what}, got {value!r}")
        options[key] = typed
    if len({"depth", "nodes", "movetime"} & options.keys()) > 1:
        fail("give at most one of depth, nodes and movetime")
    return EngineSpec(protocol, command, options)


def parse_simulations(text: str) -> int | None:
    """The simulations of an `mcts:N` or `ladder:N` spec: N in ASCII digits, 1 to
    `MAX_SIMULATIONS`; None for anything else."""
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(MAX_SIMULATIONS)):
        return None
    count = int(text)
    return count if 1 <= count <= MAX_SIMULATIONS else None


def parse_opponent_spec(spec: str) -> tuple[str, object]:
    """Parses an opponent spec into (kind, argument): 'random', 'minimax', 'mcts:N',
    'ladder:N' (pure MCTS from N simulations, N more after each evaluation the agent won
    every game of), 'previous' (the network at the previous evaluation), 'workdir:PATH' (or
    a bare existing path), 'zoo:NAME' (a shipped agent), and outside engines
    'gtp:COMMAND ...' / 'uci:COMMAND ...' (kind
    'engine', the parsed `engines.EngineSpec`)."""
    if spec in ("random", "minimax", "previous"):
        return spec, None
    for kind in ("mcts", "ladder"):
        if spec.startswith(f"{kind}:"):
            count = parse_simulations(spec.split(":", 1)[1])
            if count is None:
                raise UserError(
                    f"bad opponent {spec!r}: {kind}:N needs a positive number of simulations "
                    f"(at most {MAX_SIMULATIONS})"
                )
            return kind, count
    if is_engine_spec(spec):
        return "engine", parse_engine_spec(spec)
    if spec.startswith("workdir:"):
        return "workdir", spec.split(":", 1)[1]
    if spec.startswith("zoo:") and len(spec) > 4:
        return "workdir", spec  # a shipped agent: `load_agent` reads `zoo:NAME`
    if Path(spec).is_dir():
        return "workdir", spec
    raise UserError(
        f"bad opponent {spec!r}; use random, minimax (tic_tac_toe), mcts:N, ladder:N, "
        'previous, workdir:PATH, zoo:NAME, gtp:"COMMAND", uci:"COMMAND" or solver (connect_four)'
    )
