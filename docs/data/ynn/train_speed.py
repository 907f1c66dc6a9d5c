"""positions_per_second of `azjax train --config connect_four` iterations 3..N, with XLA:CPU's
YNNPACK fusions on (code at OLD, before azjax turned them off) and off (NEW), alternating
runs; mean and 95% interval (Student's t over iterations).

usage: python train_speed.py OLD_TREE NEW_TREE ITERATIONS REPETITIONS (two checkouts)"""
import json, os, subprocess, sys, tempfile, statistics, shutil
PY = sys.executable  # the venv azjax is installed in
OLD, NEW = sys.argv[1], sys.argv[2]
N, REPS = int(sys.argv[3]), int(sys.argv[4])
from scipy import stats
out = {"on": [], "off": []}
for rep in range(REPS):
    for mode, tree in (("on", OLD), ("off", NEW)):
        work = tempfile.mkdtemp(prefix="ts_")
        env = dict(os.environ, PYTHONPATH=tree, AZJAX_COMPILATION_CACHE="off")
        env.pop("XLA_FLAGS", None)
        subprocess.run([PY, "-m", "azjax.apps.cli", "train", "--config", "connect_four", "--workdir", work + "/r",
                        f"--config.train.num_iterations={N}", "--config.eval.every=0"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rows = [json.loads(l) for l in open(work + "/r/metrics.jsonl")]
        pps = [r["positions_per_second"] for r in rows if r["iteration"] >= 3]
        out[mode] += pps
        print(mode, rep, [round(x) for x in pps], flush=True)
        shutil.rmtree(work)
for mode, xs in out.items():
    m, se = statistics.mean(xs), statistics.stdev(xs) / len(xs) ** 0.5
    t = stats.t.ppf(0.975, len(xs) - 1)
    print(f"{mode}: {m:.0f} pos/s [{m - t*se:.0f}, {m + t*se:.0f}] over {len(xs)} iterations")
print(json.dumps(out))
