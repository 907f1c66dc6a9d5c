"""The bench's base types and timing: how much work a measurement does (`Settings`), a line
of the table (`Row`), and `jit` and `time_call`, which the measurements and the harness share.
"""

import math
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax


class Settings(NamedTuple):
    """How much work each measurement does (static Python numbers)."""

    num_plies: int  # random-play plies per timed call
    min_seconds: float  # each timed repetition repeats the call at least this long
    max_repeats: int  # timed repetitions; the best one is reported
    budget_seconds: float  # stop repeating once this much time was spent timing
    num_updates: int  # learner updates per timed call
    optimize: bool  # False: XLA backend optimisation off, for compile speed (rates not meaningful)


FULL = Settings(
    num_plies=256, min_seconds=0.2, max_repeats=5, budget_seconds=2.0, num_updates=4, optimize=True
)
QUICK = Settings(
    num_plies=16, min_seconds=0.0, max_repeats=1, budget_seconds=0.0, num_updates=2, optimize=False
)
QUICK_MAX_BATCH = 64  # --quick keeps the batch sizes up to this one


class Row(NamedTuple):
    """One line of the table: a rate for azjax and, for environment steps, for pgx."""

    name: str  # what is counted, e.g. "env steps (random play)"
    batch_size: int
    rate: float  # items per second, azjax
    pgx_rate: float | None = None  # items per second, pgx; None where not measured
    pgx_note: str = ""  # why an env row has no `pgx_rate` (see `pgx.py`)

    @property
    def ratio(self) -> float | None:
        """azjax / pgx, where pgx was measured."""
        return None if self.pgx_rate is None else self.rate / self.pgx_rate


def jit(fn: Callable, settings: Settings) -> Callable:
    """`jax.jit(fn)`, compiled without backend optimisation when `settings.optimize` is off.

    A smoke test spends most of its time compiling; XLA:CPU compiles about twice as fast
    at backend optimisation level 0.
    """
    options = None if settings.optimize else {"xla_backend_optimization_level": 0}
    return jax.jit(fn, compiler_options=options)


def time_call(fn: Callable, *args, settings: Settings) -> tuple[float, Any]:
    """Times `fn(*args)` after a warm-up call that compiles it.

    Returns:
      The seconds per call, best of up to `settings.max_repeats` repetitions (each repeating
      the call for at least `settings.min_seconds`), and the output of the warm-up call.
    """
    output = jax.block_until_ready(fn(*args))
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    once = time.perf_counter() - start
    calls = max(1, math.ceil(settings.min_seconds / max(once, 1e-9)))
    best, spent = once, once
    for _ in range(settings.max_repeats):
        start = time.perf_counter()
        for _ in range(calls):
            jax.block_until_ready(fn(*args))
        elapsed = time.perf_counter() - start
        best, spent = min(best, elapsed / calls), spent + elapsed
        if spent >= settings.budget_seconds:
            break
    return best, output
