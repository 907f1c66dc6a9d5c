"""Fits of a compute-frontier study: Elo against training compute, size and search (no jax).

A frontier study trains several network sizes to one compute budget, keeps checkpoints at the
same geometric budget points for every size, and rates every checkpoint on one Elo scale with a
95% interval, possibly at several search simulation counts. Each rating is a row dict with keys
size, parameters, flops, point, simulations, elo, elo_low and elo_high (others are ignored).

What is fitted, after Neumann & Gros 2023 and Jones 2021:
- the frontier: at each budget point the best Elo over sizes, and its Elo per tenfold compute;
- Elo per tenfold parameters across sizes at one budget point (by default the full budget);
- the compute-optimal size exponent: log10 parameters of the best size against log10 flops;
- the train/test exchange rate: Elo = a + b log10(flops) + c log10(simulations) over the
  frontier's checkpoints, and b / c, the tenfolds of simulations one tenfold of training is worth.

Method and limits. Lines are weighted least squares with weights 1/se^2, se being the half
width of the 95% interval over 1.96; a rating whose bounds are missing, non-finite or empty is
left out of the fits (one that won or lost every game has a very wide interval, so it counts
little). The covariance is scaled by the reduced chi-square when that is over 1, so scatter
beyond the stated errors widens the intervals, and intervals use Student's t for n - p degrees
of freedom. The Elo intervals are taken as independent, though ratings from one pool share
opponents, and the frontier is a maximum over noisy ratings, biased upwards where sizes are
close. The sizes are few and discrete, so the optimal size is a staircase and its exponent is a
rough slope through it. The laws are straight lines in log compute; a frontier that bends (a
saturating game, a budget too short) makes every slope depend on the range studied.
"""

import math

import numpy as np

from azjax.stats import Z95, Line, least_squares, t975, weighted_line

_NOT_ENOUGH = "not enough points"


def _se(row: dict) -> float:
    """A rating's standard error from its 95% interval, or nan where that is unusable."""
    low, high = row.get("elo_low"), row.get("elo_high")
    try:
        se = (float(high) - float(low)) / (2 * Z95)
    except (TypeError, ValueError):
        return math.nan
    return se if math.isfinite(se) and se > 0 else math.nan


def _rated(rows: list[dict]) -> list[dict]:
    """The rows with a point, a finite Elo and positive parameters, flops and simulations."""

    def ok(row: dict) -> bool:
        try:
            int(row["point"])
            values = [float(row[k]) for k in ("elo", "parameters", "flops", "simulations")]
        except (KeyError, TypeError, ValueError):
            return False
        return all(math.isfinite(v) for v in values) and min(values[1:]) > 0

    return [row for row in rows if ok(row)]


def default_simulations(rows: list[dict]) -> int | None:
    """The most common simulation count in `rows` (the largest among ties), or None."""
    counts: dict[int, int] = {}
    for row in _rated(rows):
        counts[int(row["simulations"])] = counts.get(int(row["simulations"]), 0) + 1
    return max(counts, key=lambda s: (counts[s], s)) if counts else None


def _at(rows: list[dict], simulations: int | None) -> list[dict]:
    simulations = default_simulations(rows) if simulations is None else simulations
    return [row for row in _rated(rows) if int(row["simulations"]) == simulations]


def _fit_rows(rows: list[dict], x_key: str) -> Line:
    """weighted_line of Elo against log10 of `x_key` over the rows whose interval is usable."""
    usable = [row for row in rows if math.isfinite(_se(row))]
    x = [math.log10(float(row[x_key])) for row in usable]
    return weighted_line(x, [float(row["elo"]) for row in usable], [_se(row) for row in usable])


def frontier(rows: list[dict], *, simulations: int | None = None) -> list[dict]:
    """The best rating over sizes at each budget point, sorted by point.

    Args:
        rows: the ratings.
        simulations: the simulation count to read (default: the most common in `rows`).

    Returns:
        One dict per point: point, flops (the median over that point's rows), size,
        parameters, elo, elo_low and elo_high of the best rating (the smaller size among ties).
        A rating whose interval is unusable still competes; `frontier_slope` leaves it out.
    """
    by_point: dict[int, list[dict]] = {}
    for row in _at(rows, simulations):
        by_point.setdefault(int(row["point"]), []).append(row)
    result = []
    for point in sorted(by_point):
        group = by_point[point]
        best = max(group, key=lambda r: (float(r["elo"]), -float(r["parameters"])))
        result.append(
            {"point": point, "flops": float(np.median([float(r["flops"]) for r in group]))}
            | {k: best.get(k) for k in ("size", "parameters", "elo", "elo_low", "elo_high")}
        )
    return result


