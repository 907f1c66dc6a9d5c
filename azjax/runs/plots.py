"""Learning-curve plots of runs (used by `azjax plot` and the notebooks).

Both functions read runs with `runs.load_metrics`, so a run directory, a `metrics.jsonl` file
or an already loaded DataFrame will do.
"""

from pathlib import Path

from azjax.runs import directory as runs
from azjax.types import UserError

# x axis name -> (metrics column, label)
_AXES = {
    "minutes": ("minutes", "wall-clock minutes"),
    "games": ("total_games", "self-play games"),
    "positions": ("total_positions", "self-play positions"),
    "flops": ("total_train_flops", "training FLOPs (self-play and learning)"),
    "iteration": ("iteration", "iteration"),
}
AXES = tuple(_AXES)  # the x axes a plot can take


def _metrics(run):
    return run if hasattr(run, "columns") else runs.load_metrics(run)


def _axis(x: str, metrics=None) -> tuple[str, str]:
    if x not in _AXES:
        raise ValueError(f"x must be one of {', '.join(_AXES)}, not {x!r}")
    column, label = _AXES[x]
    if metrics is not None and column not in metrics:
        raise UserError(
            f"the metrics have no {column} (written before runs counted it); use --x iteration"
        )
    return column, label


def plot_scores(axes, run, *, x: str = "minutes", label: str = "", num_games=None, **style):
    """Draws a run's evaluation scores with their 95% intervals (shaded) on `axes`.

    One line per opponent, labelled `label vs OPPONENT`; `num_games` is passed to
    `runs.evaluations` for metrics that do not record it.
    """
    metrics = _metrics(run)
    column, xlabel = _axis(x, metrics)
    table = runs.evaluations(metrics, num_games=num_games)
    for opponent, rows in table.groupby("opponent", sort=True):
        line = axes.plot(
            rows[column], rows["score"], "o-", ms=3, label=f"{label}vs {opponent}", **style
        )[0]
        axes.fill_between(
            rows[column], rows["score_low"], rows["score_high"], color=line.get_color(), alpha=0.2
        )
    axes.set_xlabel(xlabel)
    axes.set_ylabel("score (draws count half), 95% interval")
    axes.set_ylim(-0.02, 1.02)
    axes.grid(alpha=0.3)


def plot_run(
    workdir,
    output: str | Path | None = None,
    *,
    title: str | None = None,
    x: str = "minutes",
    num_games: int | None = None,
):
    """Plots a run's evaluation scores (with 95% intervals) and training losses.

    Args:
      workdir: the run directory, its metrics file, or a `runs.load_metrics` DataFrame.
      output: image path to write (PNG, SVG, PDF); None returns the figure without saving.
      title: figure title (default: the workdir name).
      x: the x axis: "minutes" (wall clock), "games" (self-play games), "positions"
        (self-play positions), "flops" (training FLOPs, `training.compute`) or "iteration".
      num_games: games per evaluation, for metrics that do not record it.

    Returns:
      The matplotlib figure.
    """
    import matplotlib.pyplot as plt  # noqa: PLC0415  (slow import; the caller picks a backend)

    metrics = _metrics(workdir)
    column, xlabel = _axis(x, metrics)
    has_elo = "eval/elo" in metrics and metrics["eval/elo"].notna().any()
    figure, panels = plt.subplots(1, 3 if has_elo else 2, figsize=(16 if has_elo else 11, 4))
    scores, losses = panels[:2]
    plot_scores(scores, metrics, x=x, num_games=num_games)
    if has_elo:
        plot_elo(panels[2], metrics, x=x)
    if runs.opponents(metrics):
        scores.legend(loc="lower right")
    for key in ("value_loss", "policy_loss", "policy_entropy", "ownership_loss", "score_loss"):
        if key in metrics and metrics[key].notna().all():
            losses.plot(metrics[column], metrics[key], label=key)
    losses.set_xlabel(xlabel)
    losses.grid(alpha=0.3)
    if losses.lines:
        losses.legend()
    name = Path(workdir).name if isinstance(workdir, str | Path) else "run"
    figure.suptitle(name if title is None else title)
    figure.tight_layout()
    if output is not None:
        figure.savefig(output, dpi=100)
    return figure


