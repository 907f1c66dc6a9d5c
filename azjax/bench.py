"""Throughput of every stage, from a board move to a gradient step: `azjax bench`.

    azjax bench --game connect_four                # full table, a few minutes on a laptop CPU
    azjax bench --game tic_tac_toe --quick         # tiny sizes, a smoke test

Four measurements, each a pure function built by a factory and jitted here, at the top:

1. Environment steps per second: uniformly random legal play, `vmap(game.step)` inside a
   `lax.scan` of plies, finished games restarting in place. Where pgx has the same game it
   is measured the same way in the same run, for the ratio azjax / pgx.
2. Search simulations per second: the config's AlphaZero search (freshly initialised network)
   and the pure-MCTS baseline, from the start position, at the self-play batch size.
3. Self-play positions per second: one `SelfPlay.run` call (batch_size * num_steps plies).
4. Learner samples per second: `Learner.update` steps on a random batch, in a `lax.scan` and
   unrolled (as the train loop runs them, in chunks).

Every function is compiled by a warm-up call; the table reports the best of a few timed
repetitions, each repeating the call until at least `min_seconds` have passed.
"""

import copy
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import ml_collections

from azjax import config as config_lib
from azjax.agent import make_game_and_network
from azjax.games import Game
from azjax.learner import Learner, TrainState, learner_from_config
from azjax.networks import Network, Variables
from azjax.replay import Batch
from azjax.search import make_mcts_baseline, network_evaluator, search_from_config
from azjax.selfplay import selfplay_from_config
from azjax.types import Array, PRNGKey, UserError

# azjax game name -> pgx environment id, for games both implement with the same rules.
PGX_NAMES = {
    "connect_four": "connect_four",
    "tic_tac_toe": "tic_tac_toe",
    "othello": "othello",
    "go_9x9": "go_9x9",
    "go_19x19": "go_19x19",
}
PGX_MISSING = "pgx not installed"
NO_PGX_GAME = "no pgx game"


class Settings(NamedTuple):
    """How much work each measurement does (static Python numbers)."""

    num_plies: int  # random-play plies per timed call
    min_seconds: float  # each timed repetition repeats the call at least this long
    max_repeats: int  # timed repetitions; the best one is reported
    budget_seconds: float  # stop repeating once this much time was spent timing
    num_updates: int  # learner updates per timed call
    optimize: bool  # False: XLA backend optimisation off, for compile speed (rates not meaningful)


FULL = Settings(
    num_plies=256, min_seconds=0.2, max_repeats=5, budget_seconds=2.0, num_updates=4, optimize=True
)
QUICK = Settings(
    num_plies=16, min_seconds=0.0, max_repeats=1, budget_seconds=0.0, num_updates=2, optimize=False
)
QUICK_MAX_BATCH = 64  # --quick keeps the batch sizes up to this one


class Row(NamedTuple):
    """One line of the table: a rate for azjax and, for environment steps, for pgx."""

    name: str  # what is counted, e.g. "env steps (random play)"
    batch_size: int
    rate: float  # items per second, azjax
    pgx_rate: float | None = None  # items per second, pgx; None where not measured
    pgx_note: str = ""  # why an env row has no `pgx_rate`: PGX_MISSING or NO_PGX_GAME

    @property
    def ratio(self) -> float | None:
        """azjax / pgx, where pgx was measured."""
        return None if self.pgx_rate is None else self.rate / self.pgx_rate


class Environment(NamedTuple):
    """The pure functions random play needs, for azjax games and pgx environments alike."""

    init: Callable[[PRNGKey], Any]  # key -> state
    step: Callable[[Any, Array], Any]  # (state, action []) -> state
    done: Callable[[Any], Array]  # state -> [] bool, True once the game has ended
    observe: Callable[[Any], Array]  # state -> observation of the player to move


class Setup(NamedTuple):
    """What the search, self-play and learner measurements share."""

    config: ml_collections.ConfigDict
    game: Game
    network: Network
    variables: Variables  # freshly initialised network variables


def azjax_environment(game: Game) -> Environment:
    """Wraps an azjax game as an `Environment`."""
    return Environment(
        init=game.init, step=game.step, done=lambda state: state.terminated, observe=game.observe
    )