def frontier_slope(rows: list[dict], *, simulations: int | None = None) -> Line:
    """The frontier's Elo against log10(flops): Elo per tenfold training compute.

    Raises:
        ValueError: fewer than 3 frontier points with a usable interval.
    """
    return _fit_rows(frontier(rows, simulations=simulations), "flops")


def compute_to_reach(line: Line, elo: float) -> dict:
    """The training FLOPs at which an Elo-against-log10(FLOPs) line (`frontier_slope`) reaches
    `elo`, with Fieller's 95% interval (`Line.solve`): the prediction that a longer run tests.

    Returns:
        {"elo", "flops", "flops_low", "flops_high"}; an interval side the fit leaves open (a
        slope not resolved at 95%) is inf or 0, and flops is nan for a flat frontier.
    """
    x, low, high = line.solve(elo)
    flops = _power(x) if math.isfinite(x) else math.nan
    return {"elo": elo, "flops": flops, "flops_low": _power(low), "flops_high": _power(high)}


def _power(log10_value: float) -> float:
    """10 ** x, capped at 1e300, with x = -inf or inf as 0 or inf."""
    if not math.isfinite(log10_value):
        return math.inf if log10_value > 0 else 0.0
    return 10 ** min(log10_value, 300.0)


def size_slope(
    rows: list[dict], *, point: int | None = None, simulations: int | None = None
) -> Line:
    """Elo against log10(parameters) across sizes at one budget point (default: the last).

    Raises:
        ValueError: no such point, or fewer than 3 ratings there with a usable interval.
    """
    chosen = _at(rows, simulations)
    points = {int(row["point"]) for row in chosen}
    point = max(points, default=None) if point is None else point
    if point not in points:
        raise ValueError(f"no ratings at budget point {point}")
    return _fit_rows([row for row in chosen if int(row["point"]) == point], "parameters")


def optimal_sizes(rows: list[dict], *, simulations: int | None = None) -> dict:
    """The best size at each budget point and the compute-optimal size exponent.

    Returns:
        {"points": [{point, flops, size, parameters}, ...], "exponent": Line or None}: the
        exponent is an ordinary line of log10(parameters of the best size) against
        log10(flops) (parameters ~ compute^slope). It is None with fewer than 3 points or
        fewer than 2 distinct best sizes: then the budget range did not move the optimum and
        no exponent can be read.
    """
    best = frontier(rows, simulations=simulations)
    points = [{k: entry[k] for k in ("point", "flops", "size", "parameters")} for entry in best]
    exponent = None
    if len(points) >= 3 and len({entry["size"] for entry in points}) >= 2:
        x = [math.log10(entry["flops"]) for entry in points]
        y = [math.log10(float(entry["parameters"])) for entry in points]
        try:
            exponent = weighted_line(x, y)
        except ValueError:  # every point at one flops count
            exponent = None
    return {"points": points, "exponent": exponent}


def exchange_rate(rows: list[dict]) -> dict | None:
    """The train/test trade-off: how many tenfolds of simulations one tenfold of training is worth.

    Fits Elo = a + b log10(flops) + c log10(simulations) by weighted least squares over the
    usable ratings, at every simulation count, of the checkpoints on the frontier at the default
    simulation count.

    Returns:
        {"train_slope": b, "test_slope": c, "ratio": b / c, "ratio_low", "ratio_high" (95%, delta
        method), "rows": n}, or None with fewer than 2 simulation counts, fewer than 4 usable
        rows or a design that cannot separate the two slopes.
    """
    on_frontier = {(entry["point"], entry["size"]) for entry in frontier(rows)}
    usable = [
        row
        for row in _rated(rows)
        if (int(row["point"]), row.get("size")) in on_frontier and math.isfinite(_se(row))
    ]
    if len({int(row["simulations"]) for row in usable}) < 2 or len(usable) < 4:
        return None
    design = [
        [1.0, math.log10(float(row["flops"])), math.log10(float(row["simulations"]))]
        for row in usable
    ]
    try:
        coef, cov, dof = least_squares(
            design, [float(r["elo"]) for r in usable], [_se(r) for r in usable]
        )
    except ValueError:
        return None
    b, c = float(coef[1]), float(coef[2])
    ratio = b / c if c else math.nan
    gradient = np.array([1 / c, -b / c**2]) if c else np.full(2, np.nan)
    half = t975(dof) * math.sqrt(max(0.0, float(gradient @ cov[1:, 1:] @ gradient)))
    interval = {"ratio_low": ratio - half, "ratio_high": ratio + half, "rows": len(usable)}
    return {"train_slope": b, "test_slope": c, "ratio": ratio} | interval


