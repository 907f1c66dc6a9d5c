"""Compute-frontier fits (`azjax.apps.frontier_fit`) on synthetic ratings from known laws: the
frontier, the slopes, the optimal-size exponent, the train/test exchange rate and the Markdown
report (pure numpy, no jax; the weighted line itself is `tests/test_stats.py`'s)."""

import math

import numpy as np
import pytest

from azjax.apps import frontier_fit as ff

Z = 1.959963984540054
# The law: log10 parameters lp = 0.3 i over 6 sizes (31.6x), log10 compute lf = 0.5 k over 6
# budget points; Elo = 1000 + min(400 lp, 420 lf - 300 lp) + SIM_SLOPE log10(sims / 16). The
# optimum is lp = 420 lf / 700 = 0.6 lf, which is size k at point k, so the frontier is
# 1000 + 240 lf exactly; at the full budget (lf = 2.5) every size is on its cap, 400 per tenfold
# parameters; at point 0 bigger is worse, -300 per tenfold.
EXPONENT, FRONTIER_SLOPE, SIZE_SLOPE = 0.6, 240.0, 400.0
SIM_SLOPE = 200.0


def rating(elo: float, noise: float, **fields) -> dict:
    """A row with `elo` and its 95% interval for a standard error of `noise`."""
    return fields | {"elo": elo, "elo_low": elo - Z * noise, "elo_high": elo + Z * noise}


