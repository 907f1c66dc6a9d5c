"""Where a run's records go besides `metrics.jsonl`: the trackers of `train.loggers`, and
the profiler of `train.profile`.

    --config.train.loggers="('tensorboard', 'wandb', 'mlflow')"
    --config.train.profile="(3, 4)"      # a jax.profiler trace of iterations 3 and 4

  tensorboard  scalars in WORKDIR/tensorboard, and at a run's start its config as text and
               as HParams (TensorBoard's text and HParams views); on cloud storage written
               locally and copied to the bucket after each record
  wandb        Weights & Biases (`pip install 'azjax[wandb]'`): one W&B run per azjax run
               (its id kept in WORKDIR/trackers.json, so a resumed run logs on), the config
               as its config; WANDB_MODE=offline writes it under WORKDIR/wandb, no account
  mlflow       MLflow (`pip install 'azjax[mlflow]'`): one MLflow run per azjax run in the
               experiment named after the config, at `train.mlflow_uri` (default: a SQLite
               store, WORKDIR/mlflow.db), the config as params; metric names with ':'
               (`eval/mcts:200/score`) are logged with '_' (MLflow refuses ':')

Every tracker gets each record once, from the iteration after the one a run resumed from
(records of iterations an interrupted session logged again are skipped by the tracker:
W&B steps only increase, MLflow keeps both values of a step).

W&B and MLflow answer within `TRACKER_TIMEOUT_S`: at a run's start one that cannot (no
login, no server, a store MLflow refuses) is one line before the first iteration; an MLflow
store that stops answering mid-run is one warning, and the run goes on without it.
"""

import contextlib
import json
import logging
import math
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import jax

from azjax import extras
from azjax.config.keys import LOGGERS, flatten
from azjax.config.settings import Settings, TrackerSettings
from azjax.faults import first_line
from azjax.paths import copy_tree, is_local, read_json, workdir_path
from azjax.types import UserError

__all__ = ["LOGGERS", "Profiler", "open_trackers", "require_extras"]

_log = logging.getLogger(__name__)

IDS_FILE = "trackers.json"  # the W&B and MLflow run ids of a run, for resuming
TRACKER_TIMEOUT_S = 30  # how long W&B and MLflow may take to answer (MLflow: each request)


def _scalars(record: dict) -> dict[str, float]:
    return {
        k: float(v)
        for k, v in record.items()
        if k != "iteration" and isinstance(v, int | float) and math.isfinite(v)
    }


def _flat_config(config_json: str) -> dict:
    """The config (its JSON form) as one level of `group.key` names; tuples as text."""
    flat = flatten(json.loads(config_json))
    return {k: (v if isinstance(v, bool | int | float | str) else str(v)) for k, v in flat.items()}


class TensorBoard:
    """TensorBoard event files in WORKDIR/tensorboard (tensorboardX).

    On cloud storage the events are written to a local folder and copied to the bucket after
    each record (whole files, as tensorboardX's own gs:// writer uploads them): the copy goes
    through gcsfs in this thread, so a bucket that stops answering is one error here, not a
    traceback in tensorboardX's writer thread or at exit.
    """

    def __init__(self, workdir, resume_iteration: int, config_json: str | None = None):
        from tensorboardX import SummaryWriter  # noqa: PLC0415  (slow import)

        folder = workdir_path(workdir) / "tensorboard"
        self._bucket, self._local = (None, None) if is_local(folder) else (folder, None)
        if self._bucket is not None:
            self._local = Path(tempfile.mkdtemp(prefix="azjax-tensorboard-"))
            folder = self._local
        purge = {"purge_step": resume_iteration + 1} if resume_iteration > 0 else {}
        # Event files are named by the second they were opened in; a session resuming within
        # the same second would overwrite the last one without this suffix, which also keeps
        # such files in iteration order.
        self.writer = SummaryWriter(
            str(folder), filename_suffix=f".from{resume_iteration:09d}", **purge
        )
        if config_json is not None and resume_iteration == 0:
            from tensorboardX.summary import hparams  # noqa: PLC0415

            text = json.dumps(json.loads(config_json), indent=2)
            self.writer.add_text("config", f"```\n{text}\n```", 0)
            # HParams: the settings, and the scalar to compare runs by (logged as usual), in
            # this run's own events (`add_hparams` would write them to a folder of its own,
            # which TensorBoard shows as another run, without this run's scalars).
            for summary in hparams(_flat_config(config_json), {"eval/elo": math.nan}):
                self.writer.file_writer.add_summary(summary, 0)
            self.writer.flush()
            self._upload()

    def _upload(self) -> None:
        if self._bucket is not None:
            bucket, self._bucket = self._bucket, None  # not again after a failed copy
            copy_tree(self._local, bucket)
            self._bucket = bucket

    def log(self, record: dict) -> None:
        for key, value in _scalars(record).items():
            self.writer.add_scalar(key, value, record["iteration"])
        self.writer.flush()
        self._upload()

    def close(self) -> None:
        self.writer.close()
        try:
            self._upload()
        finally:
            if self._local is not None:
                shutil.rmtree(self._local, ignore_errors=True)


