"""The Xiangqi prediction of docs/frontier.md ("Go 9x9 and Xiangqi: predictions"): the training
FLOPs at which `xiangqi:cpu` self-play scores 0.8 against Fairy-Stockfish `skill=-20 depth=1`.

Reads the two zero runs whose checkpoints played the engine (32x3, the experiment's network,
and 64x4), prices their iterations with today's FLOP count of the experiment (the frontier
study's `frontier_plan.plan`), rates every checkpoint against the engine held at 0 (the
study's `anchors.estimate`), fits the frontier's line (Elo against log10 FLOPs, `frontier_fit`)
through the runs' frontier, and inverts it at the Elo that expects 0.8 (Fieller's 95%
interval). Writes the rows and the prediction to xiangqi_prediction.json beside it.

usage: python docs/data/xiangqi_prediction.py   (from the repository root)
"""

import json
import math
from pathlib import Path

from azjax.apps import frontier_fit, frontier_plan
from azjax.matches.ratings import anchors
from azjax.stats import elo_for_score

HERE = Path(__file__).parent
ENGINE = 'uci:"fairy-stockfish" skill=-20 depth=1'
TARGET = 0.8
# size: (metrics file, the last checkpoint's own match: iteration, wins, draws, losses)
RUNS = {
    "32x3": ("xiangqi_vs_engine_metrics.jsonl", (549, 25, 23, 12)),
    "64x4": ("xiangqi_64x4_vs_engine_metrics.jsonl", (211, 6, 25, 29)),
}


def rating(size: str, iteration: int, wins: int, draws: int, losses: int) -> dict:
    outcomes = [1.0] * wins + [0.0] * draws + [-1.0] * losses
    elo = anchors.estimate({ENGINE: outcomes}, {ENGINE: 0.0})
    return {
        "size": size,
        "iteration": iteration,
        "games": len(outcomes),
        "score": (wins + draws / 2) / len(outcomes),
        "simulations": 16,
        "elo": elo["eval/elo"],
        "elo_low": elo["eval/elo_low"],
        "elo_high": elo["eval/elo_high"],
    }


def checkpoints(size: str) -> list[dict]:
    name, last = RUNS[size]
    rows = []
    for line in (HERE / name).read_text().splitlines():
        record = json.loads(line)
        games = record.get(f"eval/{ENGINE}/games")
        if games:
            w, d = (round(games * record[f"eval/{ENGINE}/{k}_rate"]) for k in ("win", "draw"))
            rows.append(rating(size, record["iteration"], w, d, games - w - d))
    return rows + [rating(size, *last)]


def main():
    settings = {"config": "xiangqi:cpu", "overrides": {}, "sizes": list(RUNS), "seed": 0}
    settings |= {"budget": 1e15, "per_decade": 1, "decades": 1}  # the schedule is not used
    schedule = frontier_plan.plan(settings)
    rows = []
    for size in RUNS:
        for row in checkpoints(size):
            row["parameters"] = schedule[size]["parameters"]
            row["flops"] = row["iteration"] * schedule[size]["iteration_flops"]
            rows.append(row)
    # The frontier over these budgets is 32x3's run: each of its checkpoints is a point.
    frontier = [dict(row, point=k) for k, row in enumerate(r for r in rows if r["size"] == "32x3")]
    line = frontier_fit.frontier_slope(frontier)
    target = elo_for_score(0.0, TARGET)
    reach = frontier_fit.compute_to_reach(line, target)
    per_iteration = schedule["32x3"]["iteration_flops"]
    result = {
        "target": f"{TARGET} against {ENGINE}",
        "slope": [line.slope, line.slope_low, line.slope_high],
        "iteration_flops": {size: schedule[size]["iteration_flops"] for size in RUNS},
        "iterations": [reach[k] / per_iteration for k in ("flops", "flops_low", "flops_high")],
    }
    result |= reach | {"rows": rows}
    (HERE / "xiangqi_prediction.json").write_text(json.dumps(result, indent=1) + "\n")
    for row in rows:
        print(
            f"{row['size']} it {row['iteration']:4d} {row['flops']:.2e} FLOPs "
            f"{row['score']:.3f} in {row['games']}: Elo {row['elo']:.0f} "
            f"[{row['elo_low']:.0f}, {row['elo_high']:.0f}]"
        )
    print(
        f"Elo per tenfold: {line.slope:.0f} [{line.slope_low:.0f}, {line.slope_high:.0f}]; "
        f"{TARGET} (Elo {target:.0f}) at {reach['flops']:.2e} FLOPs "
        f"[{reach['flops_low']:.2e}, {reach['flops_high']:.2e}], iterations "
        + ", ".join(f"{n:.0f}" if math.isfinite(n) else "inf" for n in result["iterations"])
    )


if __name__ == "__main__":
    main()
