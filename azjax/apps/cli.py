"""The `azjax` command line: every command of azjax (`azjax --help` lists them).

    azjax train --config connect_four --workdir runs/c4 \
        --config.search.num_simulations=32
    azjax train --workdir runs/c4 --config.train.num_iterations=600   # resume, go on longer
    azjax train --config othello:cpu6 --print-config       # the resolved config, at once
    azjax export-state runs/c4 out/c4   # to commit; train --workdir NEW --resume-from out/c4
    azjax evaluate --workdir runs/c4 --opponent mcts:800 --games 200
    azjax evaluate --agent go_9x9 --opponent 'gtp:"gnugo --mode gtp --level 0"' --games 20
    azjax mistakes --workdir runs/c4 --simulations 0,32,200   # against perfect play
    azjax play --workdir runs/c4
    azjax zoo                                               # the shipped trained agents
    azjax serve --agent connect_four                        # play one in the browser
    azjax gtp --workdir runs/go_9x9 --simulations 200      # Go GUIs, GNU Go
    azjax uci --workdir runs/xiangqi                        # Xiangqi GUIs, Fairy-Stockfish
    azjax selfplay --workdir runs/go_9x9 --games 8 --sgf games/
    azjax records --game go_9x9 --players 'gtp:"gnugo --mode gtp --level 5"' --games 100 \
        --out records/gnugo5 --jobs 2                    # outside engines' game records
    azjax bench --game connect_four
    azjax bench --memory --config go_19x19 --devices 8
    azjax bench --compile --config connect_four            # trace and compile times
    azjax plot --workdir runs/c4
    azjax tournament --dir tournaments/c4 --players runs/c4@every:50 random mcts:400
    azjax sweep --config connect_four --space connect_four \
        --workdir runs/sweep_c4 --trials 16          # hyperparameter search (Optuna)
    azjax ablation --config gomoku_6x6_k4 --minutes 10 --workdir runs/ablation

User mistakes (unknown game or key, bad value, missing or corrupt checkpoint, illegal move)
print one line to stderr and exit with status 2. Messages go through `logging` (`console`).
"""

import sys

from azjax.apps import cli_errors, console
from azjax.apps.cli_args import check_local_paths, parser, resolve_agent, split_overrides
from azjax.apps.cli_train import export_state, joined, train
from azjax.extras import missing_extra


def _evaluate(args, overrides: dict[str, str] | None = None) -> int:
    import jax  # noqa: PLC0415

    from azjax import interrupt  # noqa: PLC0415
    from azjax.apps import cli_records  # noqa: PLC0415
    from azjax.apps.protocols import sgf  # noqa: PLC0415
    from azjax.config import parse_opponent_spec  # noqa: PLC0415
    from azjax.games.records.sgf import check_go  # noqa: PLC0415
    from azjax.matches import agent as agent_lib  # noqa: PLC0415
    from azjax.matches import arena  # noqa: PLC0415
    from azjax.types import UserError  # noqa: PLC0415

    kind, parsed = parse_opponent_spec(args.opponent)  # a bad spec: one line, at once
    if kind == "engine" and args.sgf:
        raise UserError(
            "--sgf records batched matches, not games against an outside engine: use --records"
        )
    cli_records.make_folders(args)  # one that cannot be written: one line before the games
    agent = agent_lib.load_agent(args.workdir, num_simulations=args.simulations, search=overrides)
    opening = args.opening_plies
    if opening is None:  # random openings between deterministic players
        opening = 2 if kind == "workdir" or getattr(parsed, "protocol", "") == "solver" else 0
    if opening >= agent.game.max_episode_length:
        raise UserError(
            f"--opening-plies must be below the longest game of {agent.game.name} "
            f"({agent.game.max_episode_length} plies), got {opening}"
        )
    if args.sgf:
        check_go(agent.game)
    fmt, recorder = cli_records.evaluate_recorder(args, agent, kind)
    _stop_if_asked()  # Ctrl-C while the agent loaded: no game begun
    outcomes, reasons, result = agent_lib.play_opponent(
        agent,
        args.opponent,
        num_games=args.games,
        key=jax.random.PRNGKey(args.seed),
        opening_plies=opening,
        seed=args.seed,
        num_simulations=args.simulations,
        watchers=[] if recorder is None else [recorder],
        should_stop=interrupt.requested,  # an engine's games: Ctrl-C after the one in play
    )
    summary = arena.summarize(outcomes)
    changed = "".join(f", {key}={value}" for key, value in (overrides or {}).items())
    forfeits = f"; {len(reasons)} forfeited by the engine ({reasons[0]})" if reasons else ""
    played = len(outcomes)
    stopped = f" (stopped after {played} of {args.games} games)" if played < args.games else ""
    print(
        f"{args.workdir} (iteration {agent.iteration}, {agent.num_simulations} "
        f"simulations{changed}) vs {args.opponent}: {summary.format()}{forfeits}{stopped}"
    )
    if args.sgf:
        name = f"azjax-{agent.iteration}"
        records = sgf.match_records(agent.game, result, name, args.opponent)
        paths = sgf.write_records(args.sgf, "arena", records)
        print(f"wrote {len(paths)} SGF files to {args.sgf}")
    if args.records:
        cli_records.write_evaluate_records(args, agent, fmt, recorder, result, outcomes, opening)
    _stop_if_asked()  # Ctrl-C during the games: their result and records, then status 130
    return 0


