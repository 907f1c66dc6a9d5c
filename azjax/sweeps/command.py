"""`azjax sweep`: its arguments and what it runs.

    azjax sweep --config experiments/connect_four.py --space sweeps/connect_four.py \\
        --workdir runs/sweep_c4 --trials 16 [--config.KEY=VALUE ...]
    azjax sweep --workdir runs/sweep_c4 --report
"""

import argparse
from pathlib import Path


def add_parser(commands, count) -> argparse.ArgumentParser:
    """Registers `sweep` in the command line's subparsers; `count(low)` types integers."""
    sweep = commands.add_parser(
        "sweep",
        help="hyperparameter search (Optuna): many runs of an experiment; --report: the table",
    )
    sweep.add_argument(
        "--config", default=None, help="experiment file (default: the sweep's, else connect_four)"
    )
    sweep.add_argument(
        "--space", default=None, help="search space file with get_space() (default: the sweep's)"
    )
    sweep.add_argument("--workdir", required=True, help="sweep directory (resumes)")
    sweep.add_argument(
        "--trials", type=count(1), default=None, help="trials in the study in all, all workers"
    )
    sweep.add_argument(
        "--storage",
        default=None,
        metavar="URL",
        help="database shared by workers on many hosts (postgresql://user@host/db); "
        "default: a journal file in the workdir",
    )
    sweep.add_argument("--study", default=None, help="study name (default: the workdir's name)")
    sweep.add_argument(
        "--population", type=count(1), default=1, metavar="K", help="train K trials at a time"
    )
    sweep.add_argument(
        "--pbt", action="store_true", help="population-based training (--population >= 4)"
    )
    sweep.add_argument(
        "--pbt-every", type=count(1), default=10, metavar="N", help="PBT every N iterations"
    )
    sweep.add_argument(
        "--heartbeat", type=count(1), default=30, metavar="S", help="liveness mark every S s"
    )
    sweep.add_argument(
        "--grace",
        type=count(1),
        default=None,
        metavar="S",
        help="a running trial with no mark for S s is resumed elsewhere (default 3 heartbeats)",
    )
    sweep.add_argument(
        "--report", action="store_true", help="print the trials and write WORKDIR/report/*.png"
    )
    return sweep


def main(args, overrides: dict[str, str]) -> int:
    from azjax.types import UserError  # noqa: PLC0415

    workdir = Path(args.workdir)
    if args.report:
        if overrides or args.space or args.config or args.trials:
            raise UserError("--report takes only --workdir (and --storage)")
        return report(workdir, args.storage)
    from azjax import config as config_lib  # noqa: PLC0415
    from azjax.sweeps import space as space_lib  # noqa: PLC0415
    from azjax.sweeps import storage as storage_lib  # noqa: PLC0415
    from azjax.sweeps.worker import run_sweep  # noqa: PLC0415

    saved = storage_lib.read_sweep_file(workdir)
    if args.trials is None:
        raise UserError("sweep: --trials N is required (the study's trials in all)")
    if args.space is None and saved is None:
        raise UserError("sweep: --space FILE is required to start a sweep")
    space_path = Path(args.space) if args.space else workdir / storage_lib.SPACE_FILE
    space = space_lib.load_space(space_path)
    if args.config is None and saved is not None:
        config = config_lib.from_dict(saved["config"], source=str(workdir / "sweep.json"))
    else:
        config = config_lib.load_config(args.config)
    config_lib.apply_overrides(config, overrides)
    try:
        run_sweep(
            config,
            space,
            workdir,
            trials=args.trials,
            storage=args.storage,
            study_name=args.study,
            population=args.population,
            pbt_every=args.pbt_every if args.pbt else None,
            heartbeat=args.heartbeat,
            grace=args.grace,
            progress="lines",
            space_text=space_path.read_text(encoding="utf-8"),
        )
    except KeyboardInterrupt:
        print("azjax: sweep stopped; run the same command again to resume")
        return 130
    return report(workdir, args.storage)


def report(workdir: Path, storage: str | None) -> int:
    """Prints the trials table and writes the plots."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    from azjax.sweeps import report as report_lib  # noqa: PLC0415

    study = report_lib.load_study(workdir, storage=storage)
    table = report_lib.trials_table(workdir, study=study)
    print(report_lib.format_table(table))
    paths = report_lib.write_report(workdir, study=study)
    for note in report_lib.report_notes(workdir, paths):
        print(note)
    if paths:
        print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0
