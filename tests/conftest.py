"""Shared fixtures: tiny configs so that every compiled function stays small."""

import json
import logging
import os
import shutil
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(REPO, "tests")  # conftest.py and the helpers beside it

# JAX's persistent compilation cache, shared by the test processes (pytest-xdist's workers
# and the `azjax` child processes they start, which inherit the environment): many tests
# compile the same tiny programs, and a program compiled once is read back in milliseconds.
# Set before jax is imported (it reads these at import); a cache entry is keyed by the
# program, jax's version and its flags, so a stale entry is never used.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(REPO, ".pytest_cache", "jax"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")
# XLA's CPU backend without its LLVM optimisation passes: tests check what programs compute,
# not how fast, and most of their time is compilation (docs/testing.md).
TEST_XLA_FLAGS = "--xla_backend_optimization_level=0"
os.environ.setdefault("XLA_FLAGS", TEST_XLA_FLAGS)
# Python's bytecode cache on, for this process and the child processes it starts: where the
# environment sets PYTHONDONTWRITEBYTECODE, every `azjax` child, worker and notebook kernel
# compiled jax, flax, orbax and azjax from source again (docs/testing.md).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

import jax  # noqa: E402  (after the settings above)

from azjax import compile_cache  # noqa: E402
from azjax.apps import console  # noqa: E402
from azjax.config import base_config  # noqa: E402
from azjax.games.conformance_rules import compiled  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """After each test module, a worker holding half the memory mappings Linux allows a
    process drops its compiled programs (`compile_cache.release`): a worker compiles
    thousands of programs in a run of the suite, and past 65,530 mappings the persistent
    cache's write of the next one crashed it (CI, twice)."""
    yield
    compile_cache.release(above=compile_cache.RELEASE_ABOVE)


def optimized_jit(fun, **kwargs):
    """`jax.jit` with XLA's optimisation passes back on (`TEST_XLA_FLAGS` turns them off),
    for the few tests whose time goes to running a program rather than compiling it: random
    play against the reference implementations (thousands of batched steps) and the shipped
    Xiangqi agent's 400-ply games, which run faster optimised (docs/testing.md)."""
    return jax.jit(fun, compiler_options={"xla_backend_optimization_level": 3}, **kwargs)


def jit_for(game):
    """`azjax.games.conformance`'s choice: `optimized_jit` for games of 400 plies and more (Go
    19x19, Xiangqi), whose long programs take longer to run unoptimised than to compile
    optimised; `jax.jit` for the others."""
    return compiled(game)


def tiny_config(game: str = "tic_tac_toe"):
    """A config small enough to compile and run an iteration in seconds on a laptop CPU."""
    config = base_config()
    config.name = f"tiny_{game}"
    config.game = game
    config.network.channels = 8
    config.network.num_blocks = 1
    config.network.value_hidden = 8
    config.search.num_simulations = 4
    config.selfplay.batch_size = 8
    config.selfplay.num_steps = 4
    config.selfplay.temperature_moves = 2
    config.replay.capacity = 512
    config.replay.min_size = 16
    config.learner.batch_size = 16
    config.learner.updates_per_iteration = 2
    config.train.num_iterations = 4
    config.train.checkpoint_every = 2
    config.eval.every = 0
    config.eval.num_games = 4
    config.eval.num_simulations = 4
    config.eval.opponents = ("random",)
    return config


def uniform_choice(states, key):
    """A uniformly random legal move, the legal moves as its policy, value 0 (any game)."""
    import jax  # noqa: PLC0415
    import jax.numpy as jnp  # noqa: PLC0415

    from azjax.types import SearchOutput  # noqa: PLC0415

    logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
    action = jax.random.categorical(key, logits).astype(jnp.int32)
    weights = states.legal_action_mask / states.legal_action_mask.sum(-1, keepdims=True)
    return SearchOutput(action=action, action_weights=weights, value=jnp.zeros(action.shape))


def scripted_search(game, choose=uniform_choice):
    """A stand-in `Search` of `game` (no network, no tree reuse, 1 simulation) whose call
    returns `choose(states [B], key) -> SearchOutput` (default: `uniform_choice`)."""
    from azjax.core.search import Search, make_search, rollout_evaluator  # noqa: PLC0415

    class ScriptedSearch(Search):
        def __call__(self, variables, states, key, params=None, tree=None):
            del variables, params, tree
            return choose(states, key)

    search = make_search(game, rollout_evaluator(game), num_simulations=1)  # never called
    return ScriptedSearch(**vars(search))


def small_network_search(game, **search):
    """A jitted search guided by a small untrained network of `game` (8 channels, 1 block),
    and the network's variables; `search` goes to `make_search`."""
    import jax  # noqa: PLC0415

    from azjax.core.networks import make_network  # noqa: PLC0415
    from azjax.core.search import make_search, network_evaluator  # noqa: PLC0415

    network = make_network(
        game.observation_shape, game.num_actions, channels=8, num_blocks=1, value_hidden=8
    )
    variables = network.init(jax.random.PRNGKey(1))
    return jax.jit(make_search(game, network_evaluator(game, network), **search)), variables


