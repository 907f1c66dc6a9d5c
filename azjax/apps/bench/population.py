"""What a population costs: `azjax bench --population 1,2,4,8 --config EXP`.

For each population size K the members of `EXP` (learning rates spread over a decade, so the
members really differ) run whole iterations, self-play and learner updates, as one compiled
program (`population.compile_population`). The table gives the wall clock per iteration and
per member-iteration, and the latter's ratio to K = 1 measured in the same run: below 1, a
member costs less in a population than alone. The first iteration (which compiles) is timed
apart.
"""

import time

import jax
import ml_collections
import numpy as np

from azjax import config as config_lib
from azjax.config import build
from azjax.training import compiled, population
from azjax.types import UserError


def measure(config, sizes, *, iterations: int = 3, log=print) -> list[dict]:
    """Rows {members, compile_s, iteration_s, member_iteration_s, ratio} for each K."""
    rows = []
    for size in sizes:
        configs = []
        for index in range(size):
            member = ml_collections.ConfigDict(config.to_dict())
            member.seed = index
            member.learner.learning_rate = float(config.learner.learning_rate) * 10 ** (
                index / max(size - 1, 1) - 0.5
            )
            configs.append(member)
        run = population.compile_population(build.make_settings(config), size)
        hyper = population.stack([build.make_hyperparams(c) for c in configs])
        keys = np.stack([jax.random.PRNGKey(c.seed) for c in configs])
        started = time.perf_counter()
        state = run.init(keys)
        state, _ = compiled.iterate(run, state, hyper)
        jax.block_until_ready(state)
        compile_seconds = time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(iterations):
            state, _ = compiled.iterate(run, state, hyper)
        jax.block_until_ready(state)
        seconds = (time.perf_counter() - started) / iterations
        rows.append(
            dict(
                members=size,
                compile_s=compile_seconds,
                iteration_s=seconds,
                member_iteration_s=seconds / size,
            )
        )
        log(f"K={size}: {seconds:.2f} s per iteration ({compile_seconds:.1f} s first)")
    base = rows[0]["member_iteration_s"] if rows[0]["members"] == 1 else None
    for row in rows:
        row["ratio"] = row["member_iteration_s"] / base if base else float("nan")
    return rows


def format_rows(config, rows: list[dict]) -> str:
    devices = jax.devices()
    lines = [
        f"population cost: {config.name} ({config.game}), {config.selfplay.batch_size} games x "
        f"{config.selfplay.num_steps} plies, {config.search.num_simulations} simulations, "
        f"{config.learner.updates_per_iteration} updates of {config.learner.batch_size} per "
        f"iteration, on {len(devices)} {devices[0].platform} device(s)",
        f"{'K':>3} {'first it (s)':>13} {'s / iteration':>14} {'s / member-it':>14} {'vs K=1':>7}",
    ]
    for row in rows:
        lines.append(
            f"{row['members']:>3} {row['compile_s']:>13.1f} {row['iteration_s']:>14.2f} "
            f"{row['member_iteration_s']:>14.2f} {row['ratio']:>7.2f}"
        )
    return "\n".join(lines)


def main(args, overrides) -> int:
    config = config_lib.load_config(args.config)
    config_lib.apply_overrides(config, overrides)
    try:
        sizes = [int(s) for s in args.population.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise UserError(f"--population takes sizes like 1,2,4,8, got {args.population!r}")
    rows = measure(config, sizes, iterations=args.iterations)
    print(format_rows(config, rows))
    return 0
