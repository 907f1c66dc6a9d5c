"""`azjax bench`'s arguments, apart from the benchmarks (`apps/bench/`) so that the command
line's parser loads no jax."""

__all__ = ["add_parser"]


def add_parser(commands, count, even_count) -> None:
    bench = commands.add_parser(
        "bench", help="throughput table (env, search, self-play, learner); --memory: memory plan"
    )
    bench.add_argument("--game", default=None, help="the game (default: connect_four)")
    bench.add_argument(
        "--config", default=None, help="experiment file or name for search/network sizes"
    )
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
        "--devices", type=count(1, 4096), default=8, help="--memory: devices (default 8)"
    )
    bench.add_argument(
        "--population",
        default=None,
        metavar="SIZES",
        help="cost of populations of these sizes (1,2,4,8) of --config, per member-iteration",
    )
    bench.add_argument("--iterations", type=count(1), default=3, help="--population: timed")
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
    bench.add_argument(
        "--compile",
        action="store_true",
        help="seconds to trace and to compile each of --config's programs (init, play, learn), "
        "beside a plain pgx + mctx + Flax play step of the same sizes",
    )
