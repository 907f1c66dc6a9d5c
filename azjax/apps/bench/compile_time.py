"""Where a run's start goes: `azjax bench --compile --config EXP`.

Each program of the run (`init`, `play_step` and the learner's `learn_begin`, `learn_update`
and `learn_end`, jitted as `compiled.compile_run` jits them) is traced and lowered to
StableHLO (JAX, in Python), then compiled by XLA; both are timed once, in this process, and
the table gives them with the size of the optimized program (HLO instructions). With JAX's
persistent compilation cache on, a program found there is read instead of compiled (the
command says so). A chunk of `build.learn_chunk` updates calls `learn_update` once per
update, between one `learn_begin` and one `learn_end`. For games pgx has, a plain pgx + mctx
+ Flax self-play step of the same network, search, batch and plies (`pgx.plain_play_step`)
is timed the same way: what the play step would cost to compile written without azjax.
"""

import sys
import time
from typing import NamedTuple

import jax

from azjax import config as config_lib
from azjax.apps.bench import pgx
from azjax.config import build
from azjax.training import compiled


class CompileTime(NamedTuple):
    program: str
    trace_s: float  # tracing and lowering to StableHLO (Python)
    compile_s: float  # XLA's compile of the lowered program
    instructions: int  # instructions of the optimized HLO


def time_compile(program: str, function, *args) -> CompileTime:
    """Traces, lowers and compiles the jitted `function` at `args` (arrays or shapes)."""
    started = time.perf_counter()
    lowered = function.trace(*args).lower()
    traced = time.perf_counter()
    executable = lowered.compile()
    done = time.perf_counter()
    text = executable.as_text() or ""
    instructions = sum(" = " in line for line in text.splitlines())
    return CompileTime(program, traced - started, done - traced, instructions)


def measure(config, *, log=print) -> list[CompileTime]:
    """The run's three programs, then the plain reference where pgx has the game."""
    settings = build.make_settings(config)
    run = compiled.compile_run(settings)
    key = jax.random.PRNGKey(config.seed)
    rows = [time_compile("init", run.init, key)]
    log(f"init: {rows[-1].trace_s + rows[-1].compile_s:.1f} s")
    state, chunk_keys, hyper = compiled.abstract_arguments(run, settings)
    programs = [("play_step", run.play, (state, hyper))]
    programs += compiled.learner_programs(run, state, chunk_keys, hyper)
    for name, function, args in programs:
        if name == "learn_update":
            name += f" ({run.pipeline.chunk} calls a chunk)"
        rows.append(time_compile(name, function, *args))
        log(f"{name}: {rows[-1].trace_s + rows[-1].compile_s:.1f} s")
    plain = pgx.plain_play_step(config)
    if isinstance(plain, str):
        log(f"no plain reference: {plain}")
    else:
        function, args = plain
        rows.append(time_compile("plain pgx + mctx + Flax play step", function, *args))
    return rows


def format_rows(config, rows: list[CompileTime]) -> str:
    device = jax.devices()[0]
    lines = [
        f"compile time: {config.name} ({config.game}), {config.network.channels} channels x "
        f"{config.network.num_blocks} blocks, {config.search.algorithm} "
        f"{config.search.num_simulations} simulations, {config.selfplay.batch_size} games x "
        f"{config.selfplay.num_steps} plies, on {device.platform} ({device.device_kind})",
        f"{'program':<38} {'trace (s)':>9} {'XLA (s)':>8} {'HLO instructions':>17}",
    ]
    for row in rows:
        lines.append(
            f"{row.program:<38} {row.trace_s:>9.1f} {row.compile_s:>8.1f} {row.instructions:>17,}"
        )
    return "\n".join(lines)


def main(args, overrides) -> int:
    config = config_lib.load_config(args.config)
    config_lib.apply_overrides(config, overrides)
    if jax.config.jax_compilation_cache_dir:
        print(
            f"note: JAX's persistent compilation cache is on "
            f"({jax.config.jax_compilation_cache_dir}): a program found there is read, not "
            "compiled; unset JAX_COMPILATION_CACHE_DIR to time compiles",
            file=sys.stderr,
        )
    print(format_rows(config, measure(config)))
    return 0
