"""The compute frontier: a family of network sizes trained to one compute budget, every
checkpoint rated on one Elo scale, and the frontier fitted (what each tenfold of compute buys,
the compute-optimal size, simulations at play against training compute).

    azjax frontier --config connect_four --dir runs/frontier_c4 \\
        --sizes 8x1,16x2,32x3,64x4,128x5 --budget 1e15 --per-decade 2 --decades 2 \\
        --anchors random,mcts:50,mcts:200,mcts:800 --games 40 --simulations 32,128 \\
        [--mistakes 200] [--stage train|rate|report] [--only 32x3] [--config.KEY=VALUE]

Each size `CxB` (C channels, B residual blocks) is an ordinary run in `DIR/runs/CxB`,
trained with in-training evaluation off until its `total_train_flops`
(`training.compute`: self-play's and learning's FLOPs) reach the budget. Its checkpoints
sit on a geometric compute schedule, the same for every size: `--per-decade` points per
tenfold, over `--decades` tenfolds below the budget. The schedule's points are converted
into iterations from the FLOPs of one iteration, and the run is trained to each in turn, so
each point is a checkpoint that stays.

The anchors (fixed players: random, pure MCTS, outside engines) are rated once by a round
robin among them (`DIR/eval_anchors/`, `evaluation.calibrate`), the first MCTS anchor at 0.
Every checkpoint then plays `--games` games against each anchor at each `--simulations`
(half as first player, 2 random opening plies seeded by the study's seed) and is rated with
the anchors held fixed (`ratings.anchors.estimate`): one scale for every size, budget and
simulation count, each Elo with its 95% interval. For Connect Four (the `[solver]` extra)
and Hex to 5x5 `--mistakes N` also measures each checkpoint's share of moves worse than
perfect play on N seeded positions (`matches.mistakes`).

`--stage all` goes point by point: every size trained to a point, then rated, before the
next, so that a study cut short holds a frontier over its lower budgets. Everything
resumes: a size trained to a point is not trained again, a rating row in
`DIR/ratings.jsonl` is not played again, and an interrupted run resumes from its checkpoint.
A study grows in place: rerun
with a larger `--budget` and as many more `--decades` (the lowest point unchanged, everything
else equal), and its trained points and ratings stay while the new points are trained on.
`--only SIZE` trains one size, so that machines sharing `DIR` split the sizes among them;
`--stage rate` and `--stage report` then run once. The report (`DIR/report.md`,
`DIR/frontier.png`) is `frontier_fit`'s: the ratings, the frontier, its slopes with
intervals, the compute-optimal sizes and the published figures beside them.
"""

import json
import math
import re
import zlib
from pathlib import Path

import jax
import numpy as np

from azjax import compile_cache, interrupt
from azjax.apps import api, frontier_fit
from azjax.config import apply_overrides, build, load_config, parse_opponent_spec
from azjax.matches import agent as agent_lib
from azjax.matches import arena
from azjax.matches import mistakes as mistakes_lib
from azjax.matches.ratings import anchors as anchors_lib
from azjax.paths import write_atomically
from azjax.runs import directory as runs
from azjax.training import compute, evaluation
from azjax.types import UserError

__all__ = ["command", "parse_sizes", "plan", "rate", "report", "run_frontier", "train_sizes"]

_SIZE = re.compile(r"([1-9][0-9]{0,3})x([1-9][0-9]?)")
SETTINGS = "frontier.json"
RATINGS = "ratings.jsonl"


def parse_sizes(text: str) -> list[str]:
    """The sizes of `--sizes`: `CxB` (channels x residual blocks), comma-separated."""
    sizes = [s.strip() for s in text.split(",") if s.strip()]
    for size in sizes:
        if not _SIZE.fullmatch(size):
            raise UserError(f"bad size {size!r}: use CHANNELSxBLOCKS, such as 32x3")
    if len(set(sizes)) != len(sizes) or not sizes:
        raise UserError(f"--sizes needs distinct sizes, got {text!r}")
    return sizes


def _size_config(settings: dict, size: str):
    """The run config of one size: the experiment, the study's overrides, the size."""
    channels, blocks = _SIZE.fullmatch(size).groups()
    config = apply_overrides(load_config(settings["config"]), dict(settings["overrides"]))
    return apply_overrides(
        config,
        {
            "network.channels": channels,
            "network.num_blocks": blocks,
            "train.max_minutes": "0",
            "eval.every": "0",
            "seed": str(settings["seed"]),
        },
    )


def _iteration_flops(config) -> tuple[float, int]:
    """Training FLOPs of one iteration of `config` (a playout cap at its expected share of
    full searches) and the network's parameters."""
    pipeline = build.make_pipeline(config)
    costs = compute.measure(pipeline)
    full = {"playout_cap/full_fraction": float(config.selfplay.full_search_fraction)}
    selfplay = compute.selfplay_evaluations(pipeline, full) * costs.forward_flops
    learn = pipeline.updates_per_iteration * costs.update_flops
    return selfplay + learn, costs.parameters


