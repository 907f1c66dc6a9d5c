"""Training: the host loop around a run's compiled step functions (`compiled`).

An iteration is `steps.play_step` followed by `steps.learn_step` called
`updates_per_iteration / chunk` times (`compiled.iterate`); `compiled.compile_run` jits them
once per process and config. The host loop (`train`) only times, logs, gates (`gating`),
evaluates, checkpoints, and stops cleanly on a signal.
"""

import json
import math
import time
from collections.abc import Callable
from pathlib import Path

import jax
import ml_collections
import numpy as np
from jax.sharding import Mesh

from azjax import build, distributed, gating, interrupt
from azjax import config as config_lib
from azjax.build import Pipeline
from azjax.checkpoint import Checkpointer, is_disk_full, join_state, split_state
from azjax.compiled import compile_run, iterate
from azjax.config import parse_opponent_spec
from azjax.evaluation import make_evaluation
from azjax.metrics import MetricsWriter, Progress
from azjax.paths import workdir_path
from azjax.ratings import anchors
from azjax.runs import prepare_workdir
from azjax.steps import TrainerState, relayout
from azjax.trackers import Profiler
from azjax.types import Array, RunError, UserError


def iteration_record(config, state, metrics: dict, seconds: float, elapsed: float) -> dict:
    """The `metrics.jsonl` record of an iteration (before evaluation): `metrics` with the
    counters of `state` (its `iteration`, `num_games`, `num_positions`) and the times."""
    positions = config.selfplay.batch_size * config.selfplay.num_steps
    record = {"iteration": int(state.iteration), **{k: float(v) for k, v in metrics.items()}}
    record.update(
        wall_time=elapsed,
        iteration_seconds=seconds,
        positions_per_second=positions / seconds,
        games_per_second=record["games"] / seconds,
        total_games=int(state.num_games),
        total_positions=int(state.num_positions),
    )
    return record


def train(
    config: ml_collections.ConfigDict,
    workdir: str | Path,
    *,
    allow_config_change: bool = False,
    mesh: Mesh | None = None,
    quiet: bool = False,
    progress: str = "bar",
    callback: Callable[[dict], bool | None] | None = None,
) -> TrainerState:
    """Runs (or resumes) the experiment `config` in `workdir` until its iteration budget.

    Ctrl-C, SIGTERM or a notebook kernel's stop button finishes the step in flight, saves
    the last completed iteration and raises KeyboardInterrupt; rerunning on the same workdir
    resumes from there.

    With several processes (`distributed.initialize` called first, in every process, each
    then calling `train` with the same arguments) the run spans the devices of all of them:
    only process 0 writes `config.json`, metrics, TensorBoard and prints; every process
    takes part in the checkpoints. A signal or preemption notice to any process stops all
    of them at the same iteration, saved.

    Args:
      config: the experiment (`config.load_config`, or `base_config()` plus overrides).
      workdir: the run directory (a local path or a cloud URI, gs://bucket/run); an
        existing run there is resumed.
      allow_config_change: resume a run whose saved config differs in computing keys.
      mesh: the devices to shard over (default: all).
      quiet: no messages, no progress and no TensorBoard files (tests).
      progress: "bar" (a `tqdm.auto` progress bar: a widget in Jupyter), "lines" (one line
        per iteration, as `azjax train` prints) or "none".
      callback: called with each iteration's record (the `metrics.jsonl` line, evaluation
        included) after it is written; returning True stops the run there, saved, and
        `train` returns normally (early stopping from a notebook).

    Raises:
      UserError: a bad workdir, a config that differs from the saved one, an unreadable run,
        processes given different configs or workdirs.
      RunError: the disk is full (the last good checkpoint is named).
      KeyboardInterrupt: after saving, on a signal.
    """
    if progress not in ("bar", "lines", "none"):
        raise UserError(f"progress must be 'bar', 'lines' or 'none', not {progress!r}")
    primary = distributed.is_primary()  # the process that prints and writes the run's files
    log = (lambda *_: None) if quiet or not primary else print
    reporter = Progress(config, "none" if quiet or not primary else progress)
    workdir = workdir_path(workdir)
    with interrupt.deferred():
        distributed.check_same_run(config, workdir)
        if config.train.gating and distributed.process_count() > 1:
            raise UserError("train.gating does not support runs of several processes yet")
        prepare_workdir(config, workdir, allow_config_change=allow_config_change, write=primary)
        run = compile_run(config, mesh)
        hyper = build.make_hyperparams(config)
        evaluate = None
        if config.eval.every > 0 and primary:  # process 0 evaluates for all of them
            evaluate = evaluation_for(config, run.pipeline)
        gate = None
        if config.train.gating:
            variables_sharding = run.shardings.train_state.variables
            gate = gating.make_gate(
                config, run.pipeline, workdir, sharding=variables_sharding, log=log
            )
        state = run.init(jax.random.PRNGKey(config.seed))
        checkpointer = Checkpointer(
            workdir,
            max_to_keep=config.train.keep_checkpoints,
            save_interval_steps=config.train.checkpoint_every,
        )
        try:
            return _loop(
                config,
                workdir,
                run,
                hyper,
                evaluate,
                state,
                checkpointer,
                log,
                reporter,
                callback,
                gate=gate,
                tensorboard=not quiet,
                primary=primary,
            )
        except RunError:
            raise
        except Exception as error:
            if not is_disk_full(error):
                raise
            steps = checkpointer.all_steps()
            raise RunError(
                f"the disk is full ({str(error).splitlines()[0][:120]}); "
                + (
                    f"the last good checkpoint is iteration {steps[-1]}"
                    if steps
                    else "no checkpoint"
                )
            ) from None
        finally:
            checkpointer.close()


