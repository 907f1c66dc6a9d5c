"""Learning-curve plots from a run's `metrics.jsonl` (used by `azjax plot` and notebooks)."""

from pathlib import Path

from azjax.metrics import read_metrics


def plot_run(workdir: str | Path, output: str | Path | None = None, *, title: str | None = None):
    """Plots evaluation win rates and training losses against wall-clock minutes.

    Args:
      workdir: the run directory.
      output: image path to write (PNG, SVG, PDF); None returns the figure without saving.
      title: figure title (default: the workdir name).

    Returns:
      The matplotlib figure.
    """
    import matplotlib.pyplot as plt  # noqa: PLC0415  (slow import; the caller picks a backend)

    records = read_metrics(workdir)
    opponents = sorted(
        {k[len("eval/") : -len("/win_rate")] for r in records for k in r if k.endswith("/win_rate")}
    )
    figure, (wins, losses) = plt.subplots(1, 2, figsize=(11, 4))
    for opponent in opponents:
        key = f"eval/{opponent}"
        points = [r for r in records if f"{key}/win_rate" in r]
        minutes = [r["wall_time"] / 60 for r in points]
        wins.plot(minutes, [r[f"{key}/win_rate"] for r in points], "o-", label=f"vs {opponent}")
        wins.plot(
            minutes, [r[f"{key}/score"] for r in points], ":", color=wins.lines[-1].get_color()
        )
    wins.set_xlabel("wall-clock minutes")
    wins.set_ylabel("win rate (solid), score with draws as half (dotted)")
    wins.set_ylim(-0.02, 1.02)
    wins.grid(alpha=0.3)
    if opponents:
        wins.legend(loc="lower right")
    minutes = [r["wall_time"] / 60 for r in records]
    for key in ("value_loss", "policy_loss", "policy_entropy"):
        if all(key in r for r in records):
            losses.plot(minutes, [r[key] for r in records], label=key)
    losses.set_xlabel("wall-clock minutes")
    losses.grid(alpha=0.3)
    losses.legend()
    figure.suptitle(title or Path(workdir).name)
    figure.tight_layout()
    if output is not None:
        figure.savefig(output, dpi=100)
    return figure