def plan(settings: dict) -> dict[str, dict]:
    """Each size's schedule: {"parameters", "iteration_flops", "points": {point: iteration}}.

    Point k of n = per_decade * decades + 1 is the budget times 10^((k - n + 1) /
    per_decade); its iteration is the first whose cumulated FLOPs reach it. A size has no
    checkpoint at a point its first iteration overshoots by more than half a step (a large
    network's single iteration is not a small budget), and points that fall on the same
    iteration keep the first."""
    count = settings["per_decade"] * settings["decades"] + 1
    lowest = _lowest(settings)  # counted from the lowest point, which a grown study keeps
    budgets = [lowest * 10 ** (k / settings["per_decade"]) for k in range(count)]
    schedule = {}
    for size in settings["sizes"]:
        per_iteration, parameters = _iteration_flops(_size_config(settings, size))
        points, seen = {}, set()
        for point, budget in enumerate(budgets):
            iteration = max(1, math.ceil(budget / per_iteration))
            if iteration * per_iteration > budget * 10 ** (0.5 / settings["per_decade"]):
                continue  # one iteration overshoots the point by more than half a step
            if iteration not in seen:
                points[point] = iteration
                seen.add(iteration)
        schedule[size] = {
            "parameters": parameters,
            "iteration_flops": per_iteration,
            "points": points,
        }
    return schedule


def _lowest(settings: dict) -> float:
    return settings["budget"] / 10 ** settings["decades"]


def _grows(saved: dict, settings: dict) -> bool:
    """Whether `settings` extend the study `saved` to a larger budget over the same points:
    more decades, the same lowest point, everything else equal."""
    same = {k: v for k, v in saved.items() if k not in ("budget", "decades")}
    return (
        same == {k: v for k, v in settings.items() if k not in ("budget", "decades")}
        and settings["decades"] > saved["decades"]
        and math.isclose(_lowest(settings), _lowest(saved), rel_tol=1e-9)
    )


