"""Positions per second of `azjax train --config connect_four`, iterations 3 to N, of two
checkouts, runs alternated; the mean with its 95% interval (Student's t over the
iterations). The last line, JSON, is the rows (`ynn/train_speed.json`: XLA:CPU's YNNPACK
fusions on, a checkout from before azjax turned them off, and off, a checkout after).

usage: python train_speed.py LABEL=CHECKOUT LABEL=CHECKOUT ITERATIONS REPETITIONS
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from azjax.stats import t975


def speeds(checkout: str, iterations: int) -> list[float]:
    """positions_per_second of iterations 3 to `iterations` of one run from `checkout`."""
    work = tempfile.mkdtemp(prefix="train_speed_")
    env = dict(os.environ, PYTHONPATH=checkout, AZJAX_COMPILATION_CACHE="off")
    env.pop("XLA_FLAGS", None)
    command = [sys.executable, "-m", "azjax.apps.cli", "train", "--config", "connect_four"]
    command += ["--workdir", f"{work}/run", f"--config.train.num_iterations={iterations}"]
    command += ["--config.eval.every=0"]
    subprocess.run(command, env=env, check=True, capture_output=True)
    with open(f"{work}/run/metrics.jsonl") as lines:
        rows = [json.loads(line) for line in lines]
    shutil.rmtree(work)
    return [r["positions_per_second"] for r in rows if r["iteration"] >= 3]


def main(checkouts: dict[str, str], iterations: int, repetitions: int) -> None:
    out = {label: [] for label in checkouts}
    for repetition in range(repetitions):
        for mode, checkout in checkouts.items():
            out[mode] += speeds(checkout, iterations)
            print(mode, repetition, [round(x) for x in out[mode][-(iterations - 2) :]])
    for mode, xs in out.items():
        mean = statistics.mean(xs)
        half = t975(len(xs) - 1) * statistics.stdev(xs) / len(xs) ** 0.5
        print(
            f"{mode}: {mean:.0f} pos/s [{mean - half:.0f}, {mean + half:.0f}], {len(xs)} iterations"
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main(dict(arg.split("=", 1) for arg in sys.argv[1:3]), int(sys.argv[3]), int(sys.argv[4]))
