"""The memory plan's data: a compiled program's memory, the linear model of it in games and
positions, the state's parts, what fits in a memory size, and `MemoryPlan` with its
queries (`required`, `largest_batch`, `largest_capacity`) and its text (`table`).
`memory.plan` measures and fills it; `memory_report` is `azjax bench --memory`.
"""

import dataclasses
from collections.abc import Sequence

import numpy as np

from azjax.types import UserError

GIB = 2**30
MEMORY_SIZES = (16 * GIB, 40 * GIB, 80 * GIB)  # per device: V100 16 GB, A100 40 / 80 GB, H100
USABLE_FRACTION = 0.9
PROGRAMS = ("play_step", "learn_step")
QUANTITIES = ("argument", "output", "alias", "temp", "code")


@dataclasses.dataclass(frozen=True)
class ProgramMemory:
    """XLA's memory analysis of one compiled program, in bytes per device."""

    name: str  # "play_step" or "learn_step"
    games: float  # self-play game slots per device (b)
    positions: float  # replay positions per device (n)
    argument: float
    output: float
    alias: float  # outputs that reuse (donated) argument buffers
    temp: float
    code: float  # generated code

    @property
    def peak(self) -> float:
        """Bytes live at once: arguments + outputs - aliased + temporaries + code."""
        return self.argument + self.output - self.alias + self.temp + self.code


@dataclasses.dataclass(frozen=True)
class LinearModel:
    """One program's memory as `c0 + cb * games + cn * positions` per quantity (per device)."""

    name: str
    coefficients: dict  # quantity -> (c0, cb, cn)
    fitted: tuple[ProgramMemory, ...]  # the three compiles it was solved from
    check: ProgramMemory  # the held-out compile

    def predict(self, games: float, positions: float) -> ProgramMemory:
        values = {
            quantity: c0 + cb * games + cn * positions
            for quantity, (c0, cb, cn) in self.coefficients.items()
        }
        return ProgramMemory(self.name, games, positions, **values)

    def peak_coefficients(self) -> tuple[float, float, float]:
        """(c0, cb, cn) of the peak."""
        signs = dict(argument=1, output=1, alias=-1, temp=1, code=1)
        return tuple(sum(signs[q] * self.coefficients[q][i] for q in QUANTITIES) for i in range(3))

    def error(self, quantity: str = "temp") -> float:
        """Relative error of the prediction at the held-out compile (`quantity` or "peak")."""
        predicted = self.predict(self.check.games, self.check.positions)
        measured = getattr(self.check, quantity)
        return (getattr(predicted, quantity) - measured) / max(measured, 1.0)

    @staticmethod
    def solve(name: str, fitted: Sequence[ProgramMemory], check: ProgramMemory) -> "LinearModel":
        """The exact linear model through three compiles (e.g. at (b1, n1), (b2, n1), (b2, n2))."""
        points = np.array([[1.0, p.games, p.positions] for p in fitted])
        coefficients = {
            quantity: tuple(
                float(c) for c in np.linalg.solve(points, [getattr(p, quantity) for p in fitted])
            )
            for quantity in QUANTITIES
        }
        return LinearModel(name, coefficients, tuple(fitted), check)


@dataclasses.dataclass(frozen=True)
class StatePart:
    """One field of `TrainerState`: its bytes in total and on each device."""

    name: str
    total: int
    per_device: int
    per_position: float  # total bytes per replay position (0: does not grow with capacity)
    per_game: float  # total bytes per self-play slot (0: does not grow with the batch)