def pgx_environment(game_name: str) -> Environment | str:
    """The pgx environment with the same rules as `game_name`, or the reason there is none."""
    if game_name not in PGX_NAMES:
        return NO_PGX_GAME
    try:
        import pgx  # noqa: PLC0415  (a test dependency, optional here)
    except ImportError:
        return PGX_MISSING
    env = pgx.make(PGX_NAMES[game_name])
    return Environment(
        init=env.init,
        step=lambda state, action: env.step(state, action),
        done=lambda state: state.terminated | state.truncated,
        observe=lambda state: state.observation,  # pgx computes it inside step
    )


def uniform_legal_action(key: PRNGKey, legal_action_mask: Array) -> Array:
    """A uniformly random legal action per row of `legal_action_mask` [B, A] (0 where none is
    legal): one uniform number per game picks the k-th legal action, far cheaper than a
    categorical draw over all A logits when A is large (Xiangqi's 2086)."""
    count = jnp.sum(legal_action_mask, axis=-1)  # [B]
    k = jnp.floor(jax.random.uniform(key, count.shape) * count).astype(jnp.int32)
    return jnp.argmax(jnp.cumsum(legal_action_mask, axis=-1) > k[:, None], axis=-1).astype(
        jnp.int32
    )


def make_random_play(env: Environment, *, batch_size: int, num_plies: int):
    """Builds `play(states [B], key) -> (states [B], num_steps [])`: uniformly random play.

    Each ply samples a uniform legal action per game, steps all B games with `vmap(env.step)`,
    computes the observations (summed into a checksum so the compiler cannot drop them:
    pgx's step computes them anyway), and restarts the games that ended. `num_steps` counts
    the steps taken in unfinished games.

    Args:
      env: the environment.
      batch_size: B, games played in lockstep.
      num_plies: T, plies per call.
    """

    def play(states, key: PRNGKey):
        reset_key, key = jax.random.split(key)
        fresh = jax.vmap(env.init)(jax.random.split(reset_key, batch_size))

        def ply(carry, action_key):
            states, num_steps = carry
            action = uniform_legal_action(action_key, states.legal_action_mask)  # [B]
            live = ~jax.vmap(env.done)(states)  # [B] bool
            states = jax.vmap(env.step)(states, action)
            ended = jax.vmap(env.done)(states)
            checksum = jnp.sum(jax.vmap(env.observe)(states).astype(jnp.float32))
            states = jax.tree.map(
                lambda new, old: jnp.where(ended.reshape((-1,) + (1,) * (old.ndim - 1)), new, old),
                fresh,
                states,
            )
            num_steps = num_steps + jnp.sum(live.astype(jnp.int32))
            return (states, num_steps), checksum

        (states, num_steps), checksums = jax.lax.scan(
            ply, (states, jnp.zeros((), jnp.int32)), jax.random.split(key, num_plies)
        )
        return states, num_steps + (jnp.sum(checksums) < -1.0).astype(jnp.int32)

    return play


def make_update_steps(learner: Learner, *, num_updates: int, unroll: bool = False):
    """Builds `steps(train_state, batch) -> (train_state, loss [])`: `num_updates` updates.

    The updates run in a `lax.scan` or unrolled (as the train loop does, in chunks): XLA:CPU runs
    convolution gradients inside a loop body many times slower (jax-ml/jax#12868), and the
    table shows both.
    """

    def steps(train_state: TrainState, batch: Batch):
        def update(state, _):
            state, metrics = learner.update(state, batch)
            return state, metrics["loss"]

        train_state, losses = jax.lax.scan(
            update, train_state, None, length=num_updates, unroll=unroll
        )
        return train_state, losses[-1]

    return steps


def random_batch(game: Game, key: PRNGKey, batch_size: int) -> Batch:
    """A learner batch of random observations [B, H, W, C], policies [B, A] and values [B]."""
    obs_key, policy_key, value_key = jax.random.split(key, 3)
    obs_spec = jax.eval_shape(game.observe, game.init(key))
    obs = jax.random.bernoulli(obs_key, 0.3, (batch_size, *obs_spec.shape)).astype(obs_spec.dtype)
    logits = jax.random.normal(policy_key, (batch_size, game.num_actions))
    value = jax.random.uniform(value_key, (batch_size,), minval=-1.0, maxval=1.0)
    return Batch(obs=obs, policy=jax.nn.softmax(logits), value=value)


def jit(fn: Callable, settings: Settings) -> Callable:
    """`jax.jit(fn)`, compiled without backend optimisation when `settings.optimize` is off.

    A smoke test spends most of its time compiling; XLA:CPU compiles about twice as fast
    at backend optimisation level 0.
    """
    options = None if settings.optimize else {"xla_backend_optimization_level": 0}
    return jax.jit(fn, compiler_options=options)


