"""A sweep's worker: asks Optuna for trials, trains each as an ordinary run, tells the result.

`run_sweep` is what `azjax sweep` runs, on one or many hosts at once: Optuna's ask-and-tell
interface, with azjax's own loop around it. Each trial trains in `WORKDIR/trial_NNNN` (its
config is the base config with the trial's parameters set and `name` ending in
`trial_NNNN`), so `azjax evaluate`, `plot` and `load_agent` work on it. What the worker
tells Optuna of it (its evaluations for the pruner, its final value) is `tell`'s.

The study holds `--trials N` trial directories in all, whichever workers fill them. Nothing is
lost and nothing runs twice: see `liveness` for workers that die, and `_Worker._ask` for two
workers asking at the same moment. With `population=K` the worker asks K trials at a time and
trains those with one pipeline (`config.pipeline_key`) as one population
(`population.train_population`), optionally with population-based training.
"""

import logging
import math
import time
from pathlib import Path

import ml_collections
import optuna
from optuna.trial import TrialState

from azjax import compile_cache, interrupt
from azjax import config as config_lib
from azjax.apps import api
from azjax.apps.sweeps import liveness, pod
from azjax.apps.sweeps import space as space_lib
from azjax.apps.sweeps import storage as storage_lib
from azjax.apps.sweeps import study as study_lib
from azjax.apps.sweeps.report import format_value, summary
from azjax.apps.sweeps.tell import Teller, Trial
from azjax.config import TUNABLE_KEYS, build
from azjax.paths import workdir_path
from azjax.runs import distributed
from azjax.training import pbt as pbt_lib
from azjax.types import UserError

_log = logging.getLogger(__name__)


def trial_directory(workdir: Path, root: int) -> Path:
    """The run directory of the trial `root` (a cloud URI where the sweep's is one)."""
    return workdir_path(workdir) / f"trial_{root:04d}"


def run_sweep(
    config: ml_collections.ConfigDict,
    space: space_lib.Space,
    workdir: str | Path,
    *,
    trials: int,
    storage: str | None = None,
    study_name: str | None = None,
    population: int = 1,
    pbt_every: int | None = None,
    heartbeat: float = 30.0,
    grace: float | None = None,
    progress: str = "bar",
    quiet: bool = False,
    space_text: str | None = None,
) -> optuna.Study:
    """Runs trials of the study in `workdir` until it holds `trials` finished trials.

    Several processes (on one host with the journal file, on many with a database `storage`)
    may run this at once on one study; each asks for the next trial when it is free. Ctrl-C
    or SIGTERM saves the trial in training, puts it back in the queue and raises
    KeyboardInterrupt; running it again resumes.

    Args:
      config: the base experiment (`config.load_config` plus overrides).
      space: what to search (`space.load_space`).
      workdir: the sweep directory (trial_NNNN/ run directories, sweep.json, the journal):
        a path, or a cloud URI (gs://bucket/sweeps/c4) with a database `storage`.
      trials: how many trials (directories) the study should hold in all, across workers.
      storage: a database URL (postgresql://user@host/db) shared by workers on many hosts;
        None: the journal file `WORKDIR/study.journal` (a local or shared file system only).
      study_name: the study's name (default: the workdir's name).
      population: train up to this many trials at a time as one population.
      pbt_every: population-based training every this many iterations (population >= 4).
      heartbeat: seconds between the liveness marks of a running trial.
      grace: seconds without a mark after which a running trial counts as abandoned
        (default: 3 heartbeats).
      progress: train's progress display: "bar", "lines" or "none".
      quiet: no messages (tests).
      space_text: the space file's text, copied to WORKDIR/space.py at the first start.

    Returns:
      The Optuna study.

    Raises:
      UserError: bad input (space, objective, storage, arguments, another sweep's workdir, a
        cloud workdir with no database), before any trial starts.
      KeyboardInterrupt: after a signal, the trial in training saved and re-queued.
    """
    if trials < 1 or population < 1 or heartbeat <= 0 or (grace is not None and grace <= 0):
        raise UserError("sweep: --trials and --population must be >= 1, --heartbeat > 0")
    if pbt_every is not None and population < 4:
        raise UserError("sweep: --pbt needs --population of at least 4")
    storage_lib.check_storage(workdir, storage)
    if not distributed.is_primary():  # a pod's other processes train what process 0 shares
        pod.follow()
        return None
    log = (lambda *_: None) if quiet else _log.info
    workdir = workdir_path(workdir)
    space = space_lib.check(space, config)
    pbt = None
    if pbt_every is not None:
        # PBT explores the space's scalar keys (the trials' starting points come from the
        # sampler); shape-changing keys stay as the sampler drew them.
        explored = tuple(key for key in space.params if key in TUNABLE_KEYS)
        pbt = pbt_lib.PBT(
            every=pbt_every,
            objective=space.objective,
            direction=space.direction,
            keys=explored or ("learner.learning_rate",),
        )
        settings = build.make_settings(config)
        pbt = pbt.check([settings, settings])
    if space.sampler == "grid":
        size = math.prod(len(values) for values in space.grid().values())
        if trials > size:
            log(f"the grid has {size} points: {size} trials, not {trials}")
            trials = size
    workdir.mkdir(parents=True, exist_ok=True)
    study, store = study_lib.open_study(config, space, workdir, storage, study_name, space_text)
    ratings = study_lib.shared_anchor_ratings(config, space, workdir, study, quiet=quiet)
    if ratings is not None:
        config = ml_collections.ConfigDict(config.to_dict())
        config.eval.elo_ratings = str(ratings)
    worker = _Worker(
        study,
        store,
        space,
        config,
        workdir,
        trials=trials,
        pbt=pbt,
        population=population,
        heartbeat=heartbeat,
        grace=3 * heartbeat if grace is None else grace,
        progress=progress,
        quiet=quiet,
        log=log,
    )
    quiet_optuna = study_lib.quiet_optuna()
    with quiet_optuna, interrupt.deferred(), liveness.Heartbeat(store, heartbeat) as beat:
        worker.run(beat)
    return study


