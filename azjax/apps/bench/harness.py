"""The bench harness: the config, the measurements in turn, the table and the `azjax bench`
command.

The harness reads the config (through `azjax.config` and `azjax.config.build`), jits every measured
function (`timing.jit`), compiles it by a warm-up call and times it (`timing.time_call`); the
table reports the best of a few timed repetitions, each repeating the call until at least
`min_seconds` have passed. The measured functions are in `measure.py`, pgx's environments in
`pgx.py`.
"""

import copy
import os
import sys
import time
from collections.abc import Callable

import jax
import ml_collections

from azjax import config as config_lib
from azjax.apps.bench import measure
from azjax.apps.bench.pgx import pgx_environment
from azjax.apps.bench.timing import FULL, QUICK, QUICK_MAX_BATCH, Row, Settings, jit
from azjax.config import build
from azjax.types import UserError


def benchmark(
    config: ml_collections.ConfigDict,
    *,
    batch_sizes: list[int],
    settings: Settings = FULL,
    seed: int = 0,
    env_only: bool = False,
    log: Callable[[str], None] = lambda message: None,
) -> list[Row]:
    """Measures every stage for the game and sizes of `config` (only the environment with
    `env_only`); returns the table rows."""
    keys = jax.random.split(jax.random.PRNGKey(seed), 5)
    env_key, network_key, search_key, selfplay_key, learner_key = keys
    game = build.make_game(config)
    rows = measure.measure_env(
        game,
        pgx_environment(game.name),
        batch_sizes=batch_sizes,
        settings=settings,
        key=env_key,
        log=log,
    )
    if env_only:
        return rows
    pipeline = build.make_pipeline(config)
    setup = measure.Setup(
        pipeline=pipeline,
        hyper=build.make_hyperparams(config),
        variables=jit(pipeline.network.init, settings)(network_key),
        algorithm=config.search.algorithm,
        num_simulations=config.search.num_simulations,
    )
    rows += measure.measure_search(setup, settings=settings, key=search_key, log=log)
    rows.append(measure.measure_selfplay(setup, settings=settings, key=selfplay_key, log=log))
    rows += measure.measure_learner(setup, settings=settings, key=learner_key, log=log)
    return rows


def load_bench_config(game_name: str, path: str | None) -> tuple[ml_collections.ConfigDict, str]:
    """The config to size the bench with, and where it came from.

    `path` if given, else the experiment named after the game (experiments/<game_name>.py,
    as `config.load_config` finds it), else the default experiment; its game is then set to
    `game_name`.
    """
    if path is not None:
        config, source = config_lib.load_config(path), path
    else:
        try:
            config, source = config_lib.load_config(game_name), f"experiments/{game_name}.py"
        except UserError as error:
            config, source = config_lib.load_config(None), f"default experiment ({error})"
    if config.game != game_name:
        config.game = game_name
        config.game_kwargs = ml_collections.ConfigDict()
        config_lib.validate(config)
        source += f", game set to {game_name}"
    return config, source


def shrink(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
    """A copy of `config` with tiny network, search, self-play and learner sizes (--quick)."""
    config = copy.deepcopy(config)
    config.network.channels = 8
    config.network.num_blocks = 1
    config.network.value_hidden = 8
    config.search.num_simulations = 4
    config.selfplay.batch_size = 8
    config.selfplay.num_steps = 2
    config.learner.batch_size = 32
    return config


MAX_BATCH = 1 << 20  # games at once: past what a device holds of any game's states


def parse_batch_sizes(text: str, *, quick: bool) -> list[int]:
    """Reads "1,64,1024"; --quick keeps the sizes up to QUICK_MAX_BATCH (at least one)."""
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UserError(f"--batch-sizes must be comma-separated integers, got {text!r}") from None
    if not sizes or min(sizes) <= 0:
        raise UserError(f"--batch-sizes must be positive integers, got {text!r}")
    if max(sizes) > MAX_BATCH:
        raise UserError(f"--batch-sizes must be at most {MAX_BATCH:,} games, got {max(sizes):,}")
    if quick:
        sizes = [size for size in sizes if size <= QUICK_MAX_BATCH] or [min(sizes)]
    return sizes


def format_rate(rate: float) -> str:
    """A rate with thousands separators (three significant digits below 100)."""
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:.3g}"


def format_table(rows: list[Row]) -> str:
    """The rows as a markdown table (rates per second)."""
    lines = [
        "| measurement | batch | azjax /s | pgx /s | azjax / pgx |",
        "|:--|--:|--:|--:|--:|",
    ]
    for row in rows:
        if row.pgx_rate is None:
            pgx, ratio = row.pgx_note, ""
        else:
            pgx, ratio = format_rate(row.pgx_rate), f"{row.ratio:.2f}"
        lines.append(
            f"| {row.name} | {row.batch_size} | {format_rate(row.rate)} | {pgx} | {ratio} |"
        )
    return "\n".join(lines)


def header(game_name: str, source: str, *, quick: bool) -> str:
    """One line naming the game, config, device and jax version."""
    device = jax.devices()[0]
    mode = ", quick" if quick else ""
    return (
        f"azjax bench: {game_name} ({source}{mode}); device {device} ({device.device_kind}), "
        f"{jax.device_count()} device(s), {os.cpu_count()} CPU cores; jax {jax.__version__}"
    )


def run(args) -> tuple[list[Row], str]:
    """Runs the bench for parsed `azjax bench` arguments; returns the rows and the text."""
    game = args.game or "connect_four"
    config, source = load_bench_config(game, args.config)
    settings = FULL
    if args.quick:
        config, settings = shrink(config), QUICK
    batch_sizes = parse_batch_sizes(args.batch_sizes, quick=args.quick)

    def log(message: str) -> None:
        print(f"  measuring {message}", file=sys.stderr, flush=True)

    start = time.perf_counter()
    rows = benchmark(
        config, batch_sizes=batch_sizes, settings=settings, env_only=args.env_only, log=log
    )
    footer = (
        f"Best of up to {settings.max_repeats} timed repetition(s) after a compiling warm-up; "
        f"{settings.num_plies} plies per random-play call, observations included for both. "
        f"Bench took {time.perf_counter() - start:.0f} s."
    )
    if not settings.optimize:
        footer += " Quick: compiled without XLA backend optimisation; rates are not meaningful."
    text = "\n".join([header(game, source, quick=args.quick), "", format_table(rows), "", footer])
    return rows, text


def main(args) -> int:
    """`azjax bench`: prints the throughput table; returns the exit status."""
    _, text = run(args)
    print(text)
    return 0
