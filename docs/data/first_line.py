"""Seconds from the process's start to the line `it 1/2` of `azjax train --config
connect_four` (2 iterations, no evaluation), a new run directory each time: cold
(--no-compile-cache) and warm (the same config again, the persistent cache filled, in a
new cache folder). Prints both lists (docs/results.md, "The suite, compiles and the first
iteration"), and whether jax's modules have their bytecode (as `pip install` leaves them;
`uv pip install` without `--compile-bytecode` does not, and a shell that sets
PYTHONDONTWRITEBYTECODE then compiles them on every start).

usage: python first_line.py REPEATS [CHECKOUT]
"""

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time

repeats = int(sys.argv[1])
repo = sys.argv[2] if len(sys.argv) > 2 else os.getcwd()
env = dict(os.environ, PYTHONPATH=repo, XDG_CACHE_HOME=tempfile.mkdtemp())


def first_line(flags):
    workdir = tempfile.mkdtemp()
    train = f"train --config connect_four --workdir {workdir}/run"
    train += " --config.train.num_iterations=2 --config.eval.every=0"
    command = [sys.executable, "-u", "-m", "azjax.apps.cli", *train.split(), *flags]
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=repo
    )
    seconds = None
    for line in proc.stdout:
        if seconds is None and re.match(r"it\s+1/2\b", line):
            seconds = time.perf_counter() - start
    proc.wait()
    assert proc.returncode == 0 and seconds is not None, proc.returncode
    return seconds


jax_init = importlib.util.find_spec("jax").origin
print("jax bytecode:", os.path.exists(importlib.util.cache_from_source(jax_init)))
first_line([])  # fills the cache
cold = [first_line(["--no-compile-cache"]) for _ in range(repeats)]
warm = [first_line([]) for _ in range(repeats)]
print("cold", " ".join(f"{s:.1f}" for s in cold))
print("warm", " ".join(f"{s:.1f}" for s in warm))
