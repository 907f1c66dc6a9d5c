"""A memory plan to read before renting hardware: `azjax bench --memory`.

    azjax bench --memory --config experiments/go_19x19.py --devices 8
    azjax bench --memory --config go_19x19 --config.selfplay.batch_size=1024
    azjax bench --memory --all                     # every experiment in experiments/

    >>> from azjax.apps.bench import memory
    >>> plan = memory.plan(azjax.load_config("go_19x19"), num_devices=8)
    >>> print(plan.table())
    >>> plan.largest_batch(16 * 2**30), plan.required(1024, 500_000)

What it reports, for a config and D devices:

1. The run's state, from `jax.eval_shape` of `steps.init_state` (nothing is allocated): bytes
   per stored position (the replay buffer's bytes / its capacity), bytes per self-play game
   slot (the self-play state's bytes / the self-play batch), the network's parameters and the
   optimizer state; each in total and per device, per device through the shardings
   `compiled.state_shardings` gives the state on a mesh of D devices (an abstract one: no device
   is needed).
2. The compiled step programs' device memory, from XLA's memory analysis
   (`jit(...).lower(...).compile().memory_analysis()`) of `play_step` and `learn_step`
   exactly as `compiled.compile_run` jits them (`learn_step`: its three programs,
   `_learner`). With at least D devices at hand (accelerators, or CPU devices forced with
   `XLA_FLAGS=--xla_force_host_platform_device_count=D`) the real sharded program is
   compiled on a mesh of D. Otherwise the per-device share is compiled on one device: the
   self-play batch and the replay capacity times the share one device holds (1/D of a split
   state, all of a replicated one) and the learner batch / D; that program is the one each
   device runs, less the buffers of cross-device communication. A program's peak is
   arguments + outputs - aliased (donated) + temporaries + generated code.
3. A linear model of each program's peak in games per device b and stored positions per
   device n, `peak = c0 + cb * b + cn * n`: compiled at (b1, n), (b2, n), (b2, 2n), exact
   for arguments and outputs, and fitted for the temporaries (search trees, activations,
   gradients), whose error is checked against a fourth, held-out compile at (b3, n). By
   default b3 is the config's own share (at least 8; so its row is measured, not
   predicted), b2 = b3/2, b1 = b3/4 and n the config's share: compiling does not get slower
   with the batch, so there is no need to compile tiny batches and extrapolate far (at 1 or
   2 games XLA lays small programs out differently: temporaries there are off the line).
4. For 16, 40 and 80 GiB per device (`usable_fraction`, 90% by default, of each counted as
   usable), the largest self-play batch at the config's replay capacity and the largest
   replay capacity at the config's self-play batch (totals over the D devices, per device in
   brackets): both programs' peaks must fit. A batch that `build.make_pipeline` would refuse
   at that capacity (the replay must hold the positions of the games in flight) is starred.

The memory analysis of XLA:CPU is an estimate of what the GPU and TPU compilers allocate:
they fuse, schedule and choose convolution algorithms differently (cuDNN workspaces are not
in it), and the runtime needs memory of its own (the CUDA context, fragmentation). Hence the
usable fraction; on GPU, JAX preallocates 75% of the memory unless
`XLA_PYTHON_CLIENT_MEM_FRACTION` says more. The evaluation and gating matches are separate
programs, not counted here: they are smaller than self-play.
"""

import copy
import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from types import SimpleNamespace

import jax
import ml_collections
import numpy as np
from jax.sharding import AbstractMesh

from azjax import config as config_lib
from azjax.apps.bench.memory_model import (
    MEMORY_SIZES,
    PROGRAMS,
    USABLE_FRACTION,
    Fit,
    LinearModel,
    MemoryPlan,
    ProgramMemory,
    StatePart,
)
from azjax.config import build
from azjax.core import steps
from azjax.training import compiled
from azjax.types import UserError


def _nbytes(tree) -> int:
    return int(
        sum(
            np.prod(x.shape, dtype=np.int64) * np.dtype(x.dtype).itemsize
            for x in jax.tree.leaves(tree)
        )
    )