@dataclasses.dataclass(frozen=True)
class Fit:
    """What fits in one memory size per device."""

    memory: int  # bytes per device
    usable: float  # bytes counted as usable
    batch: int  # largest self-play batch (total) at the config's capacity; 0: none
    batch_refused: bool  # `make_pipeline` refuses that batch at that capacity
    capacity: int  # largest replay capacity (total positions) at the config's batch; 0: none


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
    """The memory a config needs per device and the largest sizes that fit (see the module)."""

    name: str
    game: str
    num_devices: int  # D
    compiled_on: str  # how the programs were compiled, in words
    platform: str  # the backend that compiled them ("cpu", "gpu", "tpu")
    selfplay_batch_size: int  # B, total
    replay_capacity: int  # N, total positions
    learner_batch_size: int
    game_share: float  # of the self-play batch, the share one device holds (1/D when split)
    position_share: float  # of the replay, the share one device holds
    bytes_per_position: float  # replay buffer bytes / capacity
    bytes_per_slot: float  # self-play state bytes / self-play batch
    parameter_bytes: int  # network variables (parameters and BatchNorm statistics)
    optimizer_bytes: int  # the rest of the learner's state
    parts: tuple[StatePart, ...]  # every field of TrainerState
    models: dict  # program name -> LinearModel
    max_batch_by_rule: int  # the largest batch `make_pipeline` accepts at the capacity
    min_capacity_by_rule: int  # the smallest capacity it accepts at the batch
    usable_fraction: float
    fits: tuple[Fit, ...]
    seconds: float  # time taken to compile and plan

    def required(self, batch: int | None = None, capacity: int | None = None) -> dict:
        """Predicted peak bytes per device of each program at a total self-play `batch` and
        replay `capacity` (default: the config's)."""
        games = (self.selfplay_batch_size if batch is None else batch) * self.game_share
        positions = (self.replay_capacity if capacity is None else capacity) * self.position_share
        return {name: model.predict(games, positions).peak for name, model in self.models.items()}

    def largest_batch(self, memory: float, capacity: int | None = None) -> int:
        """The largest total self-play batch (a multiple of the games per device step) whose
        programs fit in `memory` bytes per device at `capacity` (default: the config's); 0:
        none."""
        positions = (self.replay_capacity if capacity is None else capacity) * self.position_share
        games = largest(self.models, memory, fixed=positions, vary=1)
        return int(round(games / self.game_share)) if games >= 1 else 0

    def largest_capacity(self, memory: float, batch: int | None = None) -> int:
        """The largest total replay capacity whose programs fit in `memory` bytes per device
        at the self-play `batch` (default: the config's); 0: none."""
        games = (self.selfplay_batch_size if batch is None else batch) * self.game_share
        positions = largest(self.models, memory, fixed=games, vary=2)
        if positions < 1:
            return 0
        step = int(round(1 / self.position_share))  # keep N a multiple of the shards
        return int(positions / self.position_share) // step * step

    def table(self) -> str:
        """The plan as text: state, compiled programs, model and the fits (markdown tables)."""
        return format_plan(self)


def largest(models: dict, memory: float, *, fixed: float, vary: int) -> float:
    """The largest value of games (vary=1, positions fixed) or positions (vary=2, games
    fixed) at which every program's predicted peak is at most `memory`; floored."""
    best = np.inf
    for model in models.values():
        c0, cb, cn = model.peak_coefficients()
        slope, base = (cb, c0 + cn * fixed) if vary == 1 else (cn, c0 + cb * fixed)
        if base > memory:
            return 0.0
        if slope > 0:
            best = min(best, (memory - base) / slope)
    if not np.isfinite(best):
        raise UserError("no program's memory grows with this size: nothing bounds it")
    return float(np.floor(best))