def time_call(fn: Callable, *args, settings: Settings) -> tuple[float, Any]:
    """Times `fn(*args)` after a warm-up call that compiles it.

    Returns:
      The seconds per call, best of up to `settings.max_repeats` repetitions (each repeating
      the call for at least `settings.min_seconds`), and the output of the warm-up call.
    """
    output = jax.block_until_ready(fn(*args))
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    once = time.perf_counter() - start
    calls = max(1, math.ceil(settings.min_seconds / max(once, 1e-9)))
    best, spent = once, once
    for _ in range(settings.max_repeats):
        start = time.perf_counter()
        for _ in range(calls):
            jax.block_until_ready(fn(*args))
        elapsed = time.perf_counter() - start
        best, spent = min(best, elapsed / calls), spent + elapsed
        if spent >= settings.budget_seconds:
            break
    return best, output


def measure_random_play(
    env: Environment, *, batch_size: int, settings: Settings, key: PRNGKey
) -> float:
    """Environment steps per second of uniformly random play at `batch_size`."""
    init_key, play_key = jax.random.split(key)
    play = jit(make_random_play(env, batch_size=batch_size, num_plies=settings.num_plies), settings)
    states = jit(jax.vmap(env.init), settings)(jax.random.split(init_key, batch_size))
    seconds, (_, num_steps) = time_call(play, states, play_key, settings=settings)
    return int(num_steps) / seconds


def measure_legal_masks(game: Game, *, batch_size: int, settings: Settings, key: PRNGKey) -> float:
    """Legal-move masks computed per second, from scratch, by `game.legal_action_mask`.

    The masks are computed for positions of random play (`num_plies` plies of B games,
    collected first), each position once per timed call.
    """
    env = azjax_environment(game)
    init_key, play_key = jax.random.split(key)

    def positions(key: PRNGKey):
        states = jax.vmap(env.init)(jax.random.split(init_key, batch_size))

        def ply(states, action_key):
            action = uniform_legal_action(action_key, states.legal_action_mask)
            states = jax.vmap(env.step)(states, action)
            return states, states

        _, pool = jax.lax.scan(ply, states, jax.random.split(key, settings.num_plies))
        return pool  # [T, B]

    def masks(pool):
        counts = jax.lax.map(lambda states: jnp.sum(jax.vmap(game.legal_action_mask)(states)), pool)
        return jnp.sum(counts)

    pool = jit(positions, settings)(play_key)
    seconds, _ = time_call(jit(masks, settings), pool, settings=settings)
    return settings.num_plies * batch_size / seconds


def measure_env(
    game: Game, *, batch_sizes: list[int], settings: Settings, key: PRNGKey, log: Callable
) -> list[Row]:
    """Rows of environment steps per second, azjax and pgx, one per batch size; for games
    with a `legal_action_mask(state)` method also the masks per second it computes."""
    ours, theirs = azjax_environment(game), pgx_environment(game.name)
    rows = []
    for batch_size in batch_sizes:
        log(f"env steps at batch {batch_size}")
        rate = measure_random_play(ours, batch_size=batch_size, settings=settings, key=key)
        if isinstance(theirs, str):
            rows.append(Row("env steps (random play)", batch_size, rate, pgx_note=theirs))
        else:
            pgx_rate = measure_random_play(
                theirs, batch_size=batch_size, settings=settings, key=key
            )
            rows.append(Row("env steps (random play)", batch_size, rate, pgx_rate))
    if hasattr(game, "legal_action_mask"):
        for batch_size in batch_sizes:
            log(f"legal-move masks at batch {batch_size}")
            rate = measure_legal_masks(game, batch_size=batch_size, settings=settings, key=key)
            note = theirs if isinstance(theirs, str) else "not measured"
            rows.append(Row("legal-move masks", batch_size, rate, pgx_note=note))
    return rows