def tiny_experiment(folder, *, num_iterations: int, checkpoint_every: int):
    """An experiment file in `folder` whose get_config() is `tiny_config()` with these train
    keys, for running `azjax train --config FILE` in a child process."""
    import textwrap  # noqa: PLC0415

    experiment = Path(folder) / "tiny.py"
    experiment.write_text(
        textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {TESTS!r})
        from conftest import tiny_config

        def get_config():
            config = tiny_config()
            config.train.num_iterations = {num_iterations}
            config.train.checkpoint_every = {checkpoint_every}
            return config
        """)
    )
    return experiment


def assert_same_variables(a, b) -> None:
    """Two network `Variables` are bit-identical (a resumed run equals a straight one)."""
    import jax  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415

    jax.tree.map(lambda x, y: np.testing.assert_array_equal(np.asarray(x), np.asarray(y)), a, b)


def marked(names, *, slow=(), deep=()) -> list:
    """`names` as pytest params, those in `slow` marked slow and those in `deep` deep: a
    parametrized test whose heavy cases leave the default suite (docs/testing.md)."""
    marks = {**{n: [pytest.mark.slow] for n in slow}, **{n: [pytest.mark.deep] for n in deep}}
    return [pytest.param(name, marks=marks.get(name, [])) for name in names]


@pytest.fixture
def tiny():
    return tiny_config()


def subprocess_env(**extra) -> dict:
    """Environment for running azjax in a child process from the repository checkout.
    Python's fault handler is on: a child sent SIGABRT (a hung one, `test_multihost.finish`)
    prints every thread's stack before it dies. `XLA_FLAGS` given here joins the tests' own
    (`TEST_XLA_FLAGS`)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("PYTHONFAULTHANDLER", "1")
    if "XLA_FLAGS" in extra:
        extra["XLA_FLAGS"] = with_test_xla_flags(extra["XLA_FLAGS"])
    env.update(extra)
    return env


def with_test_xla_flags(flags: str) -> str:
    """`flags` added to this process's `XLA_FLAGS` (the tests' own), not instead of them:
    for a child process's environment."""
    return f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip()


PYTHON = sys.executable


def slurm_environment(num_tasks: int) -> dict:
    """The variables of a SLURM job step of `num_tasks` tasks on this host, as JAX's cluster
    detection (`--distributed auto`) reads them; each task adds its `SLURM_PROCID`. SLURM
    puts the coordinator on port 61440 + job id % 4096: the job id picks a free one."""
    import numpy as np  # noqa: PLC0415

    for port in np.random.default_rng().permutation(np.arange(61440, 65536)):
        with socket.socket() as probe:
            try:
                probe.bind(("localhost", int(port)))
            except OSError:
                continue
        break
    return {
        "SLURM_JOB_ID": str(int(port) - 61440),
        "SLURM_STEP_NODELIST": "localhost",
        "SLURM_NTASKS": str(num_tasks),
        "SLURM_LOCALID": "0",
    }


