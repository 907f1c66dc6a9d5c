"""A run directory from Python: its metrics as a pandas table, its checkpoints (its config:
`azjax.config.load_run_config`).

    from azjax.runs import directory as runs
    metrics = runs.load_metrics("runs/c4")          # one row per iteration
    scores = runs.evaluations(metrics)             # one row per evaluation and opponent
    runs.list_checkpoints("runs/c4")               # [100, 200, 300]

`azjax plot` and the notebooks read runs through these functions; `train` starts or
resumes one with `prepare_workdir` (the resolved config saved, or checked against the saved
one).
"""

import math
from pathlib import Path

from azjax.config import saved
from azjax.config.settings import Settings
from azjax.faults import is_disk_full
from azjax.paths import is_local, read_text, workdir_path, write_atomically  # noqa: F401  (part of this module's API)
from azjax.runs.checkpoint import Checkpointer
from azjax.runs.metrics import parse_lines
from azjax.runs.trackers import require_extras
from azjax.stats import wilson_interval
from azjax.types import RunError, UserError


def _metrics_path(path: str | Path) -> Path:
    path = workdir_path(path)
    if path.is_dir():
        path = path / "metrics.jsonl"
    if not path.is_file():
        raise UserError(f"no metrics in {path} (is it a run directory or a metrics.jsonl file?)")
    return path


def load_metrics(path: str | Path):
    """A run's `metrics.jsonl` as a pandas DataFrame, one row per iteration.

    Args:
      path: a run directory, or a metrics file (such as the runs shipped in `docs/`).

    Returns:
      A DataFrame indexed by `iteration` (also kept as a column), with `minutes` (wall-clock
      time since the run began) added; a partial last line is skipped.

    Raises:
      UserError: no metrics there.
    """
    import pandas as pd  # noqa: PLC0415  (slow import)

    records, _ = parse_lines(read_text(_metrics_path(path)))
    frame = pd.DataFrame.from_records(records)
    if frame.empty:
        frame = pd.DataFrame({"iteration": pd.Series(dtype=int)})
    frame = frame.drop_duplicates("iteration", keep="last").sort_values("iteration")
    if "wall_time" in frame:
        frame["minutes"] = frame["wall_time"] / 60
    return frame.set_index("iteration", drop=False).rename_axis(None)


def opponents(metrics) -> list[str]:
    """The evaluation opponents that appear in a `load_metrics` table, sorted."""
    suffix = "/win_rate"
    return sorted(c[len("eval/") : -len(suffix)] for c in metrics.columns if c.endswith(suffix))


def evaluations(metrics, *, num_games: int | None = None):
    """The evaluation results of a `load_metrics` table in long form, with 95% intervals.

    Args:
      metrics: a `load_metrics` DataFrame.
      num_games: games per evaluation, for metrics written before runs logged it
        (`eval/OPPONENT/games`); the run's `eval.num_games`.

    Returns:
      A DataFrame with one row per (evaluation, opponent): iteration, minutes, total_games,
      total_positions, total_train_flops (NaN in runs from before it was counted),
      opponent, games, win_rate, draw_rate, loss_rate, score (draws count half) and
      score_low, score_high: the Wilson 95% interval of the score (treating each game as a
      win or a loss, which is conservative when there are draws).

    Raises:
      UserError: an evaluation without a game count and no `num_games`.
    """
    import pandas as pd  # noqa: PLC0415

    rows = []
    for opponent in opponents(metrics):
        key = f"eval/{opponent}"
        done = metrics[metrics[f"{key}/win_rate"].notna()]
        for _, record in done.iterrows():
            games = record.get(f"{key}/games", math.nan)
            if not isinstance(games, int | float) or math.isnan(games):
                if num_games is None:
                    raise UserError(
                        f"the metrics do not say how many games the evaluation against "
                        f"{opponent} played; give the run's eval.num_games (num_games=N, "
                        "or --eval-games N in azjax plot)"
                    )
                games = num_games
            score = record.get(f"{key}/score", record[f"{key}/win_rate"])
            low, high = wilson_interval(score, games)
            rows.append(
                {
                    "iteration": int(record["iteration"]),
                    "minutes": record.get("minutes", math.nan),
                    "total_games": record.get("total_games", math.nan),
                    "total_positions": record.get("total_positions", math.nan),
                    "total_train_flops": record.get("total_train_flops", math.nan),
                    "opponent": opponent,
                    "games": int(games),
                    "win_rate": record[f"{key}/win_rate"],
                    "draw_rate": record.get(f"{key}/draw_rate", math.nan),
                    "loss_rate": record.get(f"{key}/loss_rate", math.nan),
                    "score": score,
                    "score_low": low,
                    "score_high": high,
                }
            )
    columns = ["iteration", "minutes", "total_games", "total_positions", "total_train_flops"]
    columns += ["opponent", "games", "win_rate"]
    columns += ["draw_rate", "loss_rate", "score", "score_low", "score_high"]
    return pd.DataFrame(rows, columns=columns)


def list_checkpoints(workdir: str | Path) -> list[int]:
    """The iterations saved in a run's `checkpoints/`, oldest first ([] before the first).

    Any of them loads with `azjax.load_agent(workdir, step=STEP)`.
    """
    directory = workdir_path(workdir) / "checkpoints"
    if not directory.is_dir():
        if not workdir_path(workdir).is_dir():
            raise UserError(f"{workdir} is not a run directory")
        return []
    checkpointer = Checkpointer(workdir)
    try:
        return checkpointer.all_steps()
    finally:
        checkpointer.close()


def prepare_workdir(
    settings: Settings, workdir: Path, *, allow_config_change: bool, write: bool = True
) -> None:
    """Saves the resolved config (`settings.config_json`), or checks it against the one
    already saved there.

    `write=False` only checks (the processes of a multi-host run other than process 0: every
    process reaches the same verdict, and one writes).

    Raises:
      UserError: the workdir cannot be used (a file, under a file, read-only), or the saved
        config differs in keys that change what the run computes and `allow_config_change`
        is False.
      RunError: the disk is full.
      ModuleNotFoundError: a tracker's extra is missing (one line; nothing written).
    """
    require_extras(settings.run.trackers)
    workdir = workdir_path(workdir)
    path = workdir / "config.json"
    try:
        if write:
            workdir.mkdir(parents=True, exist_ok=True)
        if path.exists():
            differences = saved.differences(path, settings.config_json)
            if differences and not allow_config_change:
                raise UserError(
                    f"{workdir} holds a run with a different config ("
                    + "; ".join(differences)
                    + "); use another --workdir, or pass --allow-config-change to resume anyway"
                )
        if write:
            write_atomically(path, settings.config_json.encode())
    except OSError as error:
        if is_disk_full(error):
            raise RunError(f"the disk is full: cannot write {path}") from None
        raise UserError(f"cannot use {workdir} as a run directory: {error.strerror}") from None
