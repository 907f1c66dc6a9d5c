"""What a sweep worker tells Optuna of the trials it trains (`worker` asks and trains them).

A trial's intermediate objective values go to Optuna (`trial.report`), whose pruner may stop
it; a resumed trial first replays the values its run logged up to its newest checkpoint. Its
final value is the objective's last value in the trial's `metrics.jsonl`: told as the
trial's value, or as PRUNED or FAIL; a trial this worker stops is told FAIL and re-queued to
resume from its checkpoint. A trial another worker claimed meanwhile is left to it. Each
told value also goes to TensorBoard's HParams view in `WORKDIR/tensorboard`.

Liveness (the trial's heartbeat) is the worker's: `Teller` talks only to Optuna and reads
only the trials' files.
"""

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path

import ml_collections
import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import TrialState

from azjax.apps.sweeps import liveness
from azjax.runs.directory import list_checkpoints
from azjax.runs.metrics import read_metrics


@dataclasses.dataclass
class Trial:
    """A trial a worker runs."""

    trial: optuna.Trial
    root: int  # its directory's trial number (the first of a retry chain)
    params: dict
    config: ml_collections.ConfigDict
    directory: Path
    pruned: bool = False
    lost: bool = False  # claimed by another worker while this one was frozen
    finished: bool = False


class Teller:
    """Tells one worker's study of its trials: their evaluations, results and failures."""

    def __init__(
        self, study: optuna.Study, store, objective: str, workdir: Path, log: Callable[..., None]
    ):
        self.study, self.store, self.objective = study, store, objective
        self.workdir, self.log = workdir, log
        self._hparams = None  # the HParams view's writer, opened with the first value

    def replay(self, item: Trial) -> bool:
        """Reports a resumed trial's saved evaluations to Optuna; False if it is pruned."""
        if not (item.directory / "metrics.jsonl").exists():
            return True
        steps = list_checkpoints(item.directory)
        saved = steps[-1] if steps else 0
        for record in read_metrics(item.directory):
            if record.get("iteration", math.inf) <= saved:
                self._report(item, record)
        if item.trial.should_prune():
            item.pruned = True
            return False
        return True

    def observe(self, item: Trial, record: dict) -> bool:
        """Reports a record's objective; True when the pruner stops the trial."""
        if self.objective in record:
            self._report(item, record)
            if item.trial.should_prune():
                item.pruned = True
                return True
        return False

    def _report(self, item: Trial, record: dict) -> None:
        value = record.get(self.objective)
        if isinstance(value, int | float) and math.isfinite(value):
            item.trial.report(float(value), int(record["iteration"]))

    def finish(self, item: Trial) -> None:
        """Tells the trial's result: pruned, its objective's last value, or failed."""
        if item.lost:
            self.log(f"trial {item.root} was claimed by another worker; left to it")
            return
        value = None
        if (item.directory / "metrics.jsonl").exists():
            for record in read_metrics(item.directory):
                if isinstance(record.get(self.objective), int | float):
                    value = float(record[self.objective])
        try:
            if item.pruned:
                frozen = self.study.tell(item.trial, state=TrialState.PRUNED)
            elif value is None or not math.isfinite(value):
                self.fail(item.trial, f"the run logged no finite {self.objective} ({value})")
                self.log(f"trial {item.root}: failed: no finite {self.objective}")
                return
            else:
                frozen = self.study.tell(item.trial, value)
        except UpdateFinishedTrialError:
            self.log(f"trial {item.root} was claimed by another worker; left to it")
            return
        shown = "pruned" if item.pruned else "done"
        result = "" if frozen.value is None else f", {self.objective} = {frozen.value:.4g}"
        self.log(f"trial {item.root}: {shown}{result}")
        if frozen.value is not None:
            self._write_hparams(item, frozen.value)

    def fail(self, trial: optuna.Trial, message: str) -> None:
        """Tells the trial FAIL with `message` (its `error` attr), unless it is already told."""
        try:
            trial.set_user_attr("error", message)
            self.study.tell(trial, state=TrialState.FAIL)
        except UpdateFinishedTrialError:
            pass

    def requeue(self, item: Trial) -> None:
        """The worker stops: its trial goes back to the queue at once, to resume later."""
        try:
            self.study.tell(item.trial, state=TrialState.FAIL)
        except UpdateFinishedTrialError:
            return
        liveness.requeue(self.study, self.store.get_trial(item.trial._trial_id))
        self.log(f"trial {item.root}: stopped; queued to resume from its checkpoint")

    def _write_hparams(self, item: Trial, value: float) -> None:
        """The trial's parameters and objective in TensorBoard's HParams view."""
        from tensorboardX import SummaryWriter  # noqa: PLC0415

        if self._hparams is None:
            self._hparams = SummaryWriter(str(self.workdir / "tensorboard"))
        params = {k: v if isinstance(v, bool | int | float | str) else str(v)
                  for k, v in item.params.items()}  # fmt: skip
        self._hparams.add_hparams(params, {self.objective: value}, name=item.directory.name)
        self._hparams.flush()

    def close(self) -> None:
        """Closes the HParams view's writer, if one was opened."""
        if self._hparams is not None:
            self._hparams.close()
            self._hparams = None
