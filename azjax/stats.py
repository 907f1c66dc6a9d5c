"""Small statistics shared by matches, runs, plots and the frontier's fits (no jax): the
Wilson interval of a win rate, the Elo that expects a score, Student's t, and weighted
least-squares lines with intervals (and where they reach a value)."""

import math
from dataclasses import dataclass

import numpy as np

# z of a two-sided 95% interval
Z95 = 1.959963984540054


def wilson_interval(rate: float, games: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval (95% by default) of a proportion seen over `games` games.

    Returns (nan, nan) for no games or a non-finite rate.
    """
    if not games or not math.isfinite(rate):
        return math.nan, math.nan
    denominator = 1 + z * z / games
    centre = (rate + z * z / (2 * games)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / games + z * z / (4 * games * games)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def elo_for_score(anchor_elo: float, score: float) -> float:
    """The Elo at which a player expects `score` against an anchor rated `anchor_elo`."""
    if not 0 < score < 1:
        raise ValueError(f"a target score is between 0 and 1 (both excluded), not {score}")
    return anchor_elo + 400 * math.log10(score / (1 - score))


# Student's t 0.975 quantiles for 1..30 degrees of freedom
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip


def t975(dof: int) -> float:
    """The 0.975 quantile of Student's t with `dof` degrees of freedom (two-sided 95%)."""
    if dof < 1:
        raise ValueError(f"Student's t needs at least 1 degree of freedom, not {dof}")
    if dof <= len(_T975):
        return _T975[dof - 1]
    z = Z95  # Cornish-Fisher expansion: within 0.0005 beyond 30
    return z + (z**3 + z) / (4 * dof) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * dof**2)


@dataclass(frozen=True)
class Line:
    """A fitted line y = intercept + slope * x with a 95% interval on the slope."""

    intercept: float
    slope: float
    slope_low: float
    slope_high: float
    intercept_se: float
    slope_se: float
    points: int
    covariance: float = 0.0  # of the intercept and the slope

    def at(self, x):
        """The line's value at `x` (a number or an array)."""
        return self.intercept + self.slope * np.asarray(x, dtype=float)

    def solve(self, y: float) -> tuple[float, float, float]:
        """Where the line reaches `y`: x = (y - intercept) / slope, with Fieller's 95% interval
        (the x whose line values' 95% band holds `y`, Student's t for points - 2 degrees of
        freedom).

        Returns:
            (x, low, high); a side the band never closes is infinite (a slope not resolved at
            95% leaves one side or both open); x is nan for a flat line.
        """
        a, b = self.intercept, self.slope
        if not b:
            return math.nan, -math.inf, math.inf
        x = (y - a) / b
        t2 = t975(self.points - 2) ** 2 if self.points > 2 else math.inf
        # (a + b x - y)^2 <= t^2 (var_a + 2 x cov + x^2 var_b): q(x) = A x^2 + B x + C <= 0
        qa = b * b - t2 * self.slope_se**2
        qb = 2 * ((a - y) * b - t2 * self.covariance)
        qc = (a - y) ** 2 - t2 * self.intercept_se**2
        disc = qb * qb - 4 * qa * qc
        if not math.isfinite(disc) or disc < 0 or qa == 0:
            return x, -math.inf, math.inf
        roots = sorted(((-qb - math.sqrt(disc)) / (2 * qa), (-qb + math.sqrt(disc)) / (2 * qa)))
        if qa > 0:
            return x, roots[0], roots[1]
        # an unresolved slope: the band holds y outside the roots, on x's side
        return (x, roots[1], math.inf) if x >= roots[1] else (x, -math.inf, roots[0])


def least_squares(design, y, se) -> tuple[np.ndarray, np.ndarray, int]:
    """Weighted least squares of `y` on the columns of `design`.

    Args:
        design: an (n, p) array.
        y: n values.
        se: their standard errors (weights 1/se^2), or None for ordinary least squares, whose
            covariance is then always scaled by the residual variance.

    Returns:
        The p coefficients, their (p, p) covariance and the degrees of freedom n - p.
    """
    design, y = np.asarray(design, dtype=float), np.asarray(y, dtype=float)
    n, p = design.shape
    unweighted = se is None
    se = np.ones(n) if se is None else np.broadcast_to(np.asarray(se, dtype=float), (n,))
    if not (np.all(np.isfinite(design)) and np.all(np.isfinite(y)) and np.all(np.isfinite(se))):
        raise ValueError("a least-squares fit needs finite values and errors")
    if np.any(se <= 0):
        raise ValueError("a least-squares fit needs positive standard errors")
    if n <= p:
        raise ValueError(f"a fit of {p} coefficients needs at least {p + 1} points, not {n}")
    w = 1 / se
    coef, _, rank, _ = np.linalg.lstsq(design * w[:, None], y * w, rcond=None)
    if rank < p:
        raise ValueError("a least-squares fit needs points that vary in every variable")
    dof = n - p
    reduced = float(np.sum(((y - design @ coef) * w) ** 2)) / dof
    cov = np.linalg.inv((design * (w * w)[:, None]).T @ design)
    return coef, cov * (reduced if unweighted else max(1.0, reduced)), dof


def weighted_line(x, y, se=None) -> Line:
    """The weighted least-squares line y = a + b*x (weights 1/se^2) with a 95% slope interval.

    Args:
        x, y: at least 3 points.
        se: the standard errors of y (absolute: the covariance is scaled by the reduced
            chi-square only where that is over 1), or None for an ordinary fit whose covariance
            is always scaled by the residual variance.

    Raises:
        ValueError: fewer than 3 points, non-finite values, non-positive errors or a constant x.
    """
    x = np.asarray(x, dtype=float)
    if x.size < 3:
        raise ValueError(f"a line with an interval needs at least 3 points, not {x.size}")
    coef, cov, dof = least_squares(np.column_stack([np.ones_like(x), x]), y, se)
    slope_se = math.sqrt(cov[1, 1])
    half = t975(dof) * slope_se
    b = float(coef[1])
    intercept_se = math.sqrt(cov[0, 0])
    return Line(
        float(coef[0]), b, b - half, b + half, intercept_se, slope_se, x.size, float(cov[0, 1])
    )
