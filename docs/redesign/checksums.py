import hashlib, json, sys
from pathlib import Path
import numpy as np
import orbax.checkpoint as ocp

out = Path(sys.argv[1])
for metrics in sorted(out.rglob("metrics.jsonl")):
    run = metrics.parent
    lines = [json.loads(l) for l in metrics.read_text().splitlines() if l.strip()]
    drop = (
        "time",
        "seconds",
        "per_second",
        "minutes",
        "wall",
        "timestamp",
        "elapsed",
        "throughput",
    )
    clean = [{k: v for k, v in r.items() if not any(d in k for d in drop)} for r in lines]
    mhash = hashlib.sha256(json.dumps(clean, sort_keys=True).encode()).hexdigest()[:16]
    ckpts = sorted((p for p in run.rglob("params") if p.is_dir()), key=lambda p: str(p))
    phash = "-"
    if ckpts:
        last = ckpts[-1]
        tree = ocp.StandardCheckpointer().restore(last.resolve())
        leaves = [np.asarray(x) for x in __import__("jax").tree_util.tree_leaves(tree)]
        h = hashlib.sha256()
        for x in leaves:
            h.update(x.tobytes())
        phash = f"{h.hexdigest()[:16]} sum={sum(float(np.sum(x.astype(np.float64))) for x in leaves):.10g} ({last.relative_to(out)})"
    print(f"{run.relative_to(out)}: records={len(lines)} metrics={mhash} params={phash}")
    print("  last:", json.dumps({k: v for k, v in clean[-1].items()}, sort_keys=True)[:600])