def _device_nbytes(tree, shardings) -> int:
    """Bytes of `tree` (ShapeDtypeStructs) on one device under `shardings`."""
    leaves, shards = jax.tree.leaves(tree), jax.tree.leaves(shardings)
    try:
        shapes = [s.shard_shape(x.shape) for x, s in zip(leaves, shards, strict=True)]
    except ValueError as error:  # a split axis not divisible by the devices
        raise UserError(f"the state cannot be split over the devices: {error}") from None
    return int(
        sum(
            np.prod(shape, dtype=np.int64) * np.dtype(x.dtype).itemsize
            for x, shape in zip(leaves, shapes, strict=True)
        )
    )


def sized(
    config: ml_collections.ConfigDict,
    *,
    batch: int,
    capacity: int,
    learner_batch: int | None = None,
) -> ml_collections.ConfigDict:
    """A copy of `config` with this self-play batch and replay capacity (and learner batch)."""
    config = copy.deepcopy(config)
    config.selfplay.batch_size = int(batch)
    config.replay.capacity = int(capacity)
    config.replay.min_size = min(config.replay.min_size, int(capacity))
    if learner_batch is not None:
        config.learner.batch_size = int(learner_batch)
    return config


def _accepted(config, *, batch: int, capacity: int) -> bool:
    """`build.make_pipeline` accepts this batch and capacity (the replay holds one
    iteration's positions)."""
    try:
        build.make_pipeline(sized(config, batch=batch, capacity=capacity))
    except UserError:
        return False
    return True


def _search(accept: Callable[[int], bool], start: int, *, increasing: bool, limit=2**40) -> int:
    """The largest k (increasing: `accept` holds up to k) or the smallest k (not increasing:
    `accept` holds from k on) with `accept(k)`, k >= 1, by doubling from `start` and
    bisecting; `limit` if `accept` never changes, 0 if it never holds (increasing)."""
    if increasing:
        if not accept(1):
            return 0
        low, high = 1, max(2, start)
        while accept(high):
            low, high = high, high * 2
            if high > limit:
                return limit
        while high - low > 1:  # accept(low), not accept(high)
            middle = (low + high) // 2
            low, high = (middle, high) if accept(middle) else (low, middle)
        return low
    high = max(1, start)
    while not accept(high):
        high *= 2
        if high > limit:
            raise UserError("no replay capacity is accepted for this batch")
    low = 0  # not accept(low) or low == 0
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if accept(middle) else (middle, high)
    return high


def _state(pipeline, num_devices: int):
    """The abstract state of `pipeline` and its shardings on an abstract mesh of D."""
    abstract = jax.eval_shape(functools.partial(steps.init_state, pipeline), jax.random.PRNGKey(0))
    mesh = AbstractMesh((num_devices,), ("data",))
    return abstract, compiled.state_shardings(pipeline, mesh)


def _parts(abstract, shardings) -> list[tuple[str, int, int]]:
    """(field, total bytes, bytes per device) of every field of TrainerState."""
    return [
        (
            field.name,
            _nbytes(getattr(abstract, field.name)),
            _device_nbytes(getattr(abstract, field.name), getattr(shardings, field.name)),
        )
        for field in dataclasses.fields(abstract)
    ]


def _compile(
    config, mesh, *, games: int, positions: int, learner_batch: int, log, point: str
) -> dict:
    """XLA's memory analysis of play_step and learn_step, compiled as `compiled.compile_run` jits
    them, for this (total) self-play batch, capacity and learner batch on `mesh` (`point`
    says what that is per device, for the log)."""
    config = sized(config, batch=games, capacity=positions, learner_batch=learner_batch)
    before, built = set(compiled._COMPILED), set(build._PIPELINES)
    try:
        settings = build.make_settings(config)
        run = compiled.compile_run(settings, mesh)
        abstract, keys, hyper = compiled.abstract_arguments(run, settings)
        analyses = {}
        programs = [("play_step", run.play, (abstract, hyper))]
        programs += compiled.learner_programs(run, abstract, keys, hyper)
        for name, function, args in programs:
            log(f"compiling {name} at {point}")
            analysis = function.lower(*args).compile().memory_analysis()
            if analysis is None:
                raise UserError(f"XLA gives no memory analysis on {jax.default_backend()}")
            analyses[name] = analysis
        return {"play_step": analyses["play_step"], "learn_step": _learner(analyses)}
    finally:  # the plan's compile sizes are no run's: keep train's cache as it was
        for key in set(compiled._COMPILED) - before:
            del compiled._COMPILED[key]
        for key in set(build._PIPELINES) - built:
            del build._PIPELINES[key]


