"""The small statistics of `azjax.stats`: Student's t quantiles and the weighted
least-squares line with its 95% interval (against numpy's fits and by coverage)."""

import math

import numpy as np
import pytest

from azjax import stats


def test_t_quantiles():
    assert stats.t975(1) == pytest.approx(12.706)
    assert stats.t975(3) == pytest.approx(3.182)
    assert stats.t975(30) == pytest.approx(2.042)
    assert stats.t975(31) == pytest.approx(2.0395, abs=0.0005)
    assert stats.t975(60) == pytest.approx(2.0003, abs=0.0005)
    assert stats.t975(10_000) == pytest.approx(1.960, abs=0.001)
    with pytest.raises(ValueError):
        stats.t975(0)


def test_weighted_line_matches_numpy_and_recovers_a_slope():
    rng = np.random.default_rng(1)
    x = np.linspace(0, 3, 8)
    se = np.array([10, 20, 15, 40, 10, 25, 30, 12], dtype=float)
    y = 50 + 120 * x + rng.normal(0, se)
    line = stats.weighted_line(x, y, se)
    slope, intercept = np.polyfit(x, y, 1, w=1 / se)
    assert (line.slope, line.intercept) == pytest.approx((slope, intercept))
    # the unscaled WLS covariance, times the reduced chi-square where that is over 1
    _, unscaled = np.polyfit(x, y, 1, w=1 / se, cov="unscaled")
    chi2 = float(np.sum(((y - line.at(x)) / se) ** 2)) / (len(x) - 2)
    assert line.slope_se == pytest.approx(math.sqrt(unscaled[0, 0] * max(1.0, chi2)))
    assert line.intercept_se == pytest.approx(math.sqrt(unscaled[1, 1] * max(1.0, chi2)))
    assert line.slope_high - line.slope == pytest.approx(stats.t975(6) * line.slope_se)
    assert line.slope_low < 120 < line.slope_high
    assert abs(line.slope - 120) < 20
    assert line.points == 8
    assert line.at(2.0) == pytest.approx(intercept + 2 * slope)
    np.testing.assert_allclose(line.at(x), intercept + slope * x)


def test_weighted_line_interval_covers_at_95_percent():
    """Over many small fits the interval covers the true slope at least 95% of the time when the
    stated errors are right (more: with 3 degrees of freedom Student's t is conservative for
    known errors), and about 95% when the scatter is three times larger (the reduced chi-square
    widens it); a normal quantile or no rescaling would fall far short there."""
    rng = np.random.default_rng(2)
    x = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    se = np.array([20.0, 30.0, 20.0, 25.0, 40.0])
    for scatter, low, high in ((1.0, 0.95, 1.0), (3.0, 0.93, 0.97)):
        covered = 0
        trials = 2000
        for _ in range(trials):
            y = 10 + 250 * x + rng.normal(0, scatter * se)
            line = stats.weighted_line(x, y, se)
            covered += line.slope_low <= 250 <= line.slope_high
        assert low <= covered / trials <= high, (scatter, covered / trials)


def test_elo_for_score():
    assert stats.elo_for_score(100.0, 0.5) == 100.0
    assert stats.elo_for_score(100.0, 0.8) == pytest.approx(100 + 400 * math.log10(4))
    assert stats.elo_for_score(0.0, 0.2) == pytest.approx(-400 * math.log10(4))
    for score in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="between 0 and 1"):
            stats.elo_for_score(0.0, score)


def test_solve_inverts_the_line_with_fiellers_interval():
    """x where the line reaches y; the interval's ends are where the line's 95% band reaches
    y, and over many fits it covers the true x at about 95% (beyond the data, as a
    prediction is)."""
    rng = np.random.default_rng(4)
    x = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    se = np.array([20.0, 30.0, 20.0, 25.0, 40.0])
    y = 10 + 250 * x + rng.normal(0, se)
    line = stats.weighted_line(x, y, se)
    at, low, high = line.solve(700.0)
    assert at == pytest.approx((700 - line.intercept) / line.slope)
    assert low < at < high

    def band(v):
        var = line.intercept_se**2 + 2 * v * line.covariance + v * v * line.slope_se**2
        return stats.t975(3) * math.sqrt(var)

    assert line.at(low) + band(low) == pytest.approx(700.0)
    assert line.at(high) - band(high) == pytest.approx(700.0)
    _, unscaled = np.polyfit(x, y, 1, w=1 / se, cov="unscaled")
    chi2 = float(np.sum(((y - line.at(x)) / se) ** 2)) / (len(x) - 2)
    assert line.covariance == pytest.approx(unscaled[0, 1] * max(1.0, chi2))

    covered, trials, truth = 0, 2000, (700 - 10) / 250  # 2.76, beyond the data's x
    for _ in range(trials):
        fit = stats.weighted_line(x, 10 + 250 * x + rng.normal(0, se), se)
        _, low, high = fit.solve(700.0)
        covered += low <= truth <= high
    assert 0.95 <= covered / trials <= 1.0, covered / trials


def test_solve_leaves_a_side_open_where_the_slope_is_unresolved():
    wide = stats.Line(0.0, 10.0, -30.0, 50.0, 1.0, 20.0, 5)  # slope 10 +- 20
    at, low, high = wide.solve(100.0)
    assert at == pytest.approx(10.0)
    assert high == math.inf and 0 < low < at
    at, low, high = wide.solve(-100.0)
    assert at == pytest.approx(-10.0) and low == -math.inf and at < high < 0
    flat = stats.Line(5.0, 0.0, -1.0, 1.0, 1.0, 0.5, 5)
    at, low, high = flat.solve(10.0)
    assert math.isnan(at) and (low, high) == (-math.inf, math.inf)


def test_weighted_line_unweighted_scales_by_the_residuals():
    rng = np.random.default_rng(3)
    x = np.linspace(12, 15, 7)
    y = -5 + 0.6 * x + rng.normal(0, 0.02, x.size)
    line = stats.weighted_line(x, y)
    (slope, _), cov = np.polyfit(x, y, 1, cov=True)
    assert line.slope == pytest.approx(slope)
    assert line.slope_se == pytest.approx(math.sqrt(cov[0, 0]))
    assert line.slope_high - line.slope_low < 0.1  # not the width an se of 1 would give


def test_weighted_line_refuses_bad_input():
    with pytest.raises(ValueError, match="at least 3 points"):
        stats.weighted_line([1, 2], [3, 4], [1, 1])
    with pytest.raises(ValueError, match="vary"):
        stats.weighted_line([1, 1, 1], [3, 4, 5], [1, 1, 1])
    with pytest.raises(ValueError, match="positive"):
        stats.weighted_line([1, 2, 3], [3, 4, 5], [1, 0, 1])
    with pytest.raises(ValueError, match="finite"):
        stats.weighted_line([1, 2, 3], [3, math.nan, 5], [1, 1, 1])