def _open(directory: Path, settings: dict) -> dict:
    """The study's settings, written the first time; a rerun must give the same ones, or
    grow the study (a larger budget over more decades, the lowest point kept)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SETTINGS
    settings = json.loads(json.dumps(settings))
    if path.exists():
        saved = json.loads(path.read_text())
        if saved == settings:
            return settings
        if not _grows(saved, settings):
            changed = sorted(k for k in settings if saved.get(k) != settings[k])
            raise UserError(
                f"{directory} holds a study with other settings ({', '.join(changed)}); "
                "use a new --dir, or grow it: a larger --budget and as many more --decades"
            )
        print(
            f"growing the study from {saved['budget']:.2g} to {settings['budget']:.2g} FLOPs; "
            "its trained points and ratings stay",
            flush=True,
        )
    write_atomically(path, (json.dumps(settings, indent=1) + "\n").encode())
    return settings


def train_sizes(
    directory: Path,
    settings: dict,
    schedule: dict,
    *,
    only: str | None = None,
    up_to: int | None = None,
):
    """Trains each size (or `only`) to each point of its schedule (those up to point
    `up_to`), resuming."""
    for size in [only] if only else settings["sizes"]:
        workdir = directory / "runs" / size
        points = schedule[size]["points"]
        last = max(points.values())
        for point, iteration in points.items():
            if up_to is not None and point > up_to:
                break
            saved = _checkpoints(workdir) if workdir.exists() else []
            if iteration in saved or (saved and max(saved) > iteration):
                continue  # trained (a study grown since keeps its points' ratings)
            config = _size_config(settings, size)
            config.train.num_iterations = iteration
            # Every point kept, beside about 20 periodic saves for crash safety (and the
            # saves of a study that has grown since).
            config.train.checkpoint_every = every = max(1, last // 20)
            config.train.keep_checkpoints = len(points) + last // every + 1 + len(saved)
            print(f"[{size}] point {point}: training to iteration {iteration}", flush=True)
            api.train(config, workdir, progress="none", quiet=True)
        compile_cache.release()  # the next size compiles programs of its own


def _checkpoints(workdir: Path) -> list[int]:
    try:
        return runs.list_checkpoints(workdir)
    except UserError:
        return []


def _read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def rate(directory: Path, settings: dict, schedule: dict) -> list[dict]:
    """Rates every trained point of every size at each simulation count against the anchors
    (calibrated once); returns all rating rows (those of `DIR/ratings.jsonl` kept)."""
    config = _size_config(settings, settings["sizes"][0])
    specs = settings["anchors"]
    anchor = anchors_lib.default_anchor(specs)
    fixed = evaluation.calibrate(
        directory,
        config.game,
        dict(config.game_kwargs),
        specs,
        anchor=anchor,
        games_per_pair=settings["games"],
        seed=settings["seed"],
    )
    path = directory / RATINGS
    rows = _read(path)
    # Rows of checkpoints the schedule no longer holds (a study planned by an older azjax).
    kept = [r for r in rows if schedule[r["size"]]["points"].get(r["point"]) == r["iteration"]]
    if len(kept) < len(rows):
        write_atomically(path, "".join(json.dumps(r) + "\n" for r in kept).encode())
        rows = kept
    done = {(r["size"], r["point"], r["simulations"]) for r in rows}
    positions = None
    if settings["mistakes"]:
        positions = mistakes_lib.make_positions(
            settings["mistakes"], seed=settings["seed"], game=build.make_game(config)
        )
    for size in settings["sizes"]:
        workdir = directory / "runs" / size
        trained = set(_checkpoints(workdir))
        metrics = {r["iteration"]: r for r in _metrics(workdir)}
        per_iteration = schedule[size]["iteration_flops"]
        for point, iteration in schedule[size]["points"].items():
            if iteration not in trained:
                continue
            for simulations in settings["simulations"]:
                if (size, point, simulations) in done:
                    continue
                if interrupt.requested():  # the rows so far are kept: rerunning resumes
                    raise KeyboardInterrupt
                agent = agent_lib.load_agent(workdir, step=iteration, num_simulations=simulations)
                row = _rating(agent, settings, fixed, size, point, simulations)
                record = metrics.get(iteration, {})
                row.update(
                    parameters=schedule[size]["parameters"],
                    iteration=iteration,
                    flops=record.get("total_train_flops", iteration * per_iteration),
                    positions=record.get("total_positions"),
                    minutes=record.get("wall_time", math.nan) / 60,
                )
                if positions is not None:
                    measured = mistakes_lib.measure(
                        agent, positions, simulations, name=size, seed=settings["seed"]
                    )
                    row.update(
                        mistakes=measured["rate"],
                        mistakes_low=measured["rate_low"],
                        mistakes_high=measured["rate_high"],
                    )
                print(_format(row), flush=True)
                with path.open("a") as file:
                    file.write(json.dumps(row) + "\n")
                rows.append(row)
        _MATCHES.clear()  # the next size's matches are programs of their own
        compile_cache.release()
    return rows


def _metrics(workdir: Path) -> list[dict]:
    path = workdir / "metrics.jsonl"
    return _read(path) if path.exists() else []


# Compiled matches by (the run's pipeline, simulations, anchor, games): a size's checkpoints
# differ only in their variables, so each size plays each anchor through one compilation.
_MATCHES: dict = {}


def _outcomes(agent, spec: str, games: int, key) -> list[float]:
    """The agent's outcomes in `games` games against the anchor `spec` (2 random opening
    plies, seeded by `key`); outside engines play host games."""
    if parse_opponent_spec(spec)[0] == "engine":
        results, _, _ = agent_lib.play_opponent(
            agent, spec, num_games=games, key=key, opening_plies=2
        )
        return [float(x) for x in results]
    signature = (agent.settings.pipeline_key, agent.num_simulations, spec, games)
    if signature not in _MATCHES:
        opponent, params = agent_lib.make_opponent(agent.game, spec)
        match = arena.make_match(
            agent.game, agent.player, opponent, num_games=games, opening_plies=2
        )
        _MATCHES[signature] = (jax.jit(match), params)
    match, params = _MATCHES[signature]
    return [float(x) for x in jax.device_get(match(agent.variables, params, key).outcomes)]


def _rating(agent, settings: dict, fixed: dict, size: str, point: int, simulations: int):
    """One checkpoint's games against each anchor and its Elo with the anchors fixed."""
    outcomes, scores = {}, {}
    for spec in settings["anchors"]:
        name = f"{size}/{point}/{simulations}/{spec}"
        key = jax.random.fold_in(jax.random.PRNGKey(settings["seed"]), zlib.crc32(name.encode()))
        outcomes[spec] = _outcomes(agent, spec, settings["games"], key)
        scores[spec] = float(np.mean([(x + 1) / 2 for x in outcomes[spec]]))
    elo = anchors_lib.estimate(outcomes, fixed)
    return {
        "size": size,
        "point": point,
        "simulations": simulations,
        "elo": elo["eval/elo"],
        "elo_low": elo["eval/elo_low"],
        "elo_high": elo["eval/elo_high"],
        "scores": scores,
    }


