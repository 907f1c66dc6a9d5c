"""Ablations: the same experiment trained with each option on or off, for the same
wall-clock budget, then rated against one fixed opponent with 95% intervals.

    python -m azjax.ablation --config experiments/gomoku_6x6_k4.py --minutes 10 \\
        --opponent mcts:1000 --games 200 --workdir runs/ablation_gomoku

Each variant is an ordinary run in `WORKDIR/VARIANT` (its config overrides on top of the
experiment, `train.max_minutes` set to the budget and in-training evaluation off, so the
budget is spent on self-play and learning), then its final network plays `--games` games
against the opponent (half as first player). Results go to `WORKDIR/results.jsonl`, one
line per variant; rerunning skips the variants done and resumes an interrupted one.
`run_ablation` and `results_table` are the notebook API.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from azjax.types import UserError

# Every technique of issue 15 off: the baseline the single-technique variants start from.
ALL_OFF = {
    "search.tree_reuse": "false",
    "selfplay.full_search_fraction": "1.0",
    "selfplay.resign": "false",
    "learner.kl_target": "0.0",
    "learner.value_target_mix": "0.0",
}
# Each technique on its own, and "defaults": the experiment as it is (today's defaults).
VARIANTS = {
    "baseline": ALL_OFF,
    "tree_reuse": {**ALL_OFF, "search.tree_reuse": "true"},
    "playout_cap": {
        **ALL_OFF,
        "selfplay.full_search_fraction": "0.25",
        "selfplay.cheap_simulations": "8",
    },
    "resign": {**ALL_OFF, "selfplay.resign": "true"},
    "kl_lr": {**ALL_OFF, "learner.kl_target": "0.02"},
    "value_mix": {**ALL_OFF, "learner.value_target_mix": "0.5"},
    # The two that helped most on Gomoku, together.
    "reuse_cap": {
        **ALL_OFF,
        "search.tree_reuse": "true",
        "selfplay.full_search_fraction": "0.25",
        "selfplay.cheap_simulations": "8",
    },
    # Everything that helped on Gomoku 6x6 k4 alone (tree reuse, KL-adaptive LR, value mix).
    "combined": {
        **ALL_OFF,
        "search.tree_reuse": "true",
        "learner.kl_target": "0.02",
        "learner.value_target_mix": "0.5",
    },
    "defaults": {},
}


def run_ablation(
    config_path: str,
    workdir: str | Path,
    *,
    variants: dict[str, dict[str, str]] | None = None,
    minutes: float = 10.0,
    opponent: str = "mcts:1000",
    games: int = 200,
    seed: int = 0,
    base_overrides: dict[str, str] | None = None,
) -> list[dict]:
    """Trains and rates every variant not yet in `WORKDIR/results.jsonl`; returns all rows."""
    import jax  # noqa: PLC0415

    from azjax import agent as agent_lib  # noqa: PLC0415
    from azjax import arena, train  # noqa: PLC0415
    from azjax.config import apply_overrides, load_config, parse_opponent_spec  # noqa: PLC0415

    parse_opponent_spec(opponent)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    results_path = workdir / "results.jsonl"
    done = {row["variant"] for row in _read(results_path)}
    for name, overrides in (variants or VARIANTS).items():
        if name in done:
            continue
        config = load_config(config_path)
        settings = {
            **(base_overrides or {}),
            **overrides,
            "train.max_minutes": str(minutes),
            "train.num_iterations": "100000",
            "eval.every": "0",
            "seed": str(seed),
        }
        apply_overrides(config, settings)
        run_dir = workdir / name
        print(f"[{name}] training {minutes:g} min in {run_dir}", flush=True)
        start = time.perf_counter()
        train.train(config, run_dir, progress="none", quiet=True)
        wall = time.perf_counter() - start
        agent = agent_lib.load_agent(run_dir)
        player, params = agent_lib.make_opponent(agent.game, opponent)
        match = jax.jit(arena.make_match(agent.game, agent.player, player, num_games=games))
        start = time.perf_counter()
        result = match(agent.variables, params, jax.random.PRNGKey(seed + 1))
        summary = arena.summarize(jax.device_get(result.outcomes))
        records = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
        last = records[-1] if records else {}
        row = {
            "variant": name,
            "overrides": overrides,
            "minutes": minutes,
            "train_seconds": round(wall, 1),
            "run_seconds": round(float(last.get("wall_time", 0.0)), 1),
            "iterations": agent.iteration,
            "games": int(last.get("total_games", 0)),
            "opponent": opponent,
            "wins": summary.wins,
            "draws": summary.draws,
            "losses": summary.losses,
            "score": round(summary.score, 4),
            "score_low": round(summary.score_low, 4),
            "score_high": round(summary.score_high, 4),
            "eval_seconds": round(time.perf_counter() - start, 1),
        }
        with results_path.open("a") as file:
            file.write(json.dumps(row) + "\n")
        print(f"[{name}] {summary.format()}", flush=True)
    return _read(results_path)


def _read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def results_table(rows: list[dict]) -> str:
    """The rows as a Markdown table (score against the opponent with its 95% interval)."""
    lines = [
        "| variant | iterations | self-play games | W-D-L | score (95% CI) |",
        "|---|---:|---:|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['variant']} | {row['iterations']} | {row['games']:,} | "
            f"{row['wins']}-{row['draws']}-{row['losses']} | {row['score']:.3f} "
            f"({row['score_low']:.3f}-{row['score_high']:.3f}) |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m azjax.ablation", description=__doc__)
    parser.add_argument("--config", required=True, help="experiment file")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--minutes", type=float, default=10.0, help="training budget per run")
    parser.add_argument("--opponent", default="mcts:1000")
    parser.add_argument("--games", type=int, default=200, help="rating games (even)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"comma-separated, of {list(VARIANTS)}"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config override applied to every variant (repeatable)",
    )
    args = parser.parse_args(argv)
    try:
        names = [n for n in args.variants.split(",") if n]
        unknown = [n for n in names if n not in VARIANTS]
        if unknown:
            raise UserError(f"unknown variant {unknown[0]!r}; known: {', '.join(VARIANTS)}")
        if args.games < 2 or args.games % 2:
            raise UserError(f"--games must be even and at least 2, got {args.games}")
        if not args.minutes > 0:
            raise UserError(f"--minutes must be positive, got {args.minutes}")
        base = {}
        for item in args.set:
            key, sep, value = item.partition("=")
            if not sep:
                raise UserError(f"--set expects KEY=VALUE, got {item!r}")
            base[key] = value
        rows = run_ablation(
            args.config,
            args.workdir,
            variants={n: VARIANTS[n] for n in names},
            minutes=args.minutes,
            opponent=args.opponent,
            games=args.games,
            seed=args.seed,
            base_overrides=base,
        )
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(results_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
