"""The memory plan as text, and `azjax bench --memory` (the plan itself: `bench.memory`)."""

import sys

from azjax import config as config_lib
from azjax.bench import memory
from azjax.bench.memory_model import GIB, MemoryPlan
from azjax.types import UserError


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
    """The plan as text (see `MemoryPlan.table`)."""
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


def main(args, overrides: dict[str, str]) -> int:
    """`azjax bench --memory`: prints the plan of `--config` or of every experiment."""
    named = args.config or args.game  # an experiment file, or a name in experiments/
    if args.all and named:
        raise UserError("--all plans every experiment: leave out --config and --game")
    sources = [named] if named else memory.experiment_names()
    if not sources:
        raise UserError(f"no experiment in {config_lib.REPO_ROOT / 'experiments'}")
    configs = []
    for source in sources:  # every config checked before the first compile
        config = config_lib.load_config(source)
        config_lib.apply_overrides(config, overrides)
        memory.check_devices(config, args.devices)
        configs.append(config)

    def log(message: str) -> None:
        print(f"  {message}", file=sys.stderr, flush=True)

    memory.use_cpu_devices(args.devices)
    for index, config in enumerate(configs):
        log(f"planning {config.name} for {args.devices} device(s)")
        result = memory.plan(config, args.devices, log=log)  # via the module: tests patch it
        print(("\n\n" if index else "") + result.table(), flush=True)
    return 0
