"""Seconds per learner chunk (8 updates of 256, Connect Four defaults): compiled.Learner (the
update's program called once per update) against the unrolled learn_step jitted whole,
alternated, 5 rounds of 10 chunks each; means with 95% intervals (Student's t over rounds).

usage: python learn_speed.py   (from a checkout after d8f2482)
"""

import functools
import statistics
import time

import jax

from azjax.config import build, load_config
from azjax.core import steps
from azjax.stats import t975
from azjax.training import compiled

config = load_config("connect_four")
settings = build.make_settings(config)
run = compiled.compile_run(settings)
hyper = settings.hyper
state = run.init(jax.random.PRNGKey(0))
for _ in range(3):
    state, _, keys = run.play(state, hyper)
whole = jax.jit(
    functools.partial(steps.learn_step, run.pipeline),
    in_shardings=(run.shardings, None, None),
    out_shardings=(run.shardings, None),
)
learners = {"split": run.learn, "unrolled": whole}
for f in learners.values():
    jax.block_until_ready(f(state, keys[0], hyper))
times = {k: [] for k in learners}
for _ in range(5):
    for name, f in learners.items():
        s = state
        start = time.perf_counter()
        for i in range(10):
            s, m = f(s, keys[i % len(keys)], hyper)
        jax.block_until_ready(s)
        times[name].append((time.perf_counter() - start) / 10)
for name, xs in times.items():
    mean = statistics.mean(xs)
    half = t975(len(xs) - 1) * statistics.stdev(xs) / len(xs) ** 0.5
    print(
        f"{name}: {1000 * mean:.0f} ms per chunk",
        f"[{1000 * (mean - half):.0f}, {1000 * (mean + half):.0f}]",
        [round(1000 * x) for x in xs],
    )
