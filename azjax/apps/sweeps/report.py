"""A sweep's results: the trials as a table, and Optuna's plots as PNG images.

study = load_study("runs/sweep_c4")
table = trials_table("runs/sweep_c4")    # pandas, best first
paths = write_report("runs/sweep_c4")    # report/history.png, importance.png, slice.png
"""

import io
import math
import warnings
from pathlib import Path

import numpy as np
import optuna
from optuna.trial import TrialState

from azjax.apps.sweeps import liveness
from azjax.apps.sweeps import storage as storage_lib
from azjax.paths import workdir_path, write_atomically
from azjax.runs.metrics import read_metrics
from azjax.types import UserError

REPORT_DIR = "report"


def load_study(workdir: str | Path, *, storage: str | None = None) -> optuna.Study:
    """The Optuna study of the sweep in `workdir` (its storage and name from sweep.json).

    Args:
      storage: the database URL, where sweep.json keeps it without its password.

    Raises:
      UserError: no sweep in `workdir`, or its storage cannot be reached.
    """
    workdir = workdir_path(workdir)
    url = storage_lib.stored_url(workdir, storage)
    saved = storage_lib.read_sweep_file(workdir)
    store = storage_lib.open_storage(workdir, url)
    try:
        return optuna.load_study(study_name=saved["study"], storage=store)
    except KeyError:
        raise UserError(f"the storage of {workdir} holds no study {saved['study']!r}") from None


def _objective(workdir: Path) -> tuple[str, str]:
    saved = storage_lib.read_sweep_file(workdir)
    if saved is None:
        raise UserError(f"no sweep in {workdir} (no {storage_lib.SWEEP_FILE})")
    return saved["objective"], saved["direction"]


def latest_attempts(study: optuna.Study) -> list:
    """The newest attempt of each trial directory (a resumed trial replaces its failed
    first attempt), surplus trials left out, in the order of their directories."""
    latest = {}
    for trial in study.get_trials(deepcopy=False):
        if not trial.user_attrs.get(liveness.SURPLUS):
            latest[liveness.root_number(trial)] = trial
    return [latest[root] for root in sorted(latest)]


def trials_table(workdir: str | Path, *, study: optuna.Study | None = None):
    """The sweep's trials as a pandas DataFrame, best objective first (unfinished last).

    Columns: trial (its directory's number), state, objective, one column per parameter,
    iterations (the run's last iteration), minutes (its wall-clock time) and error (why a
    failed trial failed, where any did).
    """
    import pandas as pd  # noqa: PLC0415

    workdir = workdir_path(workdir)
    objective, direction = _objective(workdir)
    study = load_study(workdir) if study is None else study
    rows = []
    for trial in latest_attempts(study):
        root = liveness.root_number(trial)
        records = []
        metrics = workdir / f"trial_{root:04d}" / "metrics.jsonl"
        if metrics.exists():
            records = read_metrics(metrics.parent)
        row = {"trial": root, "state": trial.state.name.lower(), "objective": trial.value}
        row.update(trial.params)
        row["iterations"] = records[-1]["iteration"] if records else 0
        row["minutes"] = records[-1].get("wall_time", math.nan) / 60 if records else math.nan
        if "error" in trial.user_attrs:
            row["error"] = trial.user_attrs["error"]
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return pd.DataFrame(columns=["trial", "state", "objective", "iterations", "minutes"])
    if "error" in table:
        table["error"] = table["error"].fillna("")
    table = table.sort_values(
        "objective", ascending=direction == "minimize", na_position="last", kind="stable"
    )
    table.attrs["objective"] = objective
    return table.reset_index(drop=True)


def format_table(table) -> str:
    """The table as aligned text, its objective named in the header."""
    import pandas as pd  # noqa: PLC0415

    if table.empty:
        return "no trials yet"
    shown = table.rename(columns={"objective": table.attrs.get("objective", "objective")})
    with pd.option_context("display.width", 200, "display.max_columns", 50):
        return shown.to_string(index=False, float_format=lambda v: f"{v:.4g}")


