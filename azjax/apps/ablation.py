"""Ablations: the same experiment trained with each option on or off, for the same
wall-clock budget, then rated against one fixed opponent with 95% intervals.

    azjax ablation --config gomoku_6x6_k4 --minutes 10 --opponent mcts:1000 --games 200 \\
        --workdir runs/ablation_gomoku [--variants baseline,tree_reuse] [--config.KEY=VALUE]

Each variant is an ordinary run in `WORKDIR/VARIANT` (its config overrides on top of the
experiment and the command line's `--config.KEY=VALUE`, `train.max_minutes` set to the
budget and in-training evaluation off, so the budget is spent on self-play and learning),
then its final network plays `--games` games against the opponent (half as first player).
Results go to `WORKDIR/results.jsonl`, one line per variant; rerunning skips the variants
done and resumes an interrupted one. `run_ablation` and `results_table` are the notebook
API; the command line's parser is in `ablation_args.py` (it loads no jax). Without
`--variants` every variant runs that the experiment accepts (`applicable`: the ownership
variant only for Go, forced playouts only with PUCT search); a variant named that it
refuses is refused before any run starts.
"""

import copy
import json
import sys
import time
from pathlib import Path

import jax

from azjax import compile_cache
from azjax.apps import api
from azjax.apps.ablation_args import ALL_OFF, VARIANTS
from azjax.config import apply_overrides, build, load_config, parse_opponent_spec
from azjax.matches import agent as agent_lib
from azjax.matches import arena
from azjax.types import UserError

__all__ = ["ALL_OFF", "VARIANTS", "applicable", "command", "results_table", "run_ablation"]


def _refusal(config, overrides: dict[str, str]) -> str | None:
    """Why `config` refuses `overrides` (a value its schema refuses, such as forced playouts
    with Gumbel search, or an option its game lacks, `build.check_game_options`), or None."""
    try:
        config = apply_overrides(copy.deepcopy(config), overrides)
        build.check_game_options(config, build.make_game(config))
    except UserError as error:
        return str(error)
    return None


def applicable(config, variants: dict[str, dict[str, str]] | None = None) -> dict:
    """The `variants` (default `VARIANTS`) that `config` accepts: valid settings that its
    game has the options of."""
    variants = VARIANTS if variants is None else variants
    return {name: o for name, o in variants.items() if _refusal(config, o) is None}


def run_ablation(
    config_path: str | None,
    workdir: str | Path,
    *,
    variants: dict[str, dict[str, str]] | None = None,
    minutes: float = 10.0,
    opponent: str = "mcts:1000",
    games: int = 200,
    seed: int = 0,
    base_overrides: dict[str, str] | None = None,
) -> list[dict]:
    """Trains and rates every variant not yet in `WORKDIR/results.jsonl`; returns all rows.

    Args:
      config_path: the experiment, as `config.load_config` takes it (a file or a name;
        None: connect_four).
      workdir: the ablation directory; each variant runs in `workdir/VARIANT`.
      variants: name -> config overrides (default: those of `VARIANTS` that apply to the
        experiment's game, `applicable`).
      minutes: each variant's training budget (`train.max_minutes`).
      opponent: the rating opponent's spec.
      games: rating games per variant (even), half as first player.
      seed: the runs' seed (the rating matches use seed + 1).
      base_overrides: config overrides applied to every variant, under its own.

    Raises:
      UserError: a bad experiment, override or opponent, or a variant whose options the
        game lacks.
    """
    parse_opponent_spec(opponent)
    base = apply_overrides(load_config(config_path), base_overrides or {})  # before work
    if variants is None:
        variants = applicable(base)
    for name, overrides in variants.items():
        if (refusal := _refusal(base, overrides)) is not None:
            raise UserError(f"variant {name}: {refusal}")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    results_path = workdir / "results.jsonl"
    done = {row["variant"] for row in _read(results_path)}
    for name, overrides in variants.items():
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
        api.train(config, run_dir, progress="none", quiet=True)
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
        compile_cache.release(above=compile_cache.RELEASE_ABOVE)
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


def command(args, overrides: dict[str, str]) -> int:
    """`azjax ablation`: trains and rates the variants, then prints the table."""
    variants = None  # every variant that applies to the game
    if args.variants is not None:
        names = [n.strip() for n in args.variants.split(",") if n.strip()]
        unknown = [n for n in names if n not in VARIANTS]
        if unknown or not names:
            bad = unknown[0] if unknown else args.variants
            raise UserError(f"unknown variant {bad!r}; known: {', '.join(VARIANTS)}")
        variants = {n: VARIANTS[n] for n in names}
    rows = run_ablation(
        args.config,
        args.workdir,
        variants=variants,
        minutes=args.minutes,
        opponent=args.opponent,
        games=args.games,
        seed=args.seed,
        base_overrides=overrides,
    )
    print(results_table(rows))
    return 0


if __name__ == "__main__":
    # The ablation is a command of the `azjax` command line; this module is its library.
    print(
        "azjax: error: run `azjax ablation ARGS` (`--set KEY=VALUE` is now `--config.KEY=VALUE`)",
        file=sys.stderr,
    )
    sys.exit(2)