def require_program(name: str, *, install: str, paths: Sequence[str] = ()) -> str:
    """The path of an external program that a test needs (on PATH or in one of `paths`).

    A missing program skips the test with a one-line reason saying how to install it, or
    fails it where the environment sets AZJAX_REQUIRE_EXTERNAL=1 (CI, which installs it).

    Args:
      name: the program's file name, e.g. "gnugo".
      install: how to install it, e.g. "apt-get install gnugo".
      paths: directories to look in besides PATH, e.g. ("/usr/games",).
    """
    found = shutil.which(name) or (paths and shutil.which(name, path=os.pathsep.join(paths)))
    if found:
        return found
    reason = f"{name} is not installed (install it with: {install})"
    if os.environ.get("AZJAX_REQUIRE_EXTERNAL") == "1":
        pytest.fail(f"{reason}; AZJAX_REQUIRE_EXTERNAL=1 requires it", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def azjax_records():
    """The records azjax logs during a test (the `azjax` command's handler, `console.show`,
    keeps them from the root logger, where `caplog` listens)."""
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("azjax")
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


def run_cli(capsys, *argv):
    """`azjax ARGV` in-process: (exit status, stdout, stderr)."""
    from azjax.apps import cli  # noqa: PLC0415

    status = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_user_error(capsys, argv, *fragments):
    """`azjax ARGV` exits with status 2 and one `azjax: error:` line holding `fragments`."""
    status, _, err = run_cli(capsys, *argv)
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("azjax: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def untrained_run(workdir, config):
    """A run directory holding `config` and freshly initialised network variables at
    iteration 0 (enough for anything that loads an agent: evaluate, selfplay, gtp)."""
    import jax  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415

    from azjax import config as config_lib  # noqa: PLC0415
    from azjax.config import build  # noqa: PLC0415
    from azjax.runs import checkpoint
    from azjax.runs import directory as runs

    settings = build.make_settings(config, pipeline=False)
    runs.prepare_workdir(settings, workdir, allow_config_change=False)
    network = build.make_network_for(config, build.make_game(config))
    checkpointer = checkpoint.Checkpointer(workdir)
    checkpointer.save(
        0,
        network.init(jax.random.PRNGKey(config.seed)),
        {"iteration": np.int32(0)},
        config=json.loads(config_lib.to_json(config)),
        metrics=[],
    )
    checkpointer.close()
    return workdir


@pytest.fixture(scope="session")
def go_run(tmp_path_factory):
    """An untrained tiny go_9x9 run (search with 4 simulations)."""
    return untrained_run(tmp_path_factory.mktemp("go_run"), tiny_config("go_9x9"))


@pytest.fixture(scope="session")
def xiangqi_run(tmp_path_factory):
    """An untrained tiny xiangqi run (search with 4 simulations) whose games end within 160
    plies, so that complete games against other engines stay short."""
    config = tiny_config("xiangqi")
    config.game_kwargs.max_episode_length = 160
    return untrained_run(tmp_path_factory.mktemp("xiangqi_run"), config)


@pytest.fixture(scope="module")
def web_runs(tmp_path_factory):
    """`web_runs(game)`: an untrained run of `game`, made once per module."""
    from web import make_run  # noqa: PLC0415

    made = {}

    def run_of(game):
        if game not in made:
            made[game] = make_run(tmp_path_factory, game)
        return made[game]

    return run_of


@pytest.fixture(scope="module")
def served(web_runs):
    """`served(game, opponent=False)`: the URL of a web board for an untrained run of
    `game` (with `opponent`, two agents that play each other), started once per module."""
    from azjax.apps import serve  # noqa: PLC0415

    running = {}

    def start(game, opponent=False):
        if (game, opponent) not in running:
            opponent_workdir = web_runs(game) if opponent else None
            server = serve.make_server(web_runs(game), opponent_workdir=opponent_workdir)
            running[game, opponent] = serve.Background(server)
        return running[game, opponent].url

    yield start
    for background in running.values():
        background.stop()


# Notebooks that train: until a learning check passes (they assert it), a sweep's trials, or
# the network the search notebook looks into (100 iterations, then 8 searches compiled).
_LEARNING_NOTEBOOKS = ("02_train_tic_tac_toe.ipynb", "03_search.ipynb", "05_sweep.ipynb")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config, items):
    """Marks nbmake's notebook items `notebook`, and the learning ones `slow` as well."""
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebook)
            if item.path.name in _LEARNING_NOTEBOOKS:
                item.add_marker(pytest.mark.slow)


class _SlowFirst:
    @pytest.hookimpl(trylast=True)  # after `-m` has deselected: the order of what will run
    def pytest_collection_modifyitems(self, config, items):
        workers = getattr(config, "workerinput", {}).get("workercount", 1)
        items[:] = slow_first(items, workers)


def pytest_configure(config):
    config.pluginmanager.register(_SlowFirst(), "azjax-slow-first")
    console.show()  # the library's messages printed as the `azjax` command prints them


def slow_first(items: list, workers: int) -> list:
    """The collection reordered so that each of `workers` contiguous shares starts with its
    part of the slow tests, the rest after them in collection order.

    `--dist worksteal` hands each worker a contiguous share of the collection and later
    moves the *tail* of the longest queue to a worker that ran dry: with the minute-long
    tests at the heads, the run ends on short tests on both workers rather than one worker
    starting the scaling page in the last minutes while the other idles. A module's slow
    tests stay together, so that its module fixtures (a memory plan's compiles, the quick
    bench, a population) are made by one worker and not by each worker dealt one of its
    tests: the modules go largest first to the share with the fewest slow tests so far.
    Every worker collects the same items in the same order, so they agree on the result."""
    slow = [item for item in items if item.get_closest_marker("slow")]
    if workers < 2 or not slow or len(slow) == len(items):
        return items
    rest = [item for item in items if not item.get_closest_marker("slow")]
    modules: dict = {}
    for item in slow:
        modules.setdefault(item.path, []).append(item)
    heads: list[list] = [[] for _ in range(workers)]
    for module in sorted(modules.values(), key=len, reverse=True):  # stable: ties as collected
        min(heads, key=len).extend(module)
    shares, start = [], 0
    for k in range(workers):  # the scheduler's split: an equal part of what is left
        size = (len(items) - sum(map(len, shares))) // (workers - k)
        take = max(0, size - len(heads[k]))  # more slow tests than a share holds: none of the rest
        shares.append(heads[k] + rest[start : start + take])
        start += take
    shares[-1] += rest[start:]
    return [item for share in shares for item in share]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Where AZJAX_REQUIRE_EXTERNAL=1 (CI), a skipped test fails: whatever it needs (a
    program, a library such as pgx or OpenSpiel, root for a tmpfs) must be there."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("AZJAX_REQUIRE_EXTERNAL") == "1":
        if not hasattr(report, "wasxfail"):
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
            report.outcome = "failed"
            report.longrepr = f"skipped where AZJAX_REQUIRE_EXTERNAL=1 requires it: {reason}"