class _Worker:
    """The loop of one worker process."""

    def __init__(self, study, store, space, config, workdir, *, trials, pbt, population,
                 heartbeat, grace, progress, quiet, log):  # fmt: skip
        self.study, self.store, self.space, self.config = study, store, space, config
        self.workdir, self.trials, self.pbt, self.population = workdir, trials, pbt, population
        self.heartbeat, self.grace, self.progress, self.quiet = heartbeat, grace, progress, quiet
        self.log, self.objective = log, space.objective
        self.distributions = space.distributions()
        self.beat: liveness.Heartbeat | None = None
        self.teller = Teller(study, store, space.objective, workdir, log)
        self._followers_waiting = True  # a pod's other processes wait for a batch (`pod`)

    def run(self, beat: liveness.Heartbeat) -> None:
        self.beat = beat
        waiting_logged, interrupted = False, False
        try:
            while True:
                self._check_interrupt()
                self._adopt_abandoned()
                batch = self._ask(self.population)
                if batch:
                    self._train(batch)
                    waiting_logged = False
                    continue
                running = self._trials(TrialState.RUNNING)
                if not running:
                    break
                if not waiting_logged:
                    numbers = ", ".join(str(liveness.root_number(t)) for t in running)
                    self.log(f"waiting for trials {numbers} running in other workers")
                    waiting_logged = True
                self._sleep(self.heartbeat)
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            if self._followers_waiting:
                pod.release(interrupted=interrupted)
            self.teller.close()
        self.log(summary(self.study, self.objective))

    def _check_interrupt(self) -> None:
        if interrupt.requested():
            raise KeyboardInterrupt

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._check_interrupt()
            time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))

    def _trials(self, *states: TrialState) -> list:
        """The study's trials in `states` (every state if none), surplus ones left out."""
        trials = self.study.get_trials(deepcopy=False, states=states or None)
        return [t for t in trials if not t.user_attrs.get(liveness.SURPLUS)]

    def _roots(self) -> list:
        """The trials that own a directory (first attempts, surplus ones left out)."""
        return [t for t in self._trials() if not liveness.is_retry(t)]

    def _adopt_abandoned(self) -> None:
        for trial in self._trials(TrialState.RUNNING):
            reason = liveness.abandoned(trial, grace=self.grace)
            if reason is None:
                continue
            claimed = liveness.claim(
                self.store, trial, grace=self.grace, lock=storage_lib.locked(self.workdir)
            )
            if claimed is not None:
                liveness.requeue(self.study, claimed)
                self.log(
                    f"trial {liveness.root_number(claimed)} was abandoned ({reason}); "
                    "queued to resume from its checkpoint"
                )

    def _ask(self, count: int) -> list[Trial]:
        """Up to `count` trials: re-queued ones first, new ones while the study has fewer
        than `trials` directories."""
        batch = []
        while len(batch) < count and not interrupt.requested():
            waiting = self._trials(TrialState.WAITING)
            if not waiting and len(self._roots()) >= self.trials:
                break
            trial = self.study.ask(self.distributions)
            frozen = self.store.get_trial(trial._trial_id)
            if not liveness.is_retry(frozen):
                # Two workers asking at once may both create a trial: the later ones beyond
                # N (by number) are surplus, told FAIL and left out of every count.
                earlier = sum(t.number < frozen.number for t in self._roots())
                if earlier >= self.trials:
                    trial.set_user_attr(liveness.SURPLUS, True)
                    self.study.tell(trial, state=TrialState.FAIL)
                    break
            started = self._start(trial, frozen)
            if started is not None:
                batch.append(started)
        return batch

    def _start(self, trial: optuna.Trial, frozen) -> Trial | None:
        """The trial's config and directory, or None when the config refuses its values."""
        self.beat.start(trial._trial_id)
        root = liveness.root_number(frozen)
        directory = trial_directory(self.workdir, root)
        params = dict(frozen.params)
        try:
            config = space_lib.apply(self.config, params)
            config.name = f"{self.config.name}_{directory.name}"
        except UserError as error:
            self._fail(trial, f"{error}")
            self.log(f"trial {root}: {error}")
            return None
        shown = ", ".join(f"{k}={format_value(v)}" for k, v in params.items())
        again = " (resuming)" if liveness.is_retry(frozen) else ""
        self.log(f"trial {root}{again}: {shown} in {directory}")
        return Trial(trial, root, params, config, directory)

    def _train(self, batch: list[Trial]) -> None:
        groups: dict[str, list[Trial]] = {}
        for item in batch:
            groups.setdefault(config_lib.pipeline_key(item.config), []).append(item)
        try:
            for group in groups.values():
                self._check_interrupt()
                self._train_group(group)
        except KeyboardInterrupt:
            for item in batch:
                if not item.finished:
                    self._requeue_own(item)
            raise

    def _train_group(self, group: list[Trial]) -> None:
        live = []
        for item in group:
            if self.teller.replay(item):
                live.append(item)
            else:
                self._finish(item)
        if not live:
            return
        compile_cache.release(above=compile_cache.RELEASE_ABOVE)  # the last trials' programs
        pod.share([i.config for i in live], [i.directory for i in live], self.pbt)
        self._followers_waiting = False
        try:
            if len(live) == 1:
                item = live[0]
                api.train(
                    item.config,
                    item.directory,
                    quiet=self.quiet,
                    progress=self.progress,
                    callback=lambda record: self._observe(item, record),
                )
            else:
                api.train_population(
                    [item.config for item in live],
                    [item.directory for item in live],
                    quiet=self.quiet,
                    progress=self.progress,
                    callback=lambda member, record: self._observe(live[member], record),
                    pbt=self.pbt,
                )
        except KeyboardInterrupt:
            raise
        except Exception as error:  # a NaN, a full disk, a config the run refuses: not retried
            self._followers_waiting = True
            message = " ".join(f"{type(error).__name__}: {error}".split())[:500]
            for item in live:
                self._fail(item.trial, message)
                item.finished = True
            _log.warning(
                "azjax: trial %s failed: %s", ", ".join(str(i.root) for i in live), message
            )
            return
        self._followers_waiting = True
        for item in live:
            self._finish(item)

    def _observe(self, item: Trial, record: dict) -> bool:
        """Train's callback: reports the objective; True stops the trial (pruned, or lost)."""
        if self.beat.lost(item.trial._trial_id):
            item.lost = True
            return True
        return self.teller.observe(item, record)

    def _finish(self, item: Trial) -> None:
        item.finished = True
        self.beat.stop(item.trial._trial_id)
        self.teller.finish(item)

    def _fail(self, trial: optuna.Trial, message: str) -> None:
        self.beat.stop(trial._trial_id)
        self.teller.fail(trial, message)

    def _requeue_own(self, item: Trial) -> None:
        """This worker stops: its trial goes back to the queue at once, to resume later."""
        self.beat.stop(item.trial._trial_id)
        self.teller.requeue(item)
