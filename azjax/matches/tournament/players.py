"""Tournament players: parsing their specs and building them.

Specs (`azjax tournament --players ...`):

    RUN                 the newest checkpoint of a run directory (named RUN@STEP)
    RUN@STEP            the checkpoint of iteration STEP
    RUN@every:K         every checkpoint whose iteration is a multiple of K
    RUN@all             every checkpoint
                        (RUN: a directory, or a URI such as gs://bucket/runs/c4)
    zoo:NAME            a trained agent shipped with azjax (`azjax zoo`)
    random, minimax, mcts:N        the baselines (minimax: Tic-tac-toe only)
    gtp:"COMMAND" [OPTIONS]        an outside Go engine speaking GTP
    uci:"COMMAND" [OPTIONS]        an outside Xiangqi engine speaking UCI (depth=D, nodes=N)
    solver                         perfect Connect Four play (bitbully; the solver extra)

A checkpoint plays with its run's evaluation search (no noise), at the run's evaluation
simulations unless `simulations` is given. Players of one run share one compiled search, so
a match between two checkpoints of a run compiles once for all of them.
"""

import dataclasses
import re

import jax

from azjax.config import saved
from azjax.config.keys import MAX_SIMULATIONS
from azjax.config.opponents import is_engine_spec, parse_simulations
from azjax.games import Game
from azjax.matches import agent as agent_lib
from azjax.matches import zoo
from azjax.matches.arena import DeviceHostPlayer
from azjax.matches.engines import open_player, parse_engine_spec
from azjax.paths import workdir_path
from azjax.runs.directory import list_checkpoints
from azjax.types import UserError

_BASELINE = re.compile(r"random|minimax|mcts:[0-9]+")
_RUN_SUFFIX = re.compile(r"@([0-9]{1,18}|all|every:[0-9]{1,18})$")


@dataclasses.dataclass(frozen=True)
class PlayerInfo:
    """One player as the tournament records it (`tournament.json`).

    Attributes:
      name: the name in the game log and the ratings (RUN@STEP, mcts:400, gtp:...).
      kind: "checkpoint", "baseline" or "engine" (outside engines and the solver).
      run: the run directory of a checkpoint (as given, normalised).
      step: the checkpoint's iteration.
      simulations: the checkpoint's search simulations per move.
      deterministic: plays the same move in the same position every time (then games
        between two such players open with random plies).
    """

    name: str
    kind: str
    run: str | None = None
    step: int | None = None
    simulations: int | None = None
    deterministic: bool = True

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "PlayerInfo":
        """A player as `tournament.json` records it, checked as `resolve` checks a spec.

        Raises:
          UserError: a damaged record (one line).
        """
        try:
            info = cls(**data)
        except TypeError:
            info = None
        if info is None or not _valid(info):
            shown = repr(data)
            shown = shown if len(shown) <= 200 else shown[:200] + "..."
            raise UserError(f"a damaged player record in tournament.json: {shown}")
        if info.kind == "engine":
            parse_engine_spec(info.name)  # a one-line error for a damaged engine spec
        return info


def _valid(info: PlayerInfo) -> bool:
    """Whether a player record read from a file holds what `resolve` would have made."""

    def count(value, low, high=None) -> bool:
        return (
            isinstance(value, int)
            and not isinstance(value, bool)
            and low <= value
            and (high is None or value <= high)
        )

    if not isinstance(info.name, str) or not isinstance(info.deterministic, bool):
        return False
    if info.kind == "baseline":
        return _baseline_problem(info.name) is None and info.run is None
    if info.kind == "engine":
        return is_engine_spec(info.name) and info.run is None
    return (
        info.kind == "checkpoint"
        and isinstance(info.run, str)
        and bool(info.run)
        and count(info.step, 0)
        and count(info.simulations, 1, MAX_SIMULATIONS)
    )


def _baseline_problem(spec: str) -> str | None:
    """What is wrong with a baseline spec (random, minimax, mcts:N); None: nothing."""
    if not _BASELINE.fullmatch(spec):
        return "not a baseline"
    if spec.startswith("mcts:") and parse_simulations(spec[5:]) is None:
        return f"mcts:N needs N >= 1 and at most {MAX_SIMULATIONS}"
    return None


def _run_name(path: str) -> str:
    """A run directory as players name it: normalised, a URI kept one (`gs://bucket/run`, which
    `pathlib.Path` would make `gs:/bucket/run`)."""
    return str(workdir_path(path)).rstrip("/") or "."