def _mistakes(args) -> int:
    from azjax.matches import agent as agent_lib  # noqa: PLC0415
    from azjax.matches import mistakes  # noqa: PLC0415

    if args.out:
        mistakes.append_records(args.out, [])  # a file that cannot be written: one line now
    agent = agent_lib.load_agent(args.workdir, step=args.step)
    mistakes.require_solved(agent.game, args.workdir)
    positions = mistakes.make_positions(args.positions, seed=args.seed, game=agent.game)
    for count in args.simulations:
        _stop_if_asked()  # Ctrl-C: after the measurement in flight (its line kept)
        record = mistakes.measure(agent, positions, count, name=args.workdir, seed=args.seed)
        print(mistakes.format_record(record), flush=True)
        if args.out:
            mistakes.append_records(args.out, [record])
    return 0


def _stop_if_asked() -> None:
    """Raises KeyboardInterrupt (status 130) where a signal came in since the command began
    (`main` defers them for the commands of `DEFERRED`)."""
    from azjax import interrupt  # noqa: PLC0415

    if interrupt.requested():
        raise KeyboardInterrupt


def _selfplay(args) -> int:
    from azjax.apps import cli_records  # noqa: PLC0415

    return cli_records.selfplay(args)


def _records(args) -> int:
    from azjax.apps import cli_records  # noqa: PLC0415

    return cli_records.records(args)


def _gtp(args) -> int:
    from azjax.apps.protocols import gtp  # noqa: PLC0415
    from azjax.matches import agent as agent_lib  # noqa: PLC0415

    agent = agent_lib.load_agent(args.workdir, num_simulations=args.simulations)
    engine = gtp.Engine(agent, sgf_dir=args.sgf_dir, seed=args.seed, resign_below=args.resign_below)
    return gtp.serve(engine, sys.stdin, sys.stdout)


def _uci(args) -> int:
    from azjax.apps.protocols import uci  # noqa: PLC0415

    return uci.main_from_args(args.workdir, args.simulations, args.seed)


def _play(args) -> int:
    from azjax.apps.protocols import terminal  # noqa: PLC0415
    from azjax.matches import agent as agent_lib  # noqa: PLC0415

    agent = agent_lib.load_agent(args.workdir, num_simulations=args.simulations)
    return terminal.play_in_terminal(agent, human_first=not args.second, seed=args.seed)


def _serve(args) -> int:
    from azjax.apps import serve  # noqa: PLC0415

    server = serve.make_server(
        args.workdir,
        simulations=args.simulations,
        opponent_workdir=args.opponent_workdir,
        max_games=args.max_games,
    )
    return serve.run(server, host=args.host, port=args.port)


