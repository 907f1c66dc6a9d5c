"""`azjax sweep`: what it runs (its arguments: `arguments`).

    azjax sweep --config connect_four --space connect_four \\
        --workdir runs/sweep_c4 --trials 16 [--config.KEY=VALUE ...]
    azjax sweep --workdir runs/sweep_c4 --report
    azjax sweep ... --workdir gs://bucket/sweeps/c4 --storage postgresql://user@host/db
"""

import tempfile
from pathlib import Path

from azjax import config as config_lib
from azjax.apps.sweeps import report as report_lib
from azjax.apps.sweeps import space as space_lib
from azjax.apps.sweeps import storage as storage_lib
from azjax.apps.sweeps.worker import run_sweep
from azjax.paths import is_local, read_text, workdir_path
from azjax.runs import distributed
from azjax.types import UserError


def main(args, overrides: dict[str, str]) -> int:
    workdir = workdir_path(args.workdir)
    if args.report:
        if overrides or args.space or args.config or args.trials:
            raise UserError("--report takes only --workdir (and --storage)")
        return report(workdir, args.storage)
    storage_lib.check_storage(workdir, args.storage)
    saved = storage_lib.read_sweep_file(workdir)
    if args.trials is None:
        raise UserError("sweep: --trials N is required (the study's trials in all)")
    if args.space is None and saved is None:
        raise UserError("sweep: --space FILE is required to start a sweep")
    if args.space is None and not is_local(workdir):
        space, space_text = _saved_space(workdir)
    else:
        space_path = space_lib.find_space(args.space or workdir / storage_lib.SPACE_FILE)
        space = space_lib.load_space(space_path)
        space_text = space_path.read_text(encoding="utf-8")
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
            space_text=space_text,
        )
    except KeyboardInterrupt:
        if distributed.is_primary():
            print("azjax: sweep stopped; run the same command again to resume")
        return 130
    if not distributed.is_primary():  # a pod's other processes: process 0 reports
        return 0
    return report(workdir, args.storage)


def _saved_space(workdir) -> tuple[space_lib.Space, str]:
    """The space of the sweep in a cloud `workdir` and its text, from its copy there (a
    space file is Python, run from a local file)."""
    saved = workdir / storage_lib.SPACE_FILE
    if not saved.is_file():
        raise UserError(f"space file {saved} not found; pass --space")
    text = read_text(saved)
    with tempfile.TemporaryDirectory(prefix="azjax-space-") as folder:
        local = Path(folder) / storage_lib.SPACE_FILE
        local.write_text(text, encoding="utf-8")
        return space_lib.load_space(local), text


def report(workdir: Path, storage: str | None) -> int:
    """Prints the trials table and writes the plots."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    study = report_lib.load_study(workdir, storage=storage)
    table = report_lib.trials_table(workdir, study=study)
    print(report_lib.format_table(table))
    paths = report_lib.write_report(workdir, study=study)
    for note in report_lib.report_notes(workdir, paths):
        print(note)
    if paths:
        print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0