def _sci(value) -> str:
    """A number in short scientific notation: 3.2e12 (0 and inf as they are)."""
    if not math.isfinite(float(value)) or not value:
        return f"{float(value):g}"
    mantissa, exponent = f"{float(value):.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _bounds(row: dict) -> tuple[float, float]:
    """A rating's 95% interval, or (elo, elo) where that is unusable."""
    if math.isfinite(_se(row)):
        return float(row["elo_low"]), float(row["elo_high"])
    return float(row["elo"]), float(row["elo"])


def _elo(row: dict) -> str:
    low, high = _bounds(row)
    bounds = f" [{low:.0f}, {high:.0f}]" if math.isfinite(_se(row)) else ""
    return f"{float(row['elo']):.0f}{bounds}"


def _interval(line: Line, digits: int = 0) -> str:
    return f"{line.slope:.{digits}f} [{line.slope_low:.{digits}f}, {line.slope_high:.{digits}f}]"


_FITS = (  # (key, what the slope is)
    ("compute", "Elo per tenfold compute on the frontier"),
    ("parameters", "Elo per tenfold parameters at the full budget"),
    ("exponent", "Optimal-size exponent (parameters ~ compute^x)"),
    ("exchange", "One tenfold of training compute is worth"),
)
# (fit key, quantity, published figure, how it differs or how sure the figure is). Jones's
# figures are his paper's words; Neumann & Gros's exponents were read from secondary notes
# and their code, not from the paper's text. Their "Elo" is BayesElo over win/loss-coded
# games (its draw model stretches gaps against plain logistic Elo); Jones's and azjax's are
# plain Bradley-Terry. 400 x exponent is Elo per tenfold if strength is 10^(Elo/400).
_PAPERS = (
    ("parameters", "Elo per tenfold parameters",
     "Neumann & Gros 2023, Connect Four: alpha_N ~0.88, ~350 Elo per tenfold",
     "their MLPs (OpenSpiel, 300 simulations) trained to convergence, BayesElo; here a "
     "ResNet at one fixed budget; exponent from secondary sources"),
    ("exponent", "optimal-size exponent",
     "Neumann & Gros 2023: N_opt ~ C^0.63 (alpha_C / alpha_N)",
     "from secondary sources, not the paper's text"),
    ("compute", "Elo per tenfold compute on the frontier",
     "Jones 2021, Hex 3x3-9x9: 500 Elo per tenfold; Neumann & Gros: alpha_C ~0.55 (~220)",
     "Jones: the paper's words, PUCT with N for sqrt(N) (boardlaw #15)"),
    ("exchange", "train/test exchange (tenfolds of simulations per tenfold of training)",
     "Jones 2021, Hex 9x9: each 10x of train compute saves ~15x of test compute (~1.2)",
     "the paper's words; his test compute is tree nodes, here simulations"),
)  # fmt: skip


def _fits(rows: list[dict]) -> dict[str, str]:
    """The fitted slopes as text, or "not enough points" where a fit is impossible."""
    fits: dict[str, str] = {}
    for name, fit in (("compute", frontier_slope), ("parameters", size_slope)):
        try:
            fits[name] = _interval(fit(rows))
        except ValueError:
            fits[name] = _NOT_ENOUGH
    exponent = optimal_sizes(rows)["exponent"]
    fits["exponent"] = (
        _interval(exponent, 2) if exponent else f"{_NOT_ENOUGH} (or the best size did not move)"
    )
    rate = exchange_rate(rows)
    fits["exchange"] = (
        f"{rate['ratio']:.2f} [{rate['ratio_low']:.2f}, {rate['ratio_high']:.2f}] tenfolds of "
        f"simulations (about {10 ** min(rate['ratio'], 300.0):.2g}-fold; {rate['rows']} ratings)"
        if rate and math.isfinite(rate["ratio"])
        else f"{_NOT_ENOUGH} (needs 2+ simulation counts and 4+ frontier ratings)"
    )
    return fits


