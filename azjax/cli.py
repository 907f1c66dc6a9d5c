"""The `azjax` command line: train, evaluate, play, bench, games.

    azjax train --config experiments/connect_four.py --workdir runs/c4 \
        --config.search.num_simulations=32
    azjax evaluate --workdir runs/c4 --opponent mcts:800 --games 200
    azjax play --workdir runs/c4
    azjax gtp --workdir runs/go_9x9 --simulations 200      # Go GUIs, GNU Go
    azjax uci --workdir runs/xiangqi                        # Xiangqi GUIs, Fairy-Stockfish
    azjax selfplay --workdir runs/go_9x9 --games 8 --sgf games/
    azjax bench --game connect_four
    azjax bench --memory --config experiments/go_19x19.py --devices 8
    azjax plot --workdir runs/c4
    azjax tournament --dir tournaments/c4 --players runs/c4@every:50 random mcts:400
    azjax sweep --config experiments/connect_four.py --space sweeps/connect_four.py \
        --workdir runs/sweep_c4 --trials 16          # hyperparameter search (Optuna)

User mistakes (unknown game or key, bad value, missing or corrupt checkpoint, illegal move)
print one line to stderr and exit with status 2.
"""

import argparse
import sys


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


def _split_overrides(argv: list[str]) -> tuple[list[str], dict[str, str]]:
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


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="azjax", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)

    train = commands.add_parser("train", help="train an agent (resumes an existing workdir)")
    train.add_argument(
        "--config", default=None, help="experiment file with get_config() (default: connect_four)"
    )
    train.add_argument("--workdir", default=None, help="run directory (default: runs/<name>)")
    train.add_argument(
        "--allow-config-change",
        action="store_true",
        help="resume a workdir even though its saved config differs",
    )
    train.add_argument("--devices", type=_count(1), default=None, help="use the first N devices")
    hosts = train.add_argument_group(
        "many hosts", "one run over the devices of several processes, the same command on each"
    )
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

    evaluate = commands.add_parser("evaluate", help="play a trained agent against an opponent")
    evaluate.add_argument("--workdir", required=True, help="run directory of the agent")
    evaluate.add_argument(
        "--opponent",
        default="mcts:200",
        help="random, mcts:N (pure MCTS, N simulations) or workdir:PATH",
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
        help="random opening moves (default 0; 2 against another workdir)",
    )
    evaluate.add_argument("--seed", type=_count(0), default=0)
    evaluate.add_argument("--sgf", default=None, help="write the games as SGF to this folder (go)")

    selfplay = commands.add_parser(
        "selfplay", help="play self-play games as in training and save them as SGF (go)"
    )
    selfplay.add_argument("--workdir", required=True, help="run directory or checkpoint path")
    selfplay.add_argument("--games", type=_even_count, default=8, help="games (even)")
    selfplay.add_argument("--sgf", required=True, help="folder for the SGF files")
    selfplay.add_argument("--seed", type=_count(0), default=0)

    gtp = commands.add_parser("gtp", help="a GTP engine on stdin/stdout for Go GUIs (go runs)")
    gtp.add_argument("--workdir", required=True, help="run directory or checkpoint path")
    gtp.add_argument(
        "--simulations", type=SIMULATIONS, default=None, help="search simulations per move"
    )
    gtp.add_argument("--sgf-dir", default=None, help="save each game played as SGF here")
    gtp.add_argument(
        "--resign-below", type=float, default=None, help="resign below this searched value"
    )
    gtp.add_argument("--seed", type=_count(0), default=0)

    uci = commands.add_parser(
        "uci", help="a UCI engine on stdin/stdout for Xiangqi GUIs and engines (xiangqi runs)"
    )
    uci.add_argument("--workdir", required=True, help="run directory or checkpoint path")
    uci.add_argument(
        "--simulations", type=SIMULATIONS, default=None, help="default search simulations per move"
    )
    uci.add_argument("--seed", type=_count(0), default=0)

    play = commands.add_parser("play", help="play against a trained agent in the terminal")
    play.add_argument("--workdir", required=True)
    play.add_argument("--simulations", type=SIMULATIONS, default=None)
    play.add_argument("--second", action="store_true", help="let the agent move first")
    play.add_argument("--seed", type=_count(0), default=0)

    bench = commands.add_parser(
        "bench", help="throughput table (env, search, self-play, learner); --memory: memory plan"
    )
    bench.add_argument("--game", default=None, help="the game (default: connect_four)")
    bench.add_argument("--config", default=None, help="experiment file for search/network sizes")
    bench.add_argument("--batch-sizes", default="1,64,1024,4096")
    bench.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    bench.add_argument(
        "--env-only", action="store_true", help="only the environment rows (no network)"
    )
    bench.add_argument(
        "--memory",
        action="store_true",
        help="memory plan of --config (else every experiment): bytes per position and game, "
        "compiled programs, the largest batch and replay in 16/40/80 GiB per device",
    )
    bench.add_argument("--all", action="store_true", help="--memory for every experiment")
    bench.add_argument(
        "--devices", type=_count(1, 4096), default=8, help="--memory: devices (default 8)"
    )
    bench.add_argument(
        "--population",
        default=None,
        metavar="SIZES",
        help="cost of populations of these sizes (1,2,4,8) of --config, per member-iteration",
    )
    bench.add_argument("--iterations", type=_count(1), default=3, help="--population: timed")
    bench.add_argument(
        "--search-options",
        action="store_true",
        help="time per ply/move of --config with tree reuse and playout caps off and on",
    )
    bench.add_argument(
        "--workdir",
        default=None,
        help="--search-options: the network (and config) of this run's newest checkpoint",
    )

    plot = commands.add_parser("plot", help="plot a run's learning curve from metrics.jsonl")
    plot.add_argument("--workdir", required=True, help="a run directory or a metrics.jsonl file")
    plot.add_argument("--out", default=None, help="image file (default: WORKDIR/learning.png)")
    plot.add_argument(
        "--x",
        choices=("minutes", "games", "iteration"),
        default="minutes",
        help="x axis: wall-clock minutes, self-play games or iterations",
    )
    plot.add_argument(
        "--eval-games",
        type=_count(1),
        default=None,
        help="games per evaluation, for metrics written before runs recorded it",
    )

    tournament = commands.add_parser(
        "tournament",
        help="play checkpoints, baselines and engines against each other; Elo ratings",
    )
    tournament.add_argument("--dir", required=True, help="tournament directory (resumes)")
    tournament.add_argument(
        "--players",
        nargs="+",
        default=None,
        help="RUN, RUN@STEP, RUN@every:K, RUN@all, random, mcts:N, minimax, "
        'gtp:"COMMAND", uci:"COMMAND" depth=D (default: the players already in DIR)',
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

    from azjax.sweeps.command import add_parser as add_sweep  # noqa: PLC0415

    add_sweep(commands, _count)
    commands.add_parser("games", help="list the registered games")
    return parser


def _train(args, overrides) -> int:
    import os  # noqa: PLC0415

    from azjax import distributed  # noqa: PLC0415

    try:
        # Before anything computes with JAX (loading a config builds its game).
        distributed.initialize(
            args.coordinator,
            args.num_processes,
            args.process_id,
            auto=args.distributed == "auto",
            timeout_s=args.distributed_timeout,
        )
        return _train_run(args, overrides)
    except distributed.JoinError as error:
        # JAX's runtime still waits for the missing processes: exit without its shutdown.
        sys.stdout.flush()
        print(f"azjax: error: {error}", file=sys.stderr, flush=True)
        os._exit(error.exit_code)


def _train_run(args, overrides) -> int:
    from azjax import config as config_lib  # noqa: PLC0415
    from azjax import interrupt, train  # noqa: PLC0415
    from azjax.paths import workdir_path  # noqa: PLC0415

    config = config_lib.load_config(args.config)
    config_lib.apply_overrides(config, overrides)
    workdir = workdir_path(args.workdir or f"runs/{config.name}")  # gs:// stays a URI
    mesh = train.make_mesh(args.devices) if args.devices else None
    if interrupt.requested():
        print("azjax: interrupted before training started", file=sys.stderr)
        return 130
    try:
        train.train(
            config,
            workdir,
            allow_config_change=args.allow_config_change,
            mesh=mesh,
            progress="lines",
        )
    except KeyboardInterrupt:
        return 130
    return 0


def _evaluate(args) -> int:
    import jax  # noqa: PLC0415

    from azjax import agent as agent_lib  # noqa: PLC0415
    from azjax import arena  # noqa: PLC0415
    from azjax.config import parse_opponent_spec  # noqa: PLC0415
    from azjax.protocols import sgf  # noqa: PLC0415
    from azjax.types import UserError  # noqa: PLC0415

    parse_opponent_spec(args.opponent)
    agent = agent_lib.load_agent(args.workdir, num_simulations=args.simulations)
    opponent, params = agent_lib.make_opponent(
        agent.game, args.opponent, num_simulations=args.simulations
    )
    opening = args.opening_plies
    if opening is None:
        opening = 2 if parse_opponent_spec(args.opponent)[0] == "workdir" else 0
    if opening >= agent.game.max_episode_length:
        raise UserError(
            f"--opening-plies must be below the longest game of {agent.game.name} "
            f"({agent.game.max_episode_length} plies), got {opening}"
        )
    match = jax.jit(
        arena.make_match(
            agent.game, agent.player, opponent, num_games=args.games, opening_plies=opening
        )
    )
    if args.sgf:
        sgf.check_go(agent.game)
    result = match(agent.variables, params, jax.random.PRNGKey(args.seed))
    summary = arena.summarize(jax.device_get(result.outcomes))
    print(
        f"{args.workdir} (iteration {agent.iteration}, {agent.num_simulations} "
        f"simulations) vs {args.opponent}: {summary.format()}"
    )
    if args.sgf:
        name = f"azjax-{agent.iteration}"
        records = sgf.match_records(agent.game, result, name, args.opponent)
        paths = sgf.write_records(args.sgf, "arena", records)
        print(f"wrote {len(paths)} SGF files to {args.sgf}")
    return 0


def _selfplay(args) -> int:
    import jax  # noqa: PLC0415

    from azjax import agent as agent_lib  # noqa: PLC0415
    from azjax import arena  # noqa: PLC0415
    from azjax.protocols import sgf  # noqa: PLC0415

    agent = agent_lib.load_agent(args.workdir)
    sgf.check_go(agent.game)
    player = agent_lib.selfplay_player(agent)
    match = jax.jit(arena.make_match(agent.game, player, player, num_games=args.games))
    result = match(agent.variables, agent.variables, jax.random.PRNGKey(args.seed))
    name = f"azjax-{agent.iteration}"
    paths = sgf.write_records(
        args.sgf, "selfplay", sgf.match_records(agent.game, result, name, name)
    )
    print(f"wrote {len(paths)} self-play games to {args.sgf}")
    return 0


def _gtp(args) -> int:
    from azjax import agent as agent_lib  # noqa: PLC0415
    from azjax.protocols import gtp  # noqa: PLC0415

    agent = agent_lib.load_agent(args.workdir, num_simulations=args.simulations)
    engine = gtp.Engine(agent, sgf_dir=args.sgf_dir, seed=args.seed, resign_below=args.resign_below)
    return gtp.serve(engine, sys.stdin, sys.stdout)


def _uci(args) -> int:
    from azjax.protocols import uci  # noqa: PLC0415

    return uci.main_from_args(args.workdir, args.simulations, args.seed)


def _play(args) -> int:
    from azjax import agent as agent_lib  # noqa: PLC0415
    from azjax.protocols import terminal  # noqa: PLC0415

    agent = agent_lib.load_agent(args.workdir, num_simulations=args.simulations)
    return terminal.play_in_terminal(agent, human_first=not args.second, seed=args.seed)


def _plot(args) -> int:
    from pathlib import Path  # noqa: PLC0415

    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")  # files only: no window (the library leaves a notebook's backend)
    from azjax.plots import plot_run  # noqa: PLC0415
    from azjax.runs import load_metrics  # noqa: PLC0415

    metrics = load_metrics(args.workdir)  # a one-line error when there are none
    source = Path(args.workdir)
    default = source / "learning.png" if source.is_dir() else source.with_suffix(".png")
    out = args.out or str(default)
    plot_run(metrics, out, title=source.name, x=args.x, num_games=args.eval_games)
    print(f"wrote {out}")
    return 0


def _tournament(args) -> int:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    from azjax import tournament  # noqa: PLC0415

    players = args.players
    if args.gauntlet and players and args.gauntlet not in players:
        players = [args.gauntlet, *players]
    tournament.run(
        args.dir,
        players,
        game=args.game,
        schedule="gauntlet" if args.gauntlet else "round-robin",
        focus=_gauntlet_name(args.gauntlet, args.simulations),
        games_per_pair=args.games,
        batch_size=args.batch,
        simulations=args.simulations,
        opening_plies=args.opening_plies,
        seed=args.seed,
        timeout=args.timeout,
        anchor=args.anchor,
    )
    print(tournament.format_table(tournament.load_ratings(args.dir)))
    print(f"wrote {args.dir}/ratings.csv and {args.dir}/ratings.png")
    return 0


def _gauntlet_name(spec: str | None, simulations: int | None) -> str | None:
    """The player name a gauntlet spec resolves to (RUN -> RUN@NEWEST)."""
    if spec is None:
        return None
    from azjax.tournament import resolve  # noqa: PLC0415
    from azjax.types import UserError  # noqa: PLC0415

    infos = resolve(spec, simulations=simulations)
    if len(infos) != 1:
        raise UserError(f"--gauntlet names one player, but {spec!r} stands for {len(infos)}")
    return infos[0].name


def _games(args) -> int:
    from azjax import games  # noqa: PLC0415

    print("\n".join(games.names()))
    return 0


def _bench(args) -> int:
    from azjax import bench  # noqa: PLC0415

    return bench.main(args)


COMMANDS = {
    "train": _train,
    "evaluate": _evaluate,
    "play": _play,
    "selfplay": _selfplay,
    "gtp": _gtp,
    "uci": _uci,
    "bench": _bench,
    "plot": _plot,
    "tournament": _tournament,
    "games": _games,
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `azjax` console script; returns the exit status."""
    import contextlib  # noqa: PLC0415

    from azjax import interrupt  # noqa: PLC0415  (standard library only: before jax loads)

    argv = sys.argv[1:] if argv is None else argv
    # `train` and `sweep` defer Ctrl-C and SIGTERM from the start, imports included, to the
    # loop's checks.
    deferred = (
        interrupt.deferred() if argv[:1] in (["train"], ["sweep"]) else contextlib.nullcontext()
    )
    try:
        with deferred:
            return _main(argv)
    except KeyboardInterrupt:
        return 130


def _main(argv: list[str]) -> int:
    from azjax.types import UserError  # noqa: PLC0415

    try:
        rest, overrides = _split_overrides(argv)
        args = _parser().parse_args(rest)
        if args.command is None:
            _parser().print_help()
            return 2
        memory = args.command == "bench" and (
            args.memory or args.population is not None or args.search_options
        )
        if overrides and args.command not in ("train", "sweep") and not memory:
            raise UserError(
                "--config.KEY=VALUE overrides apply to `azjax train`, `azjax sweep` and "
                "`azjax bench --memory`, `--population` or `--search-options`"
            )
        if args.command == "train":
            return _train(args, overrides)
        if args.command == "sweep":
            from azjax.sweeps import command  # noqa: PLC0415

            return command.main(args, overrides)
        if memory and args.search_options:
            from azjax.bench import search_options  # noqa: PLC0415

            return search_options.main(args, overrides)
        if memory and args.population is not None:
            from azjax.bench import population  # noqa: PLC0415

            return population.main(args, overrides)
        if memory:
            from azjax.bench import memory_report  # noqa: PLC0415

            return memory_report.main(args, overrides)
        return COMMANDS[args.command](args)
    except UserError as error:
        print(f"azjax: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
