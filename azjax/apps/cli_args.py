"""The `azjax` command line's arguments: the parser of every command (`parser()`) and
the `--config.KEY=VALUE` overrides (`split_overrides`). The commands are in `cli.py`."""

import argparse

from azjax.apps.records_args import add_records_arguments

DESCRIPTION = (
    "The `azjax` command line: train AlphaZero agents, rate them, play them, serve them to GUIs "
    "and the browser, search hyperparameters, measure speed and memory."
)


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one line (`azjax: error: ...`, status 2), not usage text."""

    def error(self, message):
        from azjax.types import UserError  # noqa: PLC0415

        raise UserError(f"{self.prog}: {message}")


def _count(low: int, high: int = 1_000_000_000):
    """An argparse type: an integer in [low, high]."""

    def parse(text: str) -> int:
        if not text.strip().lstrip("+-").isdecimal() or not text.strip().isascii():
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}, got {value}")
        return value

    return parse


def _even_count(text: str) -> int:
    value = _count(2)(text)
    if value % 2:
        raise argparse.ArgumentTypeError(f"must be a positive even number, got {value}")
    return value


SIMULATIONS = _count(1, 1_000_000)


def _agent_name(text: str) -> str:
    """An argparse type: the name of a shipped agent (`--agent`, `--opponent-agent`), also
    spelled `zoo:NAME` as opponent specs spell it."""
    text = text.removeprefix("zoo:")
    if not text.strip():
        raise argparse.ArgumentTypeError(
            f"expected the name of a shipped agent (`azjax zoo --names`), got {text!r}"
        )
    return text


def split_overrides(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """Separates `--config.a.b=value` (or `--config.a.b value`) from the other arguments."""
    rest, overrides, index = [], {}, 0
    while index < len(argv):
        arg = argv[index]
        if arg.startswith("--config."):
            key, sep, value = arg[len("--config.") :].partition("=")
            if not sep:
                if index + 1 >= len(argv):
                    from azjax.types import UserError  # noqa: PLC0415

                    raise UserError(f"config override {arg} needs a value")
                value = argv[index + 1]
                index += 1
            overrides[key] = value
        else:
            rest.append(arg)
        index += 1
    return rest, overrides


def _agent_arguments(command, help: str) -> None:
    """`--workdir RUN` or `--agent NAME` (a shipped agent, `azjax zoo`): exactly one."""
    source = command.add_mutually_exclusive_group(required=True)
    source.add_argument("--workdir", help=help)
    source.add_argument(
        "--agent", type=_agent_name, metavar="NAME", help="a shipped agent (`azjax zoo --names`)"
    )


def resolve_agent(args) -> None:
    """Folds `--agent NAME` (and serve's `--opponent-agent`) into `workdir` as `zoo:NAME`,
    which `agent.load_agent` reads."""
    if getattr(args, "agent", None) is not None:
        args.workdir = f"zoo:{args.agent}"
    if getattr(args, "opponent_agent", None) is not None:
        args.opponent_workdir = f"zoo:{args.opponent_agent}"


# The options that name a local folder or file: a cloud URI there was made a local folder
# named "gs:" in the working folder (records, frontier, ablation) or failed after the work.
LOCAL_ONLY = {
    "evaluate": ("records", "sgf"),
    "selfplay": ("records", "sgf"),
    "records": ("out",),
    "gtp": ("sgf_dir",),
    "mistakes": ("out",),
    "plot": ("out",),
    "frontier": ("dir",),
    "ablation": ("workdir",),
}


def check_local_paths(args) -> None:
    """Refuses a cloud URI (`gs://...`) given to an option that writes locally only, before
    anything runs.

    Raises:
      UserError: such an option holds a URI.
    """
    from azjax.types import UserError  # noqa: PLC0415  (no jax)

    for name in LOCAL_ONLY.get(args.command, ()):
        value = getattr(args, name, None)
        if value is not None and "://" in str(value):
            option = "--" + name.replace("_", "-")
            raise UserError(
                f"{option} {value}: azjax {args.command} writes there on the local file "
                "system only (gs:// is for the --workdir of train and sweep and the --dir of "
                "tournament): name a local path, and copy it to the bucket after"
            )


def parser() -> argparse.ArgumentParser:
    from azjax import __version__  # noqa: PLC0415  (no jax)

    parser = _Parser(prog="azjax", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"azjax {__version__}")
    commands = parser.add_subparsers(
        dest="command", parser_class=_Parser, title="commands", metavar="COMMAND"
    )
    from azjax.apps.ablation_args import add_parser as add_ablation  # noqa: PLC0415
    from azjax.apps.bench_args import add_parser as add_bench  # noqa: PLC0415
    from azjax.apps.frontier_args import add_parser as add_frontier  # noqa: PLC0415
    from azjax.apps.mistakes_args import add_parser as add_mistakes  # noqa: PLC0415
    from azjax.apps.records_args import add_parser as add_records  # noqa: PLC0415
    from azjax.apps.sweeps.arguments import add_parser as add_sweep  # noqa: PLC0415
    from azjax.apps.zoo_args import add_parser as add_zoo  # noqa: PLC0415

    _add_train(commands)
    _add_evaluate(commands)
    _add_selfplay(commands)
    _add_gtp(commands)
    _add_uci(commands)
    _add_play(commands)
    _add_serve(commands)
    add_bench(commands, _count, _even_count)
    _add_plot(commands)
    _add_tournament(commands)
    sweep = add_sweep(commands, _count)
    add_hosts_arguments(sweep, "one worker over the devices of several processes (a pod slice)")
    add_ablation(commands, _count, _even_count)
    add_frontier(commands, _count, _even_count)
    add_mistakes(commands, _count, _agent_arguments)
    add_records(commands, _count)
    commands.add_parser("games", help="list the registered games")
    add_zoo(commands, _count, _even_count)
    return parser


def _add_train(commands) -> None:
    train = commands.add_parser("train", help="train an agent (resumes an existing workdir)")
    train.add_argument(
        "--config",
        default=None,
        help="experiment: a file with get_config(), a name of azjax's (connect_four, othello:cpu6; "
        "`experiments/`) or a run's config.json (default: the --workdir run's config, "
        "else connect_four)",
    )
    train.add_argument(
        "--workdir",
        default=None,
        help="run directory; an existing run resumes, with its own config unless --config is "
        "given (default: runs/<name>, or the folder of --config RUN/config.json)",
    )
    train.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved config, then exit (compiles, trains and writes nothing)",
    )
    train.add_argument(
        "--memory-plan",
        action="store_true",
        help="print the resolved config and its memory plan on the run's devices, then exit "
        "(compiles the step functions; trains and writes nothing)",
    )
    train.add_argument(
        "--allow-config-change",
        action="store_true",
        help="resume a workdir even though its saved config differs",
    )
    train.add_argument(
        "--resume-from", metavar="OUT", help="start a new --workdir from an export (export-state)"
    )
    train.add_argument("--devices", type=_count(1), default=None, help="use the first N devices")
    train.add_argument(
        "--no-compile-cache",
        action="store_true",
        help="compile every program (default: reuse those compiled before, kept in "
        "~/.cache/azjax/jax or JAX_COMPILATION_CACHE_DIR; AZJAX_COMPILATION_CACHE=0 also "
        "turns it off)",
    )
    add_hosts_arguments(train, "one run over the devices of several processes")
    export = commands.add_parser(  # the state --resume-from starts from
        "export-state", help="a run's state without its replay, small enough to commit"
    )
    export.add_argument("workdir", metavar="WORKDIR")
    export.add_argument("out", metavar="OUT", help="a new (or empty) folder")
    export.add_argument("--step", type=_count(1), help="the checkpoint (default: the newest)")


def _add_evaluate(commands) -> None:
    evaluate = commands.add_parser("evaluate", help="play a trained agent against an opponent")
    _agent_arguments(evaluate, "run directory of the agent")
    evaluate.add_argument(
        "--opponent",
        default="mcts:200",
        help="random, mcts:N (pure MCTS, N simulations), workdir:PATH, zoo:NAME, an outside "
        'engine (gtp:"COMMAND", uci:"COMMAND" depth=D) or solver (Connect Four)',
    )
    evaluate.add_argument(
        "--games", type=_even_count, default=100, help="games (even), half as first"
    )
    evaluate.add_argument(
        "--simulations",
        type=SIMULATIONS,
        default=None,
        help="the agent's simulations per move (default: the run's eval setting)",
    )
    evaluate.add_argument(
        "--opening-plies",
        type=_count(0),
        default=None,
        help="random opening moves (default 0; 2 against another workdir or the solver)",
    )
    evaluate.add_argument("--seed", type=_count(0), default=0)
    evaluate.add_argument("--sgf", default=None, help="write the games as SGF to this folder (go)")
    add_records_arguments(evaluate, "the game's")


def _add_selfplay(commands) -> None:
    selfplay = commands.add_parser(
        "selfplay", help="play self-play games as in training and save them (SGF, records)"
    )
    _agent_arguments(selfplay, "run directory or checkpoint path")
    selfplay.add_argument("--games", type=_even_count, default=8, help="games (even)")
    selfplay.add_argument("--sgf", default=None, help="folder for the SGF files (go)")
    add_records_arguments(selfplay, "jsonl")
    selfplay.add_argument("--seed", type=_count(0), default=0)


def _add_gtp(commands) -> None:
    gtp = commands.add_parser("gtp", help="a GTP engine on stdin/stdout for Go GUIs (go runs)")
    _agent_arguments(gtp, "run directory or checkpoint path")
    gtp.add_argument(
        "--simulations", type=SIMULATIONS, default=None, help="search simulations per move"
    )
    gtp.add_argument("--sgf-dir", default=None, help="save each game played as SGF here")
    gtp.add_argument(
        "--resign-below", type=float, default=None, help="resign below this searched value"
    )
    gtp.add_argument("--seed", type=_count(0), default=0)


def _add_uci(commands) -> None:
    uci = commands.add_parser(
        "uci", help="a UCI engine on stdin/stdout for Xiangqi GUIs and engines (xiangqi runs)"
    )
    _agent_arguments(uci, "run directory or checkpoint path")
    uci.add_argument(
        "--simulations", type=SIMULATIONS, default=None, help="default search simulations per move"
    )
    uci.add_argument("--seed", type=_count(0), default=0)


def _add_play(commands) -> None:
    play = commands.add_parser("play", help="play against a trained agent in the terminal")
    _agent_arguments(play, "run directory or checkpoint path")
    play.add_argument("--simulations", type=SIMULATIONS, default=None)
    play.add_argument("--second", action="store_true", help="let the agent move first")
    play.add_argument("--seed", type=_count(0), default=0)


def _add_serve(commands) -> None:
    serve = commands.add_parser(
        "serve", help="play against a trained agent (or watch two) in the browser"
    )
    _agent_arguments(serve, "run directory or checkpoint path")
    serve.add_argument(
        "--opponent-workdir", default=None, help="a second run: watch the two agents play"
    )
    serve.add_argument(
        "--opponent-agent",
        type=_agent_name,
        default=None,
        metavar="NAME",
        help="a shipped agent as the second",
    )
    serve.add_argument("--simulations", type=SIMULATIONS, default=None)
    serve.add_argument("--port", type=_count(1, 65535), default=8000)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--max-games", type=_count(1), default=64, help="games kept at once")


def _add_plot(commands) -> None:
    plot = commands.add_parser("plot", help="plot a run's learning curve from metrics.jsonl")
    plot.add_argument("--workdir", required=True, help="a run directory or a metrics.jsonl file")
    plot.add_argument("--out", default=None, help="image file (default: WORKDIR/learning.png)")
    plot.add_argument(
        "--x",
        choices=("minutes", "games", "positions", "flops", "iteration"),
        default="minutes",
        help="x axis: wall-clock minutes, self-play games or positions, training FLOPs "
        "(self-play and learning) or iterations",
    )
    plot.add_argument(
        "--eval-games",
        type=_count(1),
        default=None,
        help="games per evaluation, for metrics written before runs recorded it",
    )


def _add_tournament(commands) -> None:
    tournament = commands.add_parser(
        "tournament",
        help="play checkpoints, baselines and engines against each other; Elo ratings",
    )
    tournament.add_argument(
        "--dir", required=True, help="tournament directory, a path or gs://... (resumes)"
    )
    tournament.add_argument(
        "--players",
        nargs="+",
        default=None,
        help="RUN, RUN@STEP, RUN@every:K, RUN@all, zoo:NAME, random, mcts:N, minimax, "
        'gtp:"COMMAND", uci:"COMMAND" depth=D, solver (default: the players already in DIR)',
    )
    tournament.add_argument("--game", default=None, help="the game when no player is a run")
    tournament.add_argument(
        "--gauntlet",
        default=None,
        metavar="PLAYER",
        help="PLAYER against every other player (default: round robin)",
    )
    tournament.add_argument(
        "--games", type=_count(1), default=20, help="games per pairing when done (default 20)"
    )
    tournament.add_argument(
        "--batch", type=_even_count, default=32, help="games played at once on the device"
    )
    tournament.add_argument(
        "--simulations", type=SIMULATIONS, default=None, help="checkpoints' simulations per move"
    )
    tournament.add_argument(
        "--opening-plies",
        type=_count(0),
        default=2,
        help="random opening moves between deterministic players (default 2)",
    )
    tournament.add_argument("--anchor", default="random", help="the player rated 0")
    tournament.add_argument(
        "--timeout", type=_count(1), default=60, help="seconds an engine may take per answer"
    )
    tournament.add_argument("--seed", type=_count(0), default=0)
    tournament.add_argument(
        "--trust-engines",
        action="store_true",
        help="run the outside engines (gtp:, uci:) that DIR's tournament.json names",
    )


def add_hosts_arguments(command, what: str) -> None:
    """The flags that join a command's process to others (`distributed.initialize`)."""
    hosts = command.add_argument_group("many hosts", f"{what}, the same command on each")
    hosts.add_argument(
        "--coordinator", default=None, metavar="HOST:PORT", help="process 0's address"
    )
    hosts.add_argument("--num-processes", type=_count(1), default=None, metavar="N")
    hosts.add_argument("--process-id", type=_count(0), default=None, metavar="I", help="0 to N-1")
    hosts.add_argument(
        "--distributed",
        choices=("auto",),
        default=None,
        help="auto: read the processes from the cluster (Cloud TPU, SLURM, Open MPI)",
    )
    hosts.add_argument(
        "--distributed-timeout",
        type=_count(1),
        default=300,
        metavar="S",
        help="seconds to wait for every process to join (default 300)",
    )