def _learner(analyses: dict) -> SimpleNamespace:
    """The learner chunk's memory from its three programs': the state (`learn_begin`'s
    arguments) and the chunk's minibatches (its outputs) live through the chunk; an update
    adds the network and optimizer state it reads (the last update's output) and the one it
    writes; the largest program's temporaries; all three programs' code."""
    begin, update, end = (analyses[n] for n in ("learn_begin", "learn_update", "learn_end"))
    return SimpleNamespace(
        argument_size_in_bytes=begin.argument_size_in_bytes,
        output_size_in_bytes=begin.output_size_in_bytes + 2 * update.output_size_in_bytes,
        alias_size_in_bytes=begin.alias_size_in_bytes,
        temp_size_in_bytes=max(a.temp_size_in_bytes for a in (begin, update, end)),
        generated_code_size_in_bytes=sum(
            a.generated_code_size_in_bytes for a in (begin, update, end)
        ),
    )


def _program(name: str, analysis, *, games: float, positions: float) -> ProgramMemory:
    return ProgramMemory(
        name,
        games,
        positions,
        argument=float(analysis.argument_size_in_bytes),
        output=float(analysis.output_size_in_bytes),
        alias=float(analysis.alias_size_in_bytes),
        temp=float(analysis.temp_size_in_bytes),
        code=float(analysis.generated_code_size_in_bytes),
    )


def check_devices(config: ml_collections.ConfigDict, num_devices: int) -> None:
    """Raises `UserError` where `compiled.compile_run` would refuse `num_devices` devices."""
    if num_devices < 1:
        raise UserError(f"--devices must be at least 1, got {num_devices}")
    for key in ("selfplay.batch_size", "learner.batch_size"):
        group, field = key.split(".")
        if config[group][field] % num_devices:
            raise UserError(
                f"{key}={config[group][field]} must be divisible by {num_devices} devices"
            )