class Wandb:
    """A Weights & Biases run."""

    def __init__(self, workdir, settings: Settings, run_id: str | None):
        extras.require("wandb")
        import wandb  # noqa: PLC0415  (optional)

        local = workdir_path(workdir)
        directory = str(local) if is_local(local) else tempfile.mkdtemp(prefix="azjax-wandb-")
        try:
            self.run = wandb.init(
                project=settings.run.trackers.wandb_project,
                name=local.name,
                id=run_id,
                resume="allow",
                # A population opens one W&B run per member in one process.
                reinit="create_new",
                allow_val_change=True,  # a resumed run may change train.num_iterations
                dir=directory,
                config=_flat_config(settings.config_json),
                settings=wandb.Settings(init_timeout=TRACKER_TIMEOUT_S),
            )
        except wandb.Error as error:  # no login, no answer within the timeout
            raise UserError(
                f"train.loggers 'wandb' could not start a W&B run ({first_line(error)}): log "
                "in with `wandb login` or WANDB_API_KEY, or set WANDB_MODE=offline to keep it "
                "in the workdir"
            ) from None
        self.id = self.run.id

    def log(self, record: dict) -> None:
        self.run.log(_scalars(record), step=record["iteration"])

    def close(self) -> None:
        self.run.finish()


class Mlflow:
    """An MLflow run."""

    def __init__(self, workdir, settings: Settings, run_id: str | None):
        extras.require("mlflow")
        from mlflow.tracking import MlflowClient  # noqa: PLC0415  (optional)

        local = workdir_path(workdir)
        config_json, settings = settings.config_json, settings.run.trackers
        if not settings.mlflow_uri and not is_local(local):
            raise UserError("train.loggers 'mlflow' with a cloud workdir needs train.mlflow_uri")
        # MLflow's own default store: a SQLite database (its file store is deprecated).
        uri = settings.mlflow_uri or f"sqlite:///{local.absolute() / 'mlflow.db'}"
        for name in ("mlflow", "alembic"):  # "Creating initial MLflow database tables..."
            logging.getLogger(name).setLevel(logging.WARNING)
        # The store answers within TRACKER_TIMEOUT_S a request and no retry (MLflow's own
        # retries took 252 s to give up on a server that is not there).
        try:
            with _mlflow_bounded():
                self.client = MlflowClient(tracking_uri=uri)
                experiment = self.client.get_experiment_by_name(settings.experiment)
                if run_id is None:
                    run_id = self._start_run(
                        config_json, experiment, settings.experiment, local.name
                    )
        except Exception as error:
            raise UserError(
                f"train.loggers 'mlflow' cannot use the tracking store {uri} "
                f"({first_line(error)}): fix train.mlflow_uri, or leave it empty for "
                "WORKDIR/mlflow.db"
            ) from None
        self.id, self.uri = run_id, uri

    def _start_run(self, config_json: str, experiment, experiment_name: str, name: str) -> str:
        """A new MLflow run named `name` in `experiment` (None: made, named
        `experiment_name`), the config (`config_json`) as its params; its id."""
        from mlflow.entities import Param  # noqa: PLC0415  (optional)

        experiment_id = (
            experiment.experiment_id
            if experiment
            else self.client.create_experiment(experiment_name)
        )
        run_id = self.client.create_run(experiment_id, run_name=name).info.run_id
        params = [(k, str(v)[:6000]) for k, v in _flat_config(config_json).items()]
        for start in range(0, len(params), 100):  # MLflow takes 100 params a call
            self.client.log_batch(
                run_id, params=[Param(k, v) for k, v in params[start : start + 100]]
            )
        return run_id

    def log(self, record: dict) -> None:
        from mlflow.entities import Metric  # noqa: PLC0415  (optional)

        if self.client is None:
            return
        now = int(time.time() * 1000)
        metrics = [
            Metric(mlflow_key(k), v, now, record["iteration"]) for k, v in _scalars(record).items()
        ]
        try:
            with _mlflow_bounded():
                self.client.log_batch(self.id, metrics=metrics)
        except Exception as error:  # noqa: BLE001  (any failure of the store: warned once)
            self._lost(error)

    def _lost(self, error: Exception) -> None:
        """A store that stopped answering mid-run (MLflow's own retries held each record for
        up to 16 minutes): one warning, and the run goes on without it."""
        _log.warning(
            "azjax: warning: train.loggers 'mlflow': the tracking store %s stopped answering "
            "(%s); the run goes on without it (metrics.jsonl holds every record)",
            self.uri,
            first_line(error),
        )
        self.client = None

    def close(self) -> None:
        if self.client is None:
            return
        try:
            with _mlflow_bounded():
                self.client.set_terminated(self.id)
        except Exception as error:  # noqa: BLE001
            self._lost(error)


