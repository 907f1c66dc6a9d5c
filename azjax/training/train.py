"""Training: a run's host loop around its compiled step functions (`compiled`).

An iteration is `steps.play_step` followed by `steps.learn_step` called
`updates_per_iteration / chunk` times (`compiled.iterate`); `compiled.compile_run` jits them
once per process and config. The host loop (`host_loop`, the one populations run too) only
times, logs, gates (`gating`), evaluates, checkpoints, and stops cleanly on a signal.
"""

import contextlib
import functools
import logging
from collections.abc import Callable
from pathlib import Path

import jax
from jax.sharding import Mesh

from azjax import games, interrupt
from azjax.config import saved
from azjax.config.keys import RESUMABLE_KEYS
from azjax.config.settings import Settings
from azjax.core.steps import TrainerState, init_state
from azjax.paths import bound_cloud_writes, workdir_path
from azjax.runs import checkpoint, distributed, lock
from azjax.runs.directory import list_checkpoints, prepare_workdir
from azjax.runs.export_state import CONFIG, Export
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
    resume_from: str | Path | None = None,
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
      resume_from: an export (`azjax export-state`, `runs.export_state`) that a `workdir`
        without checkpoints starts from: its network, optimizer state, RNG key, counters and
        records, with an empty replay and self-play games at their start (iterations go on
        from the export's). A workdir whose checkpoints continue the export resumes from
        them as any run does.

    Raises:
      UserError: a bad workdir, one another run trains in (`runs.lock`), a config that
        differs from the saved one, an unreadable run, processes given different configs or
        workdirs; `resume_from` not an export, of another config (as a resumed run's
        changes are checked) or shape, or `workdir` holding checkpoints of another run.
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
        origin = None
        if resume_from is not None:
            origin = _origin(settings, workdir, resume_from, allow_config_change, log)
        records, data = run_settings.records, None
        if resume_from is not None:  # a run resumed: no pretraining on the records
            records = None
        if records is not None and not (workdir / "config.json").exists():
            # A new run reads its records first: a refused record leaves no run behind.
            game = games.make(run_settings.game, **run_settings.game_kwargs)
            data = pretrain.load_records(records, game, log)
        run = compile_run(settings, mesh)
        # A state too large for memory: refused before anything is written or allocated.
        memory_check.check_state(run.init, jax.random.PRNGKey(run_settings.seed))
        held.enter_context(lock.hold(workdir, primary=primary))
        prepare_workdir(settings, workdir, allow_config_change=allow_config_change, write=primary)
        if origin is not None and primary:
            origin.install(workdir)  # a gated run's best network
        gate = None
        if gated:
            variables_sharding = run.shardings.train_state.variables
            gate = gating.make_gate(
                settings, run.pipeline, workdir, sharding=variables_sharding, log=log
            )
        member = Member.open(settings, workdir, origin=origin)
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


def _origin(
    settings: Settings, workdir: Path, resume_from, allow_config_change: bool, log
) -> Export | None:
    """The export `resume_from` that `workdir` starts from, checked against `settings`; None
    where `workdir`'s checkpoints continue it already (it resumes from them).

    Raises:
      UserError: not an export; a config that differs from the export's in a key a resumed
        run may not change (without `allow_config_change`); arrays of other shapes; or
        `workdir` holding checkpoints of another run.
    """
    origin = Export.open(resume_from)
    steps = list_checkpoints(workdir) if (workdir / "checkpoints").is_dir() else []
    if steps:
        if not origin.continued_in(workdir):
            raise UserError(
                f"{workdir} holds checkpoints of a run not resumed from {resume_from}: "
                "name a new --workdir to resume from the export"
            )
        log(f"{workdir} already resumed from {resume_from}; resuming from its checkpoints")
        return None
    differences = saved.differences(origin.path / CONFIG, settings.config_json)
    if differences and not allow_config_change:
        raise UserError(
            f"the export {resume_from} holds a run with a different config ("
            + "; ".join(differences)
            + f"); a resumed run may change only {', '.join(RESUMABLE_KEYS)}: pass "
            "--allow-config-change to resume anyway"
        )
    # The shapes before anything compiles: a run of another game or network is refused.
    origin.seed(
        jax.eval_shape(functools.partial(init_state, settings.pipeline), jax.random.PRNGKey(0))
    )
    return origin