def measure_search(setup: Setup, *, settings: Settings, key: PRNGKey, log: Callable) -> list[Row]:
    """Search simulations per second: AlphaZero (network) and pure MCTS (random rollouts)."""
    config, game, network, variables = setup
    batch_size = config.selfplay.batch_size
    num_simulations = config.search.num_simulations
    states_key, search_key = jax.random.split(key)
    states = jax.vmap(game.init)(jax.random.split(states_key, batch_size))
    searches = [
        (
            f"search simulations ({config.search.algorithm}, {num_simulations} sims)",
            search_from_config(game, network_evaluator(game, network), config.search, explore=True),
            variables,
        ),
        (
            f"search simulations (pure MCTS, {num_simulations} sims)",
            make_mcts_baseline(game, num_simulations=num_simulations),
            None,
        ),
    ]
    rows = []
    for name, search, params in searches:
        log(name)
        seconds, _ = time_call(jit(search, settings), params, states, search_key, settings=settings)
        rows.append(Row(name, batch_size, batch_size * num_simulations / seconds))
    return rows


def measure_selfplay(setup: Setup, *, settings: Settings, key: PRNGKey, log: Callable) -> Row:
    """Self-play positions per second: one `SelfPlay.run` call of batch_size * num_steps."""
    config, game, network, variables = setup
    search = search_from_config(game, network_evaluator(game, network), config.search, explore=True)
    sc = config.selfplay
    selfplay = selfplay_from_config(game, search, config)
    init_key, run_key = jax.random.split(key)
    state = jit(selfplay.init, settings)(init_key)
    name = f"self-play positions ({sc.num_steps} plies, {config.search.num_simulations} sims)"
    log(name)
    run = jit(selfplay.run, settings)
    seconds, _ = time_call(run, variables, state, run_key, settings=settings)
    return Row(name, sc.batch_size, sc.batch_size * sc.num_steps / seconds)


def measure_learner(setup: Setup, *, settings: Settings, key: PRNGKey, log: Callable) -> list[Row]:
    """Learner samples per second: `num_updates` updates on a random batch, scanned, unrolled."""
    config, game, network, variables = setup
    lc = config.learner
    learner, _ = learner_from_config(network, lc)
    train_state = learner.init(variables)
    batch = random_batch(game, key, lc.batch_size)
    rows = []
    for unroll, how in ((False, "lax.scan of"), (True, "unrolled")):
        name = f"learner samples ({lc.optimizer}, {how} {settings.num_updates} updates)"
        log(name)
        steps = make_update_steps(learner, num_updates=settings.num_updates, unroll=unroll)
        seconds, _ = time_call(jit(steps, settings), train_state, batch, settings=settings)
        rows.append(Row(name, lc.batch_size, lc.batch_size * settings.num_updates / seconds))
    return rows


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
    game, network = make_game_and_network(config)
    rows = measure_env(game, batch_sizes=batch_sizes, settings=settings, key=env_key, log=log)
    if env_only:
        return rows
    setup = Setup(config, game, network, jit(network.init, settings)(network_key))
    rows += measure_search(setup, settings=settings, key=search_key, log=log)
    rows.append(measure_selfplay(setup, settings=settings, key=selfplay_key, log=log))
    rows += measure_learner(setup, settings=settings, key=learner_key, log=log)
    return rows


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


def resolve_config(game_name: str, path: str | None) -> tuple[ml_collections.ConfigDict, str]:
    """The config to size the bench with, and where it came from.

    `path` if given (its game replaced by `game_name`), else experiments/<game_name>.py where
    it exists, else the default experiment with its game replaced.
    """
    source = path
    if path is None:
        for root in (Path.cwd(), config_lib.REPO_ROOT):
            if (root / "experiments" / f"{game_name}.py").is_file():
                path = str(root / "experiments" / f"{game_name}.py")
                source = f"experiments/{game_name}.py"
                break
    config = config_lib.load_config(path)
    source = source or "default experiment"
    if config.game != game_name:
        config.game = game_name
        config.game_kwargs = ml_collections.ConfigDict()
        config_lib.validate(config)
        source += f", game set to {game_name}"
    return config, source


def parse_batch_sizes(text: str, *, quick: bool) -> list[int]:
    """Reads "1,64,1024"; --quick keeps the sizes up to QUICK_MAX_BATCH (at least one)."""
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UserError(f"--batch-sizes must be comma-separated integers, got {text!r}") from None
    if not sizes or min(sizes) <= 0:
        raise UserError(f"--batch-sizes must be positive integers, got {text!r}")
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
    config, source = resolve_config(args.game, args.config)
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
    text = "\n".join(
        [header(args.game, source, quick=args.quick), "", format_table(rows), "", footer]
    )
    return rows, text


def main(args) -> int:
    """`azjax bench`: prints the throughput table; returns the exit status."""
    _, text = run(args)
    print(text)
    return 0
