"""Small statistics shared by matches, runs and plots (no jax)."""

import math

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
