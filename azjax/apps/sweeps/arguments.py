"""`azjax sweep`'s arguments, apart from what it runs (`command`): the command line's
parser imports this module, and it loads neither Optuna nor jax.
"""

import argparse


def add_parser(commands, count) -> argparse.ArgumentParser:
    """Registers `sweep` in the command line's subparsers; `count(low)` types integers."""
    sweep = commands.add_parser(
        "sweep",
        help="hyperparameter search (Optuna): many runs of an experiment; --report: the table",
    )
    sweep.add_argument(
        "--config",
        default=None,
        help="experiment file or name (default: the sweep's, else connect_four)",
    )
    sweep.add_argument(
        "--space",
        default=None,
        help="search space file with get_space(), or a name of azjax's (default: the sweep's)",
    )
    sweep.add_argument(
        "--workdir", required=True, help="sweep directory, a path or gs://... (resumes)"
    )
    sweep.add_argument(
        "--trials", type=count(1), default=None, help="trials in the study in all, all workers"
    )
    sweep.add_argument(
        "--storage",
        default=None,
        metavar="URL",
        help="database shared by workers on many hosts (postgresql://user@host/db); "
        "default: a journal file in the workdir (a gs:// workdir needs a database)",
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