def plot_elo(axes, metrics, *, x: str = "minutes", label: str = ""):
    """Draws a run's `eval/elo` (its Elo against the fixed anchors) with its 95% band."""
    column, xlabel = _axis(x, metrics)
    rows = metrics[metrics["eval/elo"].notna()]
    line = axes.plot(rows[column], rows["eval/elo"], "o-", ms=3, label=f"{label}Elo")[0]
    axes.fill_between(
        rows[column], rows["eval/elo_low"], rows["eval/elo_high"], color=line.get_color(), alpha=0.2
    )
    axes.set_xlabel(xlabel)
    axes.set_ylabel("Elo against the anchors (95%)")
    axes.grid(alpha=0.3)
    return axes


def plot_runs(named_runs: dict, *, opponent: str, x: str = "minutes", num_games=None, axes=None):
    """Compares runs on one axis: each run's score against `opponent`, 95% intervals shaded.

    Args:
      named_runs: label -> run directory, metrics file or `load_metrics` DataFrame.
      opponent: the evaluation opponent to compare on (for example "mcts:800").
      x: "minutes", "games", "positions", "flops" or "iteration".
      num_games: games per evaluation, for metrics that do not record it (an int, or a dict
        label -> int).
      axes: matplotlib axes to draw on (default: a new figure).

    Returns:
      The axes.
    """
    import matplotlib.pyplot as plt  # noqa: PLC0415

    if axes is None:
        axes = plt.subplots(figsize=(7, 4))[1]
    for label, run in named_runs.items():
        metrics = _metrics(run)
        if opponent not in runs.opponents(metrics):
            raise ValueError(f"run {label!r} was not evaluated against {opponent!r}")
        games = num_games.get(label) if isinstance(num_games, dict) else num_games
        keep = [c for c in metrics.columns if not c.startswith("eval/")]
        keep += [c for c in metrics.columns if c.startswith(f"eval/{opponent}/")]
        plot_scores(axes, metrics[keep], x=x, label=f"{label} ", num_games=games)
    axes.set_title(f"score against {opponent}")
    axes.legend(loc="lower right")
    return axes


_UNPLACED_WIDTH = 1500.0  # Elo: a 95% interval this wide comes from the prior, not games


def plot_ratings(table, output: str | Path | None = None, *, title: str | None = None, axes=None):
    """Ratings against training iteration: one line per run (95% intervals as error bars),
    the other players (baselines, outside engines) as horizontal lines with shaded intervals.

    Args:
      table: a tournament's ratings (`tournament.load_ratings(DIR)` or the `ratings.csv`
        path): columns player, elo, elo_low, elo_high, and run, step for checkpoints.
      output: image path to write; None returns the figure without saving.
      title: the axes' title.
      axes: matplotlib axes to draw on (default: a new figure).

    Returns:
      The matplotlib figure.
    """
    import matplotlib.pyplot as plt  # noqa: PLC0415
    import pandas as pd  # noqa: PLC0415

    if not hasattr(table, "columns"):
        table = pd.read_csv(table)
    if axes is None:
        axes = plt.subplots(figsize=(8, 4.5))[1]
    table = table[table["elo"].notna()]
    has_run = table["run"].notna() if "run" in table else pd.Series(False, index=table.index)
    for run, rows in table[has_run].groupby("run", sort=True):
        rows = rows.sort_values("step")
        errors = [rows["elo"] - rows["elo_low"], rows["elo_high"] - rows["elo"]]
        axes.errorbar(rows["step"], rows["elo"], yerr=errors, fmt="o-", ms=4, capsize=3, label=run)
    # A player who lost (or won) every game has a rating set by the prior, not the games:
    # drawn without its band, and the axis fits the players the games do place.
    width = table["elo_high"] - table["elo_low"]
    placed = table[width <= _UNPLACED_WIDTH]
    for index, row in enumerate(table[~has_run].sort_values("elo").itertuples()):
        color = f"C{(index + 3) % 10}"
        unplaced = row.elo_high - row.elo_low > _UNPLACED_WIDTH
        label = f"{row.player} ({row.elo:+.0f}, not placed by its games)" if unplaced else None
        label = label or row.player
        axes.axhline(row.elo, color=color, ls="--", lw=1, label=label)
        if row.elo_high > row.elo_low and not unplaced:
            axes.axhspan(row.elo_low, row.elo_high, color=color, alpha=0.1)
    if len(placed) and len(placed) < len(table):
        low, high = placed["elo_low"].min(), placed["elo_high"].max()
        margin = 0.1 * max(high - low, 100.0)
        axes.set_ylim(low - margin, high + margin)
    axes.set_xlabel("training iteration")
    axes.set_ylabel("Elo (95% interval)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small", loc="best")
    if title:
        axes.set_title(title)
    figure = axes.figure
    figure.tight_layout()
    if output is not None:
        figure.savefig(output, dpi=100)
    return figure
