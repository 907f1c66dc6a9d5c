"""Runs pgx's AlphaZero example (`examples/alphazero/train.py` of a pgx checkout at a named
commit, with its own requirements installed) for a wall-clock budget, offline.

Two things differ from `python train.py ...` and neither touches learning: wandb is off
(WANDB_MODE=disabled), and the baseline its monitoring-only evaluation plays
(`pgx.make_baseline_model`, downloaded at run time, which an offline machine cannot) is a
uniform policy. Its checkpoints (`checkpoints/*/NNNNNN.ckpt`, one per `eval_interval`
iterations) and `start.json` (the wall-clock start) land in OUT; `docs/peers/rate.py`
places each checkpoint on the minutes axis by its file time.

usage: python pgx_train.py PGX_EXAMPLE_DIR OUT MINUTES [key=value ...]
"""

import json
import os
import runpy
import sys
import threading
import time

example, out, minutes, *overrides = sys.argv[1:]
example = os.path.abspath(example)
os.environ["WANDB_MODE"] = "disabled"

import jax.numpy as jnp  # noqa: E402
import pgx  # noqa: E402


def uniform_baseline(model_id):
    num_actions = pgx.make(model_id.rsplit("_v", 1)[0]).num_actions
    return lambda obs: (jnp.zeros(obs.shape[:1] + (num_actions,)), jnp.zeros(obs.shape[:1]))


pgx.make_baseline_model = uniform_baseline
os.makedirs(out, exist_ok=True)
os.chdir(out)
with open("start.json", "w") as f:
    json.dump({"start": time.time(), "minutes": float(minutes), "overrides": overrides}, f)
# The budget ends the process wherever it is (a checkpoint cut mid-write is skipped when rated).
threading.Timer(float(minutes) * 60, lambda: os._exit(0)).start()
sys.path.insert(0, example)
sys.argv = ["train.py", *overrides]
runpy.run_path(os.path.join(example, "train.py"), run_name="__main__")