def _reach(rows: list[dict], elo: float) -> str:
    try:
        reach = compute_to_reach(frontier_slope(rows), elo)
    except ValueError:
        return _NOT_ENOUGH
    if not math.isfinite(reach["flops"]):
        return "never (a flat frontier)"
    return f"{_sci(reach['flops'])} FLOPs [{_sci(reach['flops_low'])}, {_sci(reach['flops_high'])}]"


def report_markdown(
    rows: list[dict], *, title: str, papers: bool = True, targets: tuple = ()
) -> str:
    """A Markdown section: every rating, the frontier, the fitted slopes, the compute to reach
    each target and the literature.

    Args:
        rows: the ratings.
        title: the section's heading.
        papers: add a table of the published figures beside this study's.
        targets: (label, Elo) pairs such as ("0.8 against mcts:800", 612.0) (`elo_for_score`).
    """
    rated = sorted(
        _rated(rows), key=lambda r: (float(r["parameters"]), r["point"], r["simulations"])
    )
    lines = [f"## {title}", "", "| size | parameters | point | flops | simulations | Elo [95%] |"]
    lines.append("|---|---:|---:|---:|---:|---|")
    lines += [
        f"| {r.get('size')} | {int(r['parameters']):,} | {r['point']} | {_sci(r['flops'])} "
        f"| {int(r['simulations'])} | {_elo(r)} |"
        for r in rated
    ]
    sims = default_simulations(rows)
    lines += ["", f"Frontier (the best size at each budget point, {sims} simulations):", ""]
    lines += ["| point | flops | size | parameters | Elo [95%] |", "|---:|---:|---|---:|---|"]
    lines += [
        f"| {e['point']} | {_sci(e['flops'])} | {e['size']} | {int(e['parameters']):,} "
        f"| {_elo(e)} |"
        for e in frontier(rows)
    ]
    fits = _fits(rows)
    lines += ["", "Fits (slope [95% interval]):", ""]
    lines += [f"- {label}: {fits[key]}" for key, label in _FITS]
    if targets:
        lines += ["", "Compute to reach (the frontier's line, Fieller's 95% interval):", ""]
        lines += [f"- {label} (Elo {elo:.0f}): {_reach(rows, elo)}" for label, elo in targets]
    if papers:
        lines += ["", "| quantity | this study | published | differences |", "|---|---|---|---|"]
        lines += [
            f"| {name} | {fits[key]} | {text} | {caveat} |" for key, name, text, caveat in _PAPERS
        ]
    return "\n".join(lines) + "\n"


def plot_frontier(rows: list[dict], output=None, *, axes=None):
    """Elo (95% error bars) against training flops, one line per size, the frontier dashed.

    Args:
        rows: the ratings (at the most common simulation count).
        output: a file to save the figure to, or None.
        axes: matplotlib axes to draw on (default: a new figure).

    Returns:
        The figure.
    """
    import matplotlib.pyplot as plt  # noqa: PLC0415  (slow import)

    if axes is None:
        _, axes = plt.subplots(figsize=(7, 4.5))
    chosen = _at(rows, None)
    sizes = sorted(
        {row.get("size") for row in chosen},
        key=lambda s: min(float(r["parameters"]) for r in chosen if r.get("size") == s),
    )
    for size in sizes:
        mine = sorted((r for r in chosen if r.get("size") == size), key=lambda r: r["point"])
        elo = np.array([float(r["elo"]) for r in mine])
        low, high = np.array([_bounds(r) for r in mine]).T
        label = f"{size} ({int(mine[0]['parameters']):,} parameters)"
        errors = np.clip([elo - low, high - elo], 0, None)
        flops = [float(r["flops"]) for r in mine]
        axes.errorbar(flops, elo, yerr=errors, marker="o", capsize=3, label=label)
    best = frontier(rows)
    flops, elo = [e["flops"] for e in best], [float(e["elo"]) for e in best]
    axes.plot(flops, elo, "k--", linewidth=3, label="frontier")
    axes.set_xscale("log")
    axes.set_xlabel("training FLOPs")
    axes.set_ylabel("Elo")
    axes.legend(fontsize="small")
    figure = axes.figure
    if output is not None:
        figure.savefig(output, bbox_inches="tight")
    return figure