def write_report(workdir: str | Path, *, study: optuna.Study | None = None) -> list[Path]:
    """Draws the sweep into `workdir/report/`: the optimisation history, the parameters'
    importances (with at least 2 complete trials and a parameter that varies) and the
    objective against each parameter. Returns the images written."""
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from optuna.visualization import matplotlib as optuna_plots  # noqa: PLC0415

    workdir = workdir_path(workdir)
    objective, _ = _objective(workdir)
    study = load_study(workdir) if study is None else study
    out = workdir / REPORT_DIR
    out.mkdir(parents=True, exist_ok=True)
    complete = [t for t in latest_attempts(study) if t.state == TrialState.COMPLETE]
    varying = sorted(
        key
        for key in {k for t in complete for k in t.params}
        if len({repr(t.params.get(key)) for t in complete}) > 1
    )
    plots = [("history.png", lambda: optuna_plots.plot_optimization_history(
        study, target_name=objective))]  # fmt: skip
    if len(complete) >= 2 and varying:
        # PED-ANOVA, optuna 5's default, named so that optuna 4 (whose default, fANOVA, needs
        # scikit-learn) draws the same importances.
        evaluator = optuna.importance.PedAnovaImportanceEvaluator()
        plots.append(("importance.png", lambda: optuna_plots.plot_param_importances(
            study, evaluator=evaluator, params=varying, target_name=objective)))  # fmt: skip
    if complete and study.best_trial.params:
        plots.append(("slice.png", lambda: optuna_plots.plot_slice(study, target_name=objective)))
    width = 3.5 * len(study.best_trial.params) + 1.5 if complete else 0.0
    sizes = {"slice.png": (max(6.0, width), 4.5)}
    paths = []
    for name, draw in plots:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            axes = draw()
        figure = _figure(axes)
        if name in sizes:
            figure.set_size_inches(*sizes[name])
        image = io.BytesIO()  # a cloud file is written whole
        figure.savefig(image, format="png", dpi=120, bbox_inches="tight")
        plt.close(figure)
        write_atomically(out / name, image.getvalue())
        paths.append(out / name)
    return paths


def report_notes(workdir: str | Path, paths: list[Path]) -> list[str]:
    """Why an image is missing from `write_report`'s output, one line each."""
    names = {p.name for p in paths}
    notes = []
    if "importance.png" not in names:
        notes.append(
            "no parameter importances yet: they need 2 complete trials and a parameter that varies"
        )
    if "slice.png" not in names:
        notes.append("no objective-against-parameter plot yet: it needs a complete trial")
    return notes


def _figure(axes):
    """The figure of what an optuna matplotlib plot returns (an Axes or an array of them)."""
    if isinstance(axes, np.ndarray):
        axes = axes.flat[0]
    return axes.get_figure()


def format_value(value) -> str:
    """A parameter's value as a sweep's lines show it."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def summary(study: optuna.Study, objective: str) -> str:
    """One line: how many trials ended how, and the best one."""
    trials = [t for t in study.get_trials(deepcopy=False) if not t.user_attrs.get(liveness.SURPLUS)]
    latest = {}
    for trial in trials:
        latest[liveness.root_number(trial)] = trial  # the newest attempt of each directory
    counts = {}
    for trial in latest.values():
        counts[trial.state.name.lower()] = counts.get(trial.state.name.lower(), 0) + 1
    text = f"sweep {study.study_name}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    complete = [t for t in latest.values() if t.state == TrialState.COMPLETE]
    if complete:
        best = study.best_trial
        params = ", ".join(f"{k}={format_value(v)}" for k, v in best.params.items())
        text += (
            f"; best: trial {liveness.root_number(best)}, {objective} = {best.value:.4g} ({params})"
        )
    return text