@contextlib.contextmanager
def _mlflow_bounded():
    """MLflow's HTTP requests within TRACKER_TIMEOUT_S and no retry, for the block (its
    settings are read at each request)."""
    bounds = {"MLFLOW_HTTP_REQUEST_TIMEOUT": str(TRACKER_TIMEOUT_S),
              "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}  # fmt: skip
    saved = {name: os.environ.get(name) for name in bounds}
    os.environ.update(bounds)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def mlflow_key(key: str) -> str:
    """A metric name MLflow accepts (letters, digits, `_ - . / space`): others become `_`."""
    return re.sub(r"[^\w\-./ ]", "_", key)


def require_extras(trackers: TrackerSettings) -> None:
    """Raises `extras.require`'s one-line ModuleNotFoundError where a tracker of
    `train.loggers` needs an extra that is not installed (checked before a run's workdir is
    made, so a refused run leaves none)."""
    loggers = trackers.loggers
    extras.require(*(name for name in ("wandb", "mlflow") if name in loggers))


def open_trackers(
    settings: Settings, workdir, resume_iteration: int, *, tensorboard: bool = True
) -> list:
    """The trackers the run's `train.loggers` name (`settings.run.trackers`), opened for a run
    resumed after `resume_iteration` (0: a new run), each given the run's config; W&B and
    MLflow run ids are kept in the workdir. `tensorboard=False` (a quiet run) leaves
    TensorBoard out."""
    trackers = []
    loggers = settings.run.trackers.loggers
    if "tensorboard" in loggers and tensorboard:
        trackers.append(TensorBoard(workdir, resume_iteration, settings.config_json))
    ids_path = workdir_path(workdir) / IDS_FILE
    ids = read_json(ids_path) if ids_path.exists() else {}
    opened = dict(ids)
    for name, kind in (("wandb", Wandb), ("mlflow", Mlflow)):
        if name in loggers:
            tracker = kind(workdir, settings, ids.get(name))
            opened[name] = tracker.id
            trackers.append(tracker)
    if opened != ids:
        ids_path.write_text(json.dumps(opened, indent=2) + "\n")
    return trackers


class Profiler:
    """A `jax.profiler` trace of iterations `first..last` (inclusive) in the run's TensorBoard
    folder, each iteration a step (`StepTraceAnnotation`): WORKDIR/tensorboard/plugins/profile/
    <time>/*.xplane.pb, which the Profile tab of `tensorboard --logdir WORKDIR/tensorboard`
    opens with the `profile` extra (xprof). (0, 0) traces nothing.

    No Perfetto JSON is asked for: JAX's conversion to JSON (and the `trace.json.gz` it writes
    beside the XPlane file) stops at a million events, fewer than one iteration of a real run
    makes on a CPU; the XPlane file holds them all, and the Profile tab's trace viewer streams
    it at the zoom's resolution."""

    def __init__(self, iterations, workdir):
        self.first, self.last = (int(i) for i in iterations)
        self.directory = workdir_path(workdir) / "tensorboard"
        self.tracing, self._step = False, None
        if self.first > 0 and not is_local(self.directory):
            raise UserError("train.profile writes its trace to a local workdir only")

    def before(self, iteration: int) -> None:
        """Called before `iteration` runs."""
        if self.first > 0 and iteration == self.first and not self.tracing:
            jax.profiler.start_trace(str(self.directory))
            self.tracing = True
        if self.tracing:
            self._step = jax.profiler.StepTraceAnnotation("iteration", step_num=iteration)
            self._step.__enter__()

    def after(self, iteration: int) -> None:
        """Called after `iteration` ran (its results on the host)."""
        self._end_step()
        if self.tracing and iteration >= self.last:
            self.close()

    def _end_step(self) -> None:
        if self._step is not None:
            self._step.__exit__(None, None, None)
            self._step = None

    def close(self) -> None:
        self._end_step()
        if self.tracing:
            jax.profiler.stop_trace()
            self.tracing = False