def plan(
    config: ml_collections.ConfigDict,
    num_devices: int = 8,
    *,
    batches: Sequence[int] | None = None,
    memory_sizes: Sequence[int] = MEMORY_SIZES,
    usable_fraction: float = USABLE_FRACTION,
    log: Callable[[str], None] = lambda message: None,
) -> MemoryPlan:
    """The memory plan of `config` on `num_devices` devices (see the module docstring).

    Args:
      batches: (b1, b2, b3) self-play games per device: the model is fitted at b1 and b2 and
        checked at b3 (default: a quarter, half and all of the config's share, b3 >= 8).
      memory_sizes: bytes per device to plan for.
      usable_fraction: of each memory size, the share the programs may use.
      log: progress messages (each compile).

    Raises:
      UserError: a batch size not divisible by the devices, or no memory analysis.
    """
    start = time.perf_counter()
    check_devices(config, num_devices)
    batch, capacity = config.selfplay.batch_size, config.replay.capacity
    pipeline = build.make_pipeline(config)
    abstract, shardings = _state(pipeline, num_devices)
    parts = _parts(abstract, shardings)
    # Each field's growth with capacity and batch, from the states at 2N and at (2B, 2N),
    # and so the share of the batch and of the replay that one device holds.
    longer = _parts(
        *_state(build.make_pipeline(sized(config, batch=batch, capacity=2 * capacity)), num_devices)
    )
    wider = _parts(
        *_state(
            build.make_pipeline(sized(config, batch=2 * batch, capacity=2 * capacity)), num_devices
        )
    )
    state_parts, grow_n, grow_b = [], [0, 0], [0, 0]
    for (name, total, device), (_, total_n, device_n), (_, total_b, device_b) in zip(
        parts, longer, wider, strict=True
    ):
        per_position, per_game = (total_n - total) / capacity, (total_b - total_n) / batch
        state_parts.append(StatePart(name, total, device, per_position, per_game))
        grow_n = [grow_n[0] + total_n - total, grow_n[1] + device_n - device]
        grow_b = [grow_b[0] + total_b - total_n, grow_b[1] + device_b - device_n]
    position_share = grow_n[1] / grow_n[0]
    game_share = grow_b[1] / grow_b[0] if grow_b[0] else 1 / num_devices

    # The programs: per device, compiled on the real mesh or as one device's share.
    real = jax.device_count() >= num_devices
    mesh = compiled.make_mesh(num_devices if real else 1)
    devices_compiled = mesh.devices.size
    games_share = max(1, round(batch * game_share))
    positions_share = max(1, round(capacity * position_share))
    if batches is None:
        b3 = max(games_share, 8)
        batches = (b3 // 4, b3 // 2, b3)
    b1, b2, b3 = batches
    if not (1 <= b1 < b2 and b3 >= 1 and b3 not in (b1, b2)):
        raise UserError(f"memory plan batches need 1 <= b1 < b2 and b3 apart, got {batches}")
    learner_share = config.learner.batch_size // num_devices

    def total(games_per_device: float, share: float) -> int:
        return int(round(games_per_device / share)) if real else int(games_per_device)

    # The fit's capacity: the config's share, or more where the batches b3 need more.
    def accepts(n: int) -> bool:
        return _accepted(config, batch=total(b3, game_share), capacity=total(n, position_share))

    n1 = (
        positions_share
        if accepts(positions_share)
        else _search(accepts, positions_share, increasing=False)
    )
    learner_batch = config.learner.batch_size if real else learner_share
    points = [(b1, n1), (b2, n1), (b2, 2 * n1), (b3, n1)]
    measured = {name: [] for name in PROGRAMS}
    for games, positions in points:
        analyses = _compile(
            config,
            mesh,
            games=total(games, game_share),
            positions=total(positions, position_share),
            learner_batch=learner_batch,
            log=log,
            point=f"{games:,} games and {positions:,} positions per device",
        )
        for name in PROGRAMS:
            measured[name].append(_program(name, analyses[name], games=games, positions=positions))
    models = {
        name: LinearModel.solve(name, measured[name][:3], measured[name][3]) for name in PROGRAMS
    }
    step = round(1 / game_share)  # the batch grows by whole games per device
    max_rule = step * _search(
        lambda k: _accepted(config, batch=k * step, capacity=capacity),
        max(1, batch // step),
        increasing=True,
    )
    min_rule = _search(
        lambda n: _accepted(config, batch=batch, capacity=n), capacity, increasing=False
    )
    variables = _nbytes(abstract.train_state.variables)
    compiled_on = (
        f"the sharded programs on {devices_compiled} {jax.default_backend()} devices"
        if real
        else f"one device's share on 1 {jax.default_backend()} device "
        f"({jax.device_count()} available, {num_devices} planned)"
    )
    result = MemoryPlan(
        name=config.name,
        game=config.game,
        num_devices=num_devices,
        compiled_on=compiled_on,
        platform=jax.default_backend(),
        selfplay_batch_size=batch,
        replay_capacity=capacity,
        learner_batch_size=config.learner.batch_size,
        game_share=game_share,
        position_share=position_share,
        bytes_per_position=_nbytes(abstract.buffer) / capacity,
        bytes_per_slot=_nbytes(abstract.selfplay) / batch,
        parameter_bytes=variables,
        optimizer_bytes=_nbytes(abstract.train_state) - variables,
        parts=tuple(state_parts),
        models=models,
        max_batch_by_rule=max_rule,
        min_capacity_by_rule=min_rule,
        usable_fraction=usable_fraction,
        fits=(),
        seconds=0.0,
    )
    fits = []
    for memory in memory_sizes:
        usable = memory * usable_fraction
        largest = result.largest_batch(usable)
        fits.append(
            Fit(
                memory=int(memory),
                usable=usable,
                batch=largest,
                batch_refused=largest > max_rule,
                capacity=result.largest_capacity(usable),
            )
        )
    return dataclasses.replace(result, fits=tuple(fits), seconds=time.perf_counter() - start)


def experiment_names() -> list[str]:
    """The experiments shipped with azjax, sorted."""
    return config_lib.experiment_names()


def use_cpu_devices(count: int) -> bool:
    """Asks for `count` CPU devices, so that on a CPU-only machine `plan` compiles the real
    sharded programs; possible only before jax starts its backends (False then: a notebook
    or a test that already ran jax gets the per-device share on one device)."""
    try:
        jax.config.update("jax_num_cpu_devices", max(count, 1))
    except RuntimeError:
        return False
    return True