_EVALUATIONS: dict = {}


def evaluation_for(config, pipeline: Pipeline):
    """The run's evaluation, shared between runs of this process with the same settings."""
    key = ("eval", config_lib.pipeline_key(config), config_lib.evaluation_key(config))
    # A `workdir:` opponent is read from disk: its checkpoint may have changed since.
    if any(parse_opponent_spec(s)[0] == "workdir" for s in config.eval.opponents):
        _EVALUATIONS.pop(key, None)
    if key not in _EVALUATIONS:
        searcher = build.make_agent_searcher(config, pipeline.game, pipeline.network)
        _EVALUATIONS[key] = make_evaluation(
            pipeline.game,
            searcher,
            opponents=tuple(config.eval.opponents),
            num_games=config.eval.num_games,
            seed=config.seed,
            elo=anchors.settings(config),
        )
    return _EVALUATIONS[key]


def _loop(
    config,
    workdir,
    run,
    hyper,
    evaluate,
    state,
    checkpointer,
    log,
    reporter,
    callback,
    *,
    gate,
    tensorboard,
    primary=True,
):
    # With several processes every process runs this loop in step: the same jitted calls and
    # collectives in the same order. Process 0 alone writes files, prints and evaluates (on
    # its own devices, from a host copy of the replicated network); decisions that could
    # differ between processes (a signal, the clock) are agreed on (`distributed`).
    multiprocess = distributed.process_count() > 1
    had_checkpoints = bool(checkpointer.all_steps())
    restored = checkpointer.restore_newest(*split_state(state))
    if restored is None and had_checkpoints:
        raise UserError(
            f"no readable checkpoint in {checkpointer.directory} (the damaged ones are in "
            f"{workdir / 'checkpoints_damaged'}); start over with another --workdir"
        )
    history = None
    if restored is not None:
        state = jax.device_put(join_state(state, restored.params, restored.trainer), run.shardings)
        state = relayout(state, run.shardings, run.pipeline.num_shards)  # another device count
        history = restored.metrics
        log(f"resuming {workdir} from iteration {restored.step}")
    start_iteration = int(state.iteration)
    writer = MetricsWriter(
        workdir,
        history=history,
        resume_iteration=start_iteration,
        tensorboard=tensorboard and primary,
        files=primary,
        config=config,
    )
    profiler = Profiler(config.train.profile, workdir) if primary else None

    def evaluation_variables(state: TrainerState):
        variables = state.train_state.variables
        return distributed.to_host(variables) if multiprocess else variables

    if evaluate is not None:  # `previous` until the next evaluation; the ladders' levels
        evaluate.begin(evaluation_variables(state), writer.records, workdir)
    if gate is not None:
        gate.begin(state.train_state.variables, start_iteration, writer.records)
    saved = json.loads(config_lib.to_json(config))
    log(
        f"training {config.game} in {workdir} on {run.mesh.devices.size} "
        f"{jax.devices()[0].platform} device(s); first iteration compiles"
    )
    # Wall-clock time of the run: everything since this session's loop began (compiling,
    # self-play, learning, evaluation, checkpoints) plus the sessions before a resume.
    session_start, resumed_elapsed = time.perf_counter(), float(state.elapsed)

    def clock() -> float:
        return resumed_elapsed + time.perf_counter() - session_start

    def put_elapsed(seconds: float) -> Array:
        # Same sharding as the step's output, so the next call hits the compilation cache;
        # process 0's clock on every process (a global array holds one value everywhere).
        return jax.device_put(np.float32(distributed.agree(seconds)), run.shardings.elapsed)

    def save(state: TrainerState, *, force: bool) -> None:
        writer.sync()
        params, rest = split_state(state)
        # The previous save wrote in the background during this iteration; orbax would wait
        # for it anyway, and a second signal then never finds it half-written.
        checkpointer.wait()
        checkpointer.save(
            int(state.iteration), params, rest, config=saved, metrics=writer.records, force=force
        )
        if gate is not None:
            gate.prune(checkpointer.all_steps(), writer.records)

    deadline = math.inf if config.train.max_minutes <= 0 else 60.0 * config.train.max_minutes
    saved_iteration, elapsed = start_iteration, clock()
    session_iterations, stopped_by_callback = 0, False
    interrupted = preempted = False
    reporter.start(start_iteration)
    try:
        while int(state.iteration) < config.train.num_iterations and not preempted:
            # A stop that any process wants, all processes make (one process alone would
            # leave the others waiting in the next collective).
            interrupted, stopped_by_callback, out_of_time = distributed.any_process(
                bool(interrupt.requested()), stopped_by_callback, elapsed >= deadline
            )
            if interrupted or stopped_by_callback or out_of_time:
                break
            started = time.perf_counter()
            if profiler is not None:
                profiler.before(int(state.iteration) + 1)
            best = None if gate is None else gate.variables  # self-play's network when gated
            next_state, metrics = iterate(run, state, hyper, best)
            if next_state is None:
                break
            metrics = distributed.to_host(metrics)
            if profiler is not None:
                profiler.after(int(next_state.iteration))
            seconds = time.perf_counter() - started
            elapsed = clock()
            state = next_state.replace(elapsed=put_elapsed(elapsed))
            iteration = int(state.iteration)
            record = iteration_record(config, state, metrics, seconds, elapsed)
            if gate is not None:  # the gating match, when due, before evaluating
                record.update(gate(state.train_state.variables, iteration))
                elapsed = clock()
                record.update(wall_time=elapsed)
                state = state.replace(elapsed=put_elapsed(elapsed))
            if config.eval.every > 0 and iteration % config.eval.every == 0:
                eval_started = time.perf_counter()
                if evaluate is not None:  # None on processes other than 0
                    record.update(evaluate(evaluation_variables(state), iteration))
                elapsed = clock()
                record.update(wall_time=elapsed, eval_seconds=time.perf_counter() - eval_started)
                state = state.replace(elapsed=put_elapsed(elapsed))
            record = writer.write(record)
            session_iterations += 1
            # Time per iteration in this session (compiling included) times those left, or
            # the time to `train.max_minutes` if that comes first.
            remaining = config.train.num_iterations - iteration
            eta = remaining * (elapsed - resumed_elapsed) / session_iterations
            reporter.update(record, min(eta, deadline - elapsed))
            if callback is not None:
                stopped_by_callback = bool(callback(record))
            # orbax decides: every `train.checkpoint_every` iterations, and at the iteration
            # where all processes stop after a preemption notice (SIGTERM to any host of a
            # multi-host run); asked at every iteration, as the preemption sync point needs.
            if checkpointer.should_save(iteration):
                save(state.replace(elapsed=put_elapsed(clock())), force=False)
                saved_iteration = iteration
            preempted = checkpointer.reached_preemption(iteration)
            elapsed = clock()
        if not multiprocess:
            interrupted = bool(interrupt.requested())
        if int(state.iteration) != saved_iteration:
            save(state, force=True)
            saved_iteration = int(state.iteration)
        if not checkpointer.wait():  # the checkpoints folder vanished under the last save
            save(state, force=True)
            checkpointer.wait()
    finally:
        reporter.close()
        writer.close()
        if profiler is not None:
            profiler.close()
    if stopped_by_callback:
        log(f"stopped by the callback at iteration {saved_iteration}; saved in {workdir}")
    if preempted:
        log(
            f"preempted: saved iteration {saved_iteration} in {workdir}; "
            "run the same command again to resume"
        )
        raise KeyboardInterrupt
    if interrupted:
        if checkpointer.all_steps():
            log(
                f"interrupted: saved iteration {saved_iteration} in {workdir}; "
                "run the same command again to resume"
            )
        else:
            log(f"interrupted before the first iteration finished; nothing saved in {workdir}")
        raise KeyboardInterrupt
    log(
        f"done: {int(state.iteration):,} iterations, {int(state.num_games):,} games, "
        f"{elapsed / 60:.1f} min; checkpoints in {workdir / 'checkpoints'}"
    )
    return state