def format_bytes(value: float) -> str:
    """Bytes in binary units, three significant digits ("26.0 KiB", "1.81 GiB")."""
    for unit, size in (("GiB", GIB), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(value) >= size:
            return (
                f"{value / size:.3g} {unit}"
                if abs(value) < 100 * size
                else (f"{value / size:,.0f} {unit}")
            )
    return f"{value:.0f} B"


def _count(total: int, share: float) -> str:
    per_device = total * share
    return f"{total:,} ({per_device:,.0f}/device)" if share < 1 else f"{total:,} (all on each)"


def format_plan(plan: MemoryPlan) -> str:
    """The plan as text (`MemoryPlan.table`)."""
    d = plan.num_devices
    lines = [
        f"azjax bench --memory: {plan.name} ({plan.game}) on {d} device(s)",
        f"config: self-play batch {plan.selfplay_batch_size:,}, replay capacity "
        f"{plan.replay_capacity:,} positions, learner batch {plan.learner_batch_size:,}",
        "",
        f"bytes per stored position: {format_bytes(plan.bytes_per_position)}; "
        f"per self-play game slot: {format_bytes(plan.bytes_per_slot)}; network parameters: "
        f"{format_bytes(plan.parameter_bytes)}; optimizer state: "
        f"{format_bytes(plan.optimizer_bytes)}",
        "",
        "| state (jax.eval_shape of steps.init_state) | total | per device | grows by |",
        "|:--|--:|--:|:--|",
    ]
    small = [p for p in plan.parts if p.total < 2**10 and not (p.per_position or p.per_game)]
    for part in [p for p in plan.parts if p not in small]:
        grows = []
        if part.per_position:
            grows.append(f"{format_bytes(part.per_position)} per position")
        if part.per_game:
            grows.append(f"{format_bytes(part.per_game)} per game slot")
        if (part.per_position or part.per_game) and part.total:
            grows.append(
                "split over devices"
                if part.per_device * d <= part.total * 1.01
                else "on every device"
            )
        lines.append(
            f"| {part.name} | {format_bytes(part.total)} | {format_bytes(part.per_device)} | "
            f"{', '.join(grows) or 'fixed'} |"
        )
    if small:
        lines.append(
            f"| {', '.join(p.name for p in small)} | {format_bytes(sum(p.total for p in small))} "
            f"| {format_bytes(sum(p.per_device for p in small))} | fixed |"
        )
    total = sum(part.total for part in plan.parts)
    device = sum(part.per_device for part in plan.parts)
    lines.append(f"| all | {format_bytes(total)} | {format_bytes(device)} | |")
    lines += [
        "",
        f"Compiled programs per device (XLA memory analysis on {plan.platform}: "
        f"{plan.compiled_on})",
        "",
        "| program | games/device | positions/device | arguments | outputs | aliased | temp | "
        "peak | |",
        "|:--|--:|--:|--:|--:|--:|--:|--:|:--|",
    ]
    for name, model in plan.models.items():
        for program in (*model.fitted, model.check):
            role = "fit"
            if program is model.check:
                predicted = model.predict(program.games, program.positions)
                role = (
                    f"held out: temp predicted {format_bytes(predicted.temp)} "
                    f"({model.error('temp'):+.1%}), peak {model.error('peak'):+.1%}"
                )
            lines.append(
                f"| {name} | {program.games:,.0f} | {program.positions:,.0f} | "
                f"{format_bytes(program.argument)} | {format_bytes(program.output)} | "
                f"{format_bytes(program.alias)} | {format_bytes(program.temp)} | "
                f"{format_bytes(program.peak)} | {role} |"
            )
    lines += ["", "Peak per device = c0 + cb x games/device + cn x positions/device:"]
    for name, model in plan.models.items():
        c0, cb, cn = model.peak_coefficients()
        t0, tb, tn = model.coefficients["temp"]
        lines.append(
            f"  {name}: {format_bytes(c0)} + {format_bytes(cb)}/game + {format_bytes(cn)}/position"
            f" (of which temp {format_bytes(t0)} + {format_bytes(tb)}/game + "
            f"{format_bytes(tn)}/position)"
        )
    required = plan.required()
    lines.append(
        "  the config as is: "
        + ", ".join(f"{name} {format_bytes(peak)}" for name, peak in required.items())
        + " per device"
    )
    percent = f"{plan.usable_fraction:.0%}"
    lines += [
        "",
        f"| memory per device | usable ({percent}) | largest self-play batch at "
        f"{plan.replay_capacity:,} positions | largest replay capacity at "
        f"{plan.selfplay_batch_size:,} games |",
        "|--:|--:|--:|--:|",
    ]
    for fit in plan.fits:
        batch = _count(fit.batch, plan.game_share) + (" *" if fit.batch_refused else "")
        capacity = _count(fit.capacity, plan.position_share)
        lines.append(
            f"| {format_bytes(fit.memory)} | {format_bytes(fit.usable)} | "
            f"{batch if fit.batch else 'none fits'} | "
            f"{capacity if fit.capacity else 'none fits'} |"
        )
    notes = []
    if any(fit.batch_refused for fit in plan.fits):
        notes.append(
            f"* build.make_pipeline refuses this batch at {plan.replay_capacity:,} positions "
            f"(the replay must hold the games in flight); the largest it accepts there is "
            f"{plan.max_batch_by_rule:,}."
        )
    notes.append(
        f"At {plan.selfplay_batch_size:,} games the replay must hold at least "
        f"{plan.min_capacity_by_rule:,} positions (build.make_pipeline)."
    )
    notes.append(
        f"XLA:{plan.platform.upper()}'s memory analysis estimates what the GPU/TPU compilers "
        "allocate (other fusion, scheduling, convolution workspaces; the runtime's own "
        f"memory): hence the usable {percent}. On GPU set XLA_PYTHON_CLIENT_MEM_FRACTION "
        f"to {plan.usable_fraction:.2g} (JAX preallocates 0.75 by default). Took "
        f"{plan.seconds:.0f} s."
        if plan.platform == "cpu"
        else f"XLA's memory analysis on {plan.platform}; usable {percent} of each size. "
        f"Took {plan.seconds:.0f} s."
    )
    return "\n".join(lines + [""] + notes)
