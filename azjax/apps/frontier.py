"""The compute frontier: a family of network sizes trained to one compute budget, every
checkpoint rated on one Elo scale, and the frontier fitted (what each tenfold of compute buys,
the compute-optimal size, simulations at play against training compute).

    azjax frontier --config connect_four --dir runs/frontier_c4 \\
        --sizes 8x1,16x2,32x3,64x4,128x5 --budget 1e15 --per-decade 2 --decades 2 \\
        --anchors random,mcts:50,mcts:200,mcts:800 --games 40 --simulations 32,128 \\
        [--mistakes 200] [--target 0.5@mcts:800] [--stage train|rate|report] [--only 32x3] \\
        [--config.KEY=VALUE]

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
intervals, the compute-optimal sizes, the published figures beside them, and for each
`--target SCORE@ANCHOR` the training FLOPs at which the frontier's line reaches the Elo that
expects SCORE against ANCHOR (Fieller's 95% interval): a prediction a longer run tests.

The study's parts: `frontier_plan` (the sizes, the schedule, training), `frontier_rate`
(ratings and the report), `frontier_fit` (the fits).
"""

from pathlib import Path

from azjax import compile_cache
from azjax.apps.frontier_plan import RATINGS, open_study, parse_sizes, plan, read_rows, train_sizes
from azjax.apps.frontier_rate import anchor_ratings, rate, report
from azjax.config import apply_overrides, build, load_config, parse_opponent_spec
from azjax.matches import mistakes as mistakes_lib
from azjax.matches.ratings import anchors as anchors_lib
from azjax.stats import elo_for_score
from azjax.types import UserError

__all__ = ["command", "run_frontier"]


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
    targets: list[tuple[float, str]] = (),
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
    for score, spec in targets:
        if spec not in anchors or not 0 < score < 1:
            raise UserError(
                f"target {score:g}@{spec}: a score between 0 and 1 against one of the anchors "
                f"({', '.join(anchors)})"
            )
    if only is not None and only not in sizes:
        raise UserError(f"--only {only!r} is not one of the sizes ({', '.join(sizes)})")
    base = apply_overrides(load_config(config_path), base_overrides or {})  # errors first
    if mistakes:
        mistakes_lib.require_solved(build.make_game(base), config_path or "connect_four")
    settings = open_study(
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

    labelled = []  # the targets' Elo, read once from the anchors' ratings

    def write_report(rows):
        if targets and not labelled:
            fixed = anchor_ratings(directory, settings, quiet=True)
            labelled.extend((f"{s:g} against {a}", elo_for_score(fixed[a], s)) for s, a in targets)
        report(directory, rows, title=title, targets=labelled)

    if stage == "all":  # point by point, so that a study cut short reports its lower budgets
        for point in range(settings["per_decade"] * settings["decades"] + 1):
            train_sizes(directory, settings, schedule, up_to=point)
            write_report(rate(directory, settings, schedule))
        return read_rows(directory / RATINGS)
    if stage == "train":
        train_sizes(directory, settings, schedule, only=only)
        return read_rows(directory / RATINGS)
    rows = (
        rate(directory, settings, schedule) if stage == "rate" else read_rows(directory / RATINGS)
    )
    write_report(rows)
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
        targets=args.target or (),
        base_overrides=overrides,
    )
    if args.stage != "train":
        print((Path(args.dir) / "report.md").read_text(), end="")
    else:
        print(f"trained; {len(rows)} rating rows so far in {Path(args.dir) / RATINGS}")
    return 0