def law_rows(sims=(64,), noise=15.0, seed=0) -> list[dict]:
    """Ratings of 6 sizes at 6 budget points under the law above, with Gaussian noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for point in range(6):
        lf = 0.5 * point
        for i in range(6):
            lp = 0.3 * i
            for s in sims:
                true = 1000 + min(400 * lp, 420 * lf - 300 * lp) + SIM_SLOPE * math.log10(s / 16)
                elo = true + rng.normal(0, noise)
                flops = 1e12 * 10**lf * (1 + 0.01 * rng.standard_normal())
                fields = {"size": f"{16 * 2**i}x4", "parameters": round(1e5 * 10**lp)}
                fields |= {"flops": flops, "point": point, "simulations": s, "games": 200}
                rows.append(rating(elo, noise, **fields))  # games: ignored
    return rows


def test_frontier_picks_the_best_size_at_each_point():
    rows = law_rows()
    best = ff.frontier(rows)
    assert [e["point"] for e in best] == list(range(6))
    assert [e["size"] for e in best] == [f"{16 * 2**i}x4" for i in range(6)]
    for entry in best:
        at_point = [r for r in rows if r["point"] == entry["point"]]
        top = max(at_point, key=lambda r: r["elo"])
        assert (entry["elo"], entry["parameters"]) == (top["elo"], top["parameters"])
        assert entry["elo_low"] == top["elo_low"]
        assert entry["flops"] == pytest.approx(np.median([r["flops"] for r in at_point]))


def test_frontier_reads_one_simulation_count():
    rows = law_rows(sims=(16, 64)) + law_rows(sims=(256,), seed=5)[:4]
    assert ff.default_simulations(rows) == 64  # 16 and 64 tie on 36 rows: the larger
    best = ff.frontier(rows)
    assert len(best) == 6
    assert best[0]["elo"] == max(
        r["elo"] for r in rows if r["point"] == 0 and r["simulations"] == 64
    )
    assert len(ff.frontier(rows, simulations=256)) == 1
    assert ff.frontier([]) == []


def test_frontier_and_size_slopes_recover_the_law():
    rows = law_rows()
    compute = ff.frontier_slope(rows)
    assert compute.slope_low < FRONTIER_SLOPE < compute.slope_high
    assert abs(compute.slope - FRONTIER_SLOPE) < 25
    assert compute.points == 6
    size = ff.size_slope(rows)  # the last point: every size on its cap
    assert size.slope_low < SIZE_SLOPE < size.slope_high
    assert abs(size.slope - SIZE_SLOPE) < 30
    early = ff.size_slope(rows, point=0)  # the smallest budget: bigger is worse
    assert early.slope_low < -300 < early.slope_high
    with pytest.raises(ValueError, match="point 9"):
        ff.size_slope(rows, point=9)


def test_fits_skip_unusable_intervals_and_barely_weigh_wide_ones():
    rows = law_rows()
    first = next(r for r in ff.frontier(rows) if r["point"] == 0)
    for row in rows:
        if row["point"] == 0 and row["size"] == first["size"]:
            row["elo_low"], row["elo_high"] = -math.inf, math.inf
        if row["point"] == 5 and row["size"] == "512x4":  # won every game: far off, ±1500
            row["elo"] += 400
            row["elo_low"], row["elo_high"] = row["elo"] - 1500, row["elo"] + 1500
        if row["point"] == 3 and row["size"] == "128x4":
            del row["elo_high"]
    line = ff.frontier_slope(rows)
    assert line.points == 4  # points 0 and 3 left out
    assert abs(line.slope - FRONTIER_SLOPE) < 30  # the +400 at point 5 counts for little
    assert f"| {first['elo']:.0f} |" in ff.report_markdown(rows, title="t")  # listed, no interval


def test_optimal_size_exponent():
    result = ff.optimal_sizes(law_rows())
    assert [p["point"] for p in result["points"]] == list(range(6))
    assert set(result["points"][0]) == {"point", "flops", "size", "parameters"}
    exponent = result["exponent"]
    assert abs(exponent.slope - EXPONENT) < 0.03
    assert exponent.slope_low < EXPONENT < exponent.slope_high
    # the optimum never moves (one size) or too few points: no exponent
    one_size = [r for r in law_rows() if r["size"] == "16x4"]
    assert ff.optimal_sizes(one_size)["exponent"] is None
    two_points = [r for r in law_rows() if r["point"] < 2]
    assert ff.optimal_sizes(two_points)["exponent"] is None


@pytest.mark.parametrize("sims", [(16, 256), (16, 64, 256)])
def test_exchange_rate_recovers_the_ratio(sims):
    rows = law_rows(sims=sims, noise=10.0)
    rate = ff.exchange_rate(rows)
    truth = FRONTIER_SLOPE / SIM_SLOPE  # 1.2
    assert rate["rows"] == 6 * len(sims)  # only the frontier's checkpoints
    assert abs(rate["train_slope"] - FRONTIER_SLOPE) < 20
    assert abs(rate["test_slope"] - SIM_SLOPE) < 20
    assert rate["ratio"] == pytest.approx(rate["train_slope"] / rate["test_slope"])
    assert rate["ratio_low"] < truth < rate["ratio_high"]
    assert abs(rate["ratio"] - truth) < 0.12


def test_exchange_rate_interval_by_the_delta_method():
    """One size whose second simulation count grows with compute, so the two slopes are
    correlated: the ratio's interval (delta method, with the covariance term) matches the
    spread of the ratio over many draws and covers the truth."""
    rng = np.random.default_rng(7)
    ratios, ses, covered = [], [], 0
    for _ in range(300):
        rows = []
        for k in range(6):
            for s in (100, 32 * 2**k):
                elo = 1000 + 240 * 0.5 * k + SIM_SLOPE * math.log10(s) + rng.normal(0, 15)
                fields = {"size": "a", "parameters": 10**5, "flops": 1e12 * 10 ** (0.5 * k)}
                rows.append(rating(elo, 15, point=k, simulations=s, **fields))
        rate = ff.exchange_rate(rows)
        ratios.append(rate["ratio"])
        ses.append((rate["ratio_high"] - rate["ratio"]) / ff.t975(rate["rows"] - 3))
        covered += rate["ratio_low"] < 1.2 < rate["ratio_high"]
    assert 0.95 < np.mean(ses) / np.std(ratios) < 1.25
    assert covered / 300 >= 0.95


def test_exchange_rate_needs_two_simulation_counts_and_four_rows():
    assert ff.exchange_rate(law_rows()) is None
    rows = [r for r in law_rows(sims=(16, 256)) if r["point"] == 5]  # 2 frontier rows
    assert ff.exchange_rate(rows) is None
    assert ff.exchange_rate([]) is None


def test_compute_to_reach_inverts_the_frontier():
    """At 64 simulations the frontier is 1000 + 200 log10(4) + 240 log10(flops / 1e12): its
    last point, 10^2.5 times 1e12, is at 1720."""
    rows = law_rows(noise=5.0)
    elo = 1000 + SIM_SLOPE * math.log10(4) + 240 * 2.5
    reach = ff.compute_to_reach(ff.frontier_slope(rows), elo)
    assert reach["elo"] == elo
    assert math.log10(reach["flops"]) == pytest.approx(14.5, abs=0.1)
    assert reach["flops_low"] < 10**14.5 < reach["flops_high"]
    beyond = ff.compute_to_reach(ff.frontier_slope(rows), elo + 480)  # 2 tenfolds on: wider
    width = math.log10(beyond["flops_high"] / beyond["flops_low"])
    assert width > math.log10(reach["flops_high"] / reach["flops_low"])


def test_report_markdown():
    rows = law_rows(sims=(16, 64, 256))
    text = ff.report_markdown(rows, title="Connect Four frontier")
    assert text.startswith("## Connect Four frontier\n")
    assert "| size | parameters | point | flops | simulations | Elo [95%] |" in text
    assert "| point | flops | size | parameters | Elo [95%] |" in text
    assert "| 512x4 | 3,162,278 | 5 | 3.2e14 | 256 |" in text
    assert text.count("\n| 16x4 |") == 18  # every rating listed
    compute = ff.frontier_slope(rows)
    assert f"{compute.slope:.0f} [{compute.slope_low:.0f}, {compute.slope_high:.0f}]" in text
    assert f"{ff.optimal_sizes(rows)['exponent'].slope:.2f} [" in text
    assert f"{ff.exchange_rate(rows)['ratio']:.2f} [" in text
    assert "not enough points" not in text
    assert "C^0.63" in text and "~15x" in text and "~350" in text and "500 Elo" in text
    assert text.count("| differences |") == 1 and "boardlaw #15" in text
    assert "Neumann" not in ff.report_markdown(rows, title="t", papers=False)
    assert "Compute to reach" not in text
    text = ff.report_markdown(rows, title="t", targets=[("0.8 against mcts:800", 1700.0)])
    reach = ff.compute_to_reach(ff.frontier_slope(rows), 1700.0)
    assert f"- 0.8 against mcts:800 (Elo 1700): {ff._sci(reach['flops'])} FLOPs [" in text


def test_report_markdown_with_two_rows_says_not_enough_points():
    text = ff.report_markdown(law_rows()[:2], title="tiny")
    assert text.count("not enough points") >= 4  # each fit, in the list (and the papers table)
    assert "(Elo 900): not enough points" in ff.report_markdown(
        law_rows()[:2], title="tiny", targets=[("0.5 against random", 900.0)]
    )
    assert "| 16x4 | 100,000 | 0 | 1.0e12 | 64 |" in text
    assert "not enough points" in ff.report_markdown([], title="empty")


def test_plot_frontier(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = ff.plot_frontier(law_rows(), tmp_path / "frontier.png")
    try:
        assert (tmp_path / "frontier.png").stat().st_size > 0
        (axes,) = figure.axes
        assert axes.get_xscale() == "log"
        labels = [t.get_text() for t in axes.get_legend().get_texts()]
        assert "16x4 (100,000 parameters)" in labels and "frontier" in labels
        assert len(labels) == 7
        (dashed,) = [line for line in axes.lines if line.get_linestyle() == "--"]
        assert len(dashed.get_xdata()) == 6
    finally:
        plt.close(figure)
