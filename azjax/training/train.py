"""Training: a run's host loop around its compiled step functions (`compiled`).

An iteration is `steps.play_step` followed by `steps.learn_step` called
`updates_per_iteration / chunk` times (`compiled.iterate`); `compiled.compile_run` jits them
once per process and config. The host loop (`host_loop`, the one populations run too) only
times, logs, gates (`gating`), evaluates, checkpoints, and stops cleanly on a signal.
"""

import contextlib
import logging
from collections.abc import Callable
from pathlib import Path

import jax
from jax.sharding import Mesh

from azjax import games, interrupt
from azjax.config.settings import Settings
from azjax.core.steps import TrainerState
from azjax.paths import bound_cloud_writes, workdir_path
from azjax.runs import checkpoint, distributed, lock
from azjax.runs.directory import prepare_workdir
from azjax.training import gating, memory_check, pretrain
from azjax.training.compiled import compile_run
from azjax.training.host_loop import HostLoop
from azjax.training.members import Member, Single
from azjax.types import UserError

_log = logging.getLogger(__name__)


def train(
    settings: Settings,
    workdir: str | Path,
    *,
    allow_config_change: bool = False,
    mesh: Mesh | None = None,
    quiet: bool = False,
    progress: str = "bar",
    callback: Callable[[dict], bool | None] | None = None,
) -> TrainerState:
    """Runs (or resumes) the experiment of `settings` in `workdir` until its iteration budget.
    (`azjax.train` takes a config and builds them.)

    Ctrl-C, SIGTERM or a notebook kernel's stop button finishes the step in flight, saves
    the last completed iteration and raises KeyboardInterrupt; rerunning on the same workdir
    resumes from there.

    With several processes (`distributed.initialize` called first, in every process, each
    then calling `train` with the same arguments) the run spans the devices of all of them:
    only process 0 writes `config.json`, metrics, TensorBoard and prints; every process
    takes part in the checkpoints. A signal or preemption notice to any process stops all
    of them at the same iteration, saved.

    Args:
      settings: the experiment's records (`build.make_settings` of its config).
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
      UserError: a bad workdir, one another run trains in (`runs.lock`), a config that
        differs from the saved one, an unreadable run, processes given different configs or
        workdirs.
      RunError: the disk is full (the last good checkpoint is named).
      KeyboardInterrupt: after saving, on a signal.
    """
    if progress not in ("bar", "lines", "none"):
        raise UserError(f"progress must be 'bar', 'lines' or 'none', not {progress!r}")
    primary = distributed.is_primary()  # the process that prints and writes the run's files
    log = (lambda *_: None) if quiet or not primary else _log.info
    workdir = workdir_path(workdir)
    with interrupt.deferred(), contextlib.ExitStack() as held:
        distributed.check_same_run(settings.config_json, workdir)
        run_settings = settings.run
        gated = run_settings.gating is not None
        if gated and distributed.process_count() > 1:
            raise UserError("train.gating does not support runs of several processes yet")
        # The run's files on cloud storage within its budget; its checkpoints' arrays, in
        # tensorstore, through the Checkpointer's own.
        bound_cloud_writes(run_settings.storage_timeout_s)
        # Checked first (nothing is made for a refused run), then again under the lock.
        prepare_workdir(settings, workdir, allow_config_change=allow_config_change, write=False)
        records, data = run_settings.records, None
        if records is not None and not (workdir / "config.json").exists():
            # A new run reads its records first: a refused record leaves no run behind.
            game = games.make(run_settings.game, **run_settings.game_kwargs)
            data = pretrain.load_records(records, game, log)
        run = compile_run(settings, mesh)
        # A state too large for memory: refused before anything is written or allocated.
        memory_check.check_state(run.init, jax.random.PRNGKey(run_settings.seed))
        held.enter_context(lock.hold(workdir, primary=primary))
        prepare_workdir(settings, workdir, allow_config_change=allow_config_change, write=primary)
        gate = None
        if gated:
            variables_sharding = run.shardings.train_state.variables
            gate = gating.make_gate(
                settings, run.pipeline, workdir, sharding=variables_sharding, log=log
            )
        member = Member.open(settings, workdir)
        start = None
        if records is not None:
            if distributed.process_count() > 1:
                raise UserError("records.path does not support runs of several processes yet")
            start = pretrain.Pretraining(
                records,
                run.pipeline,
                settings.hyper,
                workdir,
                run_settings.seed,
                run.shardings,
                log,
                data,
            )
        loop = HostLoop(
            run,
            run,
            [member],
            axis=Single(),
            log=log,
            primary=primary,
            tensorboard=not quiet,
            gate=gate,
            start=start,
        )
        with checkpoint.closing([member.checkpointer]):
            return loop.train(
                progress="none" if quiet or not primary else progress,
                callback=None if callback is None else lambda _, record: callback(record),
            )
