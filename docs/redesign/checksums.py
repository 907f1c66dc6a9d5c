"""Prints each run's metrics (wall-clock fields left out) and parameter checksums."""

import hashlib
import json
import sys
from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp

TIMED = ("time", "seconds", "per_second", "minutes", "wall", "timestamp", "elapsed", "throughput")
# Columns added after 96a7d05 that report and do not steer (azjax.training.compute): left out,
# so that the checksums stay comparable with the recorded ones.
COUNTS = ("selfplay_evaluations", "eval_evaluations", "selfplay_flops", "learn_flops", "eval_flops")
COUNTS += ("positions", "learner_updates", "samples")
COUNTED = {*COUNTS, *(f"total_{c}" for c in COUNTS), "total_train_flops", "parameters"}
COUNTED = (COUNTED | {"forward_flops"}) - {"total_positions"}

out = Path(sys.argv[1])
for metrics in sorted(out.rglob("metrics.jsonl")):
    run = metrics.parent
    records = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    clean = [
        {k: v for k, v in r.items() if not any(t in k for t in TIMED) and k not in COUNTED}
        for r in records
    ]
    metrics_hash = hashlib.sha256(json.dumps(clean, sort_keys=True).encode()).hexdigest()[:16]
    params = sorted((p for p in run.rglob("params") if p.is_dir()), key=str)
    params_hash = "-"
    if params:
        leaves = jax.tree_util.tree_leaves(ocp.StandardCheckpointer().restore(params[-1]))
        leaves = [np.asarray(x) for x in leaves]
        digest = hashlib.sha256(b"".join(x.tobytes() for x in leaves)).hexdigest()[:16]
        total = sum(float(np.sum(x.astype(np.float64))) for x in leaves)
        params_hash = f"{digest} sum={total:.10g} ({params[-1].relative_to(out)})"
    name = run.relative_to(out)
    print(f"{name}: records={len(records)} metrics={metrics_hash} params={params_hash}")
    print("  last:", json.dumps(clean[-1], sort_keys=True)[:600])