def resolve(spec: str, *, simulations: int | None = None) -> list[PlayerInfo]:
    """The players a spec stands for (several for RUN@every:K and RUN@all).

    Raises:
      UserError: a malformed spec, a missing run, no checkpoint matching.
    """
    spec = spec.strip()
    if not spec:
        raise UserError("an empty player spec")
    if _BASELINE.fullmatch(spec):
        problem = _baseline_problem(spec)
        if problem:
            raise UserError(f"bad player {spec!r}: {problem}")
        return [PlayerInfo(name=spec, kind="baseline", deterministic=spec == "minimax")]
    if is_engine_spec(spec):
        parse_engine_spec(spec)  # a one-line error now rather than mid-tournament
        return [PlayerInfo(name=spec, kind="engine")]
    if zoo.is_zoo(spec):
        card = zoo.card(spec)
        sims = simulations or zoo.read_settings(spec).agent.simulations
        return [
            PlayerInfo(
                name=spec, kind="checkpoint", run=spec, step=card.iteration, simulations=sims
            )
        ]
    if spec.startswith("workdir:"):
        spec = spec[len("workdir:") :]
    match = _RUN_SUFFIX.search(spec)
    run = _run_name(spec[: match.start()] if match else spec)
    which = match.group(1) if match else "newest"
    settings = saved.read_run(run)  # a one-line error when RUN is not a run directory
    steps = list_checkpoints(run)
    if not steps:
        raise UserError(f"run {run} has no checkpoint yet")
    if which == "newest":
        chosen = steps[-1:]
    elif which == "all":
        chosen = steps
    elif which.startswith("every:"):
        every = int(which[len("every:") :])
        if every < 1:
            raise UserError(f"bad player {spec!r}: every:K needs K >= 1")
        chosen = [step for step in steps if step % every == 0]
    else:
        chosen = [int(which)] if int(which) in steps else []
        if not chosen:
            raise UserError(f"run {run} has no checkpoint {which} (it has {_ranges(steps)})")
    if not chosen:
        raise UserError(f"no checkpoint of {run} matches {spec!r} (it has {_ranges(steps)})")
    sims = simulations or settings.agent.simulations
    return [
        PlayerInfo(name=f"{run}@{step}", kind="checkpoint", run=run, step=step, simulations=sims)
        for step in chosen
    ]


def _ranges(steps: list[int]) -> str:
    return ", ".join(map(str, steps)) if len(steps) <= 8 else f"{steps[0]} ... {steps[-1]}"


class Roster:
    """Builds players on demand and shares what can be shared between them.

    Args:
      game: the tournament's game.
    """

    def __init__(self, game: Game):
        self.game = game
        self._families: dict[tuple, object] = {}  # family -> player function
        self._params: dict[str, object] = {}
        self._hosts: dict[str, object] = {}
        self._jitted: dict[tuple, object] = {}  # family -> jitted player (host games)

    def device(self, info: PlayerInfo):
        """(family, player, params) for a player that runs on the device; `family` is the
        same for players whose `player` function is the same (checkpoints of one run at
        one setting), so their matches share one compiled program."""
        if info.kind == "baseline":
            family = (info.name,)
            if family not in self._families:
                self._families[family] = agent_lib.make_opponent(self.game, info.name)[0]
            return family, self._families[family], None
        if info.kind != "checkpoint":
            raise ValueError(f"{info.name} does not run on the device")
        if info.name not in self._params:
            agent = agent_lib.load_agent(info.run, step=info.step, num_simulations=info.simulations)
            check_same_game(self.game, agent.game, info.name)
            family = ("checkpoint", agent.settings.config_json, info.simulations)
            self._families.setdefault(family, agent.player)
            self._params[info.name] = (family, agent.variables)
        family, params = self._params[info.name]
        return family, self._families[family], params

    def host(self, info: PlayerInfo, *, timeout: float):
        """A `HostPlayer` (one game at a time) for any player: engines natively, device
        players through a batch-of-one adapter."""
        if info.name not in self._hosts:
            if info.kind == "engine":
                spec = parse_engine_spec(info.name)
                spec.require_plays(self.game, info.name)
                self._hosts[info.name] = open_player(spec, timeout=timeout)
            else:
                family, player, params = self.device(info)
                if family not in self._jitted:
                    self._jitted[family] = jax.jit(player)
                self._hosts[info.name] = DeviceHostPlayer(info.name, self._jitted[family], params)
        return self._hosts[info.name]

    def close(self) -> None:
        for host in self._hosts.values():
            host.close()
        self._hosts.clear()


def check_same_game(game: Game, other: Game, name: str) -> None:
    """Raises UserError when `other` is not the tournament's game (rules included)."""
    if repr(other) != repr(game) or other.num_actions != game.num_actions:
        raise UserError(f"player {name} plays {other!r}, but this tournament plays {game!r}")