def _plot(args) -> int:
    from pathlib import Path  # noqa: PLC0415

    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")  # files only: no window (the library leaves a notebook's backend)
    from matplotlib.figure import Figure  # noqa: PLC0415

    from azjax.runs.directory import load_metrics  # noqa: PLC0415
    from azjax.runs.plots import plot_run  # noqa: PLC0415
    from azjax.types import UserError  # noqa: PLC0415

    metrics = load_metrics(args.workdir)  # a one-line error when there are none
    source = Path(args.workdir)
    default = source / "learning.png" if source.is_dir() else source.with_suffix(".png")
    out = args.out or str(default)
    formats = Figure().canvas.get_supported_filetypes()
    kind = Path(out).suffix.lstrip(".").lower()
    if kind not in formats:
        raise UserError(
            f"cannot write {out}: {f'.{kind}' if kind else 'no extension'} is not an image "
            f"format (name one of {', '.join(sorted(formats))})"
        )
    try:
        plot_run(metrics, out, title=source.name, x=args.x, num_games=args.eval_games)
    except OSError as error:
        raise UserError(f"cannot write {out}: {error.strerror or error}") from None
    print(f"wrote {out}")
    return 0


def _tournament(args) -> int:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    from azjax.matches import tournament  # noqa: PLC0415

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
        stop_on_signal=True,
        trust_engines=args.trust_engines,
    )
    print(tournament.format_table(tournament.load_ratings(args.dir)))
    print(f"wrote {args.dir}/ratings.csv and {args.dir}/ratings.png")
    return 0


def _gauntlet_name(spec: str | None, simulations: int | None) -> str | None:
    """The player name a gauntlet spec resolves to (RUN -> RUN@NEWEST)."""
    if spec is None:
        return None
    from azjax.matches.tournament import resolve  # noqa: PLC0415
    from azjax.types import UserError  # noqa: PLC0415

    infos = resolve(spec, simulations=simulations)
    if len(infos) != 1:
        raise UserError(f"--gauntlet names one player, but {spec!r} stands for {len(infos)}")
    return infos[0].name


def _games(args) -> int:
    from azjax import games  # noqa: PLC0415

    print("\n".join(games.names()))
    return 0


def _zoo(args) -> int:
    from azjax.matches import zoo  # noqa: PLC0415
    from azjax.types import UserError  # noqa: PLC0415

    if args.from_tournament is not None and args.rate is None:
        raise UserError("--from-tournament DIR goes with --rate NAME")
    if args.export is None and args.rate is None:
        if args.names:
            print("\n".join(zoo.names()))
            return 0
        from azjax.matches.zoo.export import format_table  # noqa: PLC0415

        print(format_table(zoo.cards()) or "the zoo is empty")
        return 0
    from azjax.matches.zoo.export import export, format_table, rate_from_tournament, rerate  # noqa: PLC0415

    given = args.opponents is not None
    opponents = [s.strip() for s in (args.opponents or "random,mcts:200").split(",") if s.strip()]
    rating = dict(games=args.games or 200, seed=args.seed, engine_games=args.engine_games)
    if args.rate is not None:
        if args.export is not None:
            raise UserError("--rate NAME and --export RUN are two commands: give one")
        if args.from_tournament is not None:
            if args.games is not None or args.engine_games is not None:
                raise UserError("--from-tournament DIR rates the games played there: no --games")
            card = rate_from_tournament(
                args.rate, args.from_tournament, opponents if given else None
            )
        else:
            card = rerate(args.rate, opponents, **rating)
        print(format_table([card]))
        return 0
    if not args.name:
        raise UserError("--export RUN needs --name NAME")
    card = export(
        args.export,
        args.name,
        command=args.train_command,
        opponents=opponents,
        notes=args.notes,
        **rating,
    )
    print(format_table([card]))
    return 0


def _bench(args) -> int:
    from azjax.apps import bench  # noqa: PLC0415

    return bench.main(args)