def _format(row: dict) -> str:
    text = (
        f"[{row['size']}] point {row['point']} ({row['flops']:.2e} FLOPs), "
        f"{row['simulations']} simulations: Elo {row['elo']:.0f} "
        f"({row['elo_low']:.0f} to {row['elo_high']:.0f})"
    )
    if "mistakes" in row:
        text += f", mistakes {100 * row['mistakes']:.1f}%"
    return text


def report(directory: Path, rows: list[dict], *, title: str) -> str:
    """Writes `DIR/report.md` (and `DIR/frontier.png` where matplotlib is installed)."""
    text = frontier_fit.report_markdown(rows, title=title)
    measured = [r for r in rows if "mistakes" in r]
    if measured:  # Connect Four against perfect play
        lines = ["", "Moves worse than perfect play (share of the seeded positions, 95%):", ""]
        lines += ["| size | point | flops | simulations | mistakes |", "|---|---:|---:|---:|---|"]
        for r in sorted(measured, key=lambda r: (r["parameters"], r["point"], r["simulations"])):
            lines.append(
                f"| {r['size']} | {r['point']} | {r['flops']:.1e} | {r['simulations']} | "
                f"{100 * r['mistakes']:.1f}% [{100 * r['mistakes_low']:.1f}, "
                f"{100 * r['mistakes_high']:.1f}] |"
            )
        text += "\n".join(lines) + "\n"
    (directory / "report.md").write_text(text + "\n")
    if rows:
        try:
            frontier_fit.plot_frontier(rows, directory / "frontier.png")
        except ModuleNotFoundError:  # the [plots] extra: the report stands without it
            pass
    return text


def run_frontier(
    config_path: str | None,
    directory: str | Path,
    *,
    sizes: list[str],
    budget: float,
    per_decade: int = 2,
    decades: int = 2,
    anchors: list[str] = ("random", "mcts:50", "mcts:200"),
    games: int = 40,
    simulations: list[int] | None = None,
    mistakes: int = 0,
    seed: int = 0,
    stage: str = "all",
    only: str | None = None,
    base_overrides: dict[str, str] | None = None,
) -> list[dict]:
    """Runs the study (see the module) and returns its rating rows.

    Raises:
      UserError: a bad experiment, size, anchor or stage, or `directory` holding a study
        with other settings.
    """
    for spec in anchors:
        if anchors_lib.anchor_specs([spec]) != [spec]:
            raise UserError(f"anchor {spec!r} is not a fixed player (random, mcts:N, engines)")
        parse_opponent_spec(spec)
    if stage not in ("all", "train", "rate", "report"):
        raise UserError(f"unknown stage {stage!r}; use all, train, rate or report")
    if only is not None and only not in sizes:
        raise UserError(f"--only {only!r} is not one of the sizes ({', '.join(sizes)})")
    base = apply_overrides(load_config(config_path), base_overrides or {})  # errors first
    if mistakes:
        mistakes_lib.require_solved(build.make_game(base), config_path or "connect_four")
    settings = _open(
        Path(directory),
        {
            "config": config_path or "connect_four",
            "overrides": dict(base_overrides or {}),
            "sizes": list(sizes),
            "budget": float(budget),
            "per_decade": int(per_decade),
            "decades": int(decades),
            "anchors": list(anchors),
            "games": int(games),
            "simulations": list(simulations or [int(base.eval.num_simulations)]),
            "mistakes": int(mistakes),
            "seed": int(seed),
        },
    )
    directory = Path(directory)
    schedule = plan(settings)
    title = f"Compute frontier: {settings['config']}"
    if stage == "all":  # point by point, so that a study cut short reports its lower budgets
        for point in range(settings["per_decade"] * settings["decades"] + 1):
            train_sizes(directory, settings, schedule, up_to=point)
            report(directory, rate(directory, settings, schedule), title=title)
        return _read(directory / RATINGS)
    if stage == "train":
        train_sizes(directory, settings, schedule, only=only)
        return _read(directory / RATINGS)
    rows = rate(directory, settings, schedule) if stage == "rate" else _read(directory / RATINGS)
    report(directory, rows, title=title)
    return rows


def command(args, overrides: dict[str, str]) -> int:
    """`azjax frontier`: the study (see the module), then its report on stdout."""
    compile_cache.enable()
    rows = run_frontier(
        args.config,
        args.dir,
        sizes=parse_sizes(args.sizes),
        budget=args.budget,
        per_decade=args.per_decade,
        decades=args.decades,
        anchors=args.anchors,
        games=args.games,
        simulations=args.simulations,
        mistakes=args.mistakes,
        seed=args.seed,
        stage=args.stage,
        only=args.only,
        base_overrides=overrides,
    )
    if args.stage != "train":
        print((Path(args.dir) / "report.md").read_text(), end="")
    else:
        print(f"trained; {len(rows)} rating rows so far in {Path(args.dir) / RATINGS}")
    return 0