COMMANDS = {
    "train": train,
    "export-state": export_state,
    "evaluate": _evaluate,
    "mistakes": _mistakes,
    "play": _play,
    "serve": _serve,
    "selfplay": _selfplay,
    "records": _records,
    "gtp": _gtp,
    "uci": _uci,
    "bench": _bench,
    "plot": _plot,
    "tournament": _tournament,
    "games": _games,
    "zoo": _zoo,
}


TAKE_OVERRIDES = ("train", "sweep", "ablation", "frontier")  # --config.KEY=VALUE
DEFERRED = ("train", "sweep", "tournament", "frontier", "mistakes", "evaluate", "records")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `azjax` console script; returns the exit status."""
    import contextlib  # noqa: PLC0415

    from azjax import interrupt  # noqa: PLC0415  (standard library only: before jax loads)

    argv = sys.argv[1:] if argv is None else argv
    console.show()
    # The long commands defer Ctrl-C and SIGTERM from the start, imports included, to their
    # loops' checks: a signal never lands inside jax's or a solver's code (`mistakes` then
    # segfaulted in 8 tries of 13).
    deferring = bool(argv) and argv[0] in DEFERRED
    deferred = interrupt.deferred() if deferring else contextlib.nullcontext()
    try:
        with deferred:
            return _main(argv)
    except KeyboardInterrupt:
        return 130


def _main(argv: list[str]) -> int:
    from azjax.types import StorageLost, UserError  # noqa: PLC0415

    try:
        rest, overrides = split_overrides(argv)
        args = parser().parse_args(rest)
        resolve_agent(args)
        check_local_paths(args)
        if args.command is None:
            parser().print_help()
            return 2
        bench_config = args.command == "bench" and (
            args.memory or args.population is not None or args.search_options or args.compile
        )
        if overrides and args.command == "evaluate":
            if all(key.startswith("search.") for key in overrides):
                return _evaluate(args, overrides)  # the agent's search (`load_agent`)
        if overrides and args.command not in TAKE_OVERRIDES and not bench_config:
            raise UserError(
                "--config.KEY=VALUE overrides apply to `azjax train`, `azjax sweep`, "
                "`azjax ablation`, `azjax frontier`, `azjax bench --memory`, `--population`, "
                "`--search-options` or `--compile`, and `azjax evaluate` (the agent's search.* "
                "keys)"
            )
        if args.command == "train":
            return train(args, overrides)
        if args.command == "ablation":
            from azjax.apps import ablation  # noqa: PLC0415

            return ablation.command(args, overrides)
        if args.command == "frontier":
            from azjax.apps import frontier  # noqa: PLC0415

            return frontier.command(args, overrides)
        if args.command == "sweep":
            from azjax.apps.sweeps import command  # noqa: PLC0415

            return joined(args, lambda: command.main(args, overrides))
        if bench_config and args.search_options:
            from azjax.apps.bench import search_options  # noqa: PLC0415

            return search_options.main(args, overrides)
        if bench_config and args.compile:
            from azjax.apps.bench import compile_time  # noqa: PLC0415

            return compile_time.main(args, overrides)
        if bench_config and args.population is not None:
            from azjax.apps.bench import population  # noqa: PLC0415

            return population.main(args, overrides)
        if bench_config:
            from azjax.apps.bench import memory_report  # noqa: PLC0415

            return memory_report.main(args, overrides)
        return COMMANDS[args.command](args)
    except UserError as error:
        print(f"azjax: error: {error}", file=sys.stderr)
        if isinstance(error, StorageLost):  # its writes still retrying would hold the exit
            console.abandon(error.exit_code)
        return error.exit_code
    except ModuleNotFoundError as error:
        message = missing_extra(error)  # an optional package the command needs
        if message is None:
            raise
        print(f"azjax: error: azjax {' '.join(argv[:1])}: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        said = cli_errors.one_line(error)
        if said is not None:  # a user's or the machine's limit, not a bug
            line, status, at_once = said
            print(f"azjax: error: {line}", file=sys.stderr)
            if at_once:
                console.abandon(status)
            return status
        raise


if __name__ == "__main__":
    sys.exit(main())
