"""The host loop: self-play, learn, evaluate, log, checkpoint, resume.

An iteration is two jitted pure functions built by `make_trainer(config)`: `play` (self-play
and replay) and `learn` (a chunk of learner updates, called until the iteration's updates
are done); the loop only times, logs, evaluates and saves.
"""

import json
import math
import signal
import threading
import time
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from flax import struct
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from azjax import config as config_lib
from azjax import replay
from azjax.agent import make_evaluation, make_game_and_network
from azjax.checkpoint import Checkpointer
from azjax.games import Game
from azjax.learner import TrainState, learner_from_config
from azjax.metrics import MetricsWriter, print_progress
from azjax.networks import Network
from azjax.replay import ReplayBuffer
from azjax.search import network_evaluator, search_from_config
from azjax.selfplay import SelfPlayState, selfplay_from_config
from azjax.types import Array, UserError


@struct.dataclass
class TrainerState:
    """The whole state of a run; checkpointing it and restoring it resumes exactly."""

    train_state: TrainState
    buffer: ReplayBuffer
    selfplay: SelfPlayState
    key: Array  # [2] uint32
    iteration: Array  # [] int32 completed iterations
    num_games: Array  # [] int32 self-play games finished
    num_positions: Array  # [] int32 self-play positions played
    elapsed: Array  # [] float32 wall-clock seconds spent in this run so far


class Trainer(NamedTuple):
    """Pure pieces of a run built from a config."""

    game: Game
    network: Network
    init: callable  # init(key) -> TrainerState
    play: callable  # play(state) -> (state, self-play metrics, learner keys [calls, chunk, 2])
    learn: callable  # learn(state, keys [chunk, 2]) -> (state, learner metrics)
    mesh: Mesh
    shardings: TrainerState  # NamedSharding per leaf


def make_mesh(num_devices: int | None = None) -> Mesh:
    """A 1-D mesh with axis `data` over the first `num_devices` (default: all) devices."""
    devices = jax.devices()
    if num_devices is not None:
        devices = devices[:num_devices]
    return Mesh(np.asarray(devices), ("data",))


def make_trainer(config: ml_collections.ConfigDict, *, mesh: Mesh | None = None) -> Trainer:
    """Builds the pure init and iterate functions of the run described by `config`."""
    mesh = make_mesh() if mesh is None else mesh
    num_devices = mesh.devices.size
    for key in ("selfplay.batch_size", "learner.batch_size"):
        group, field = key.split(".")
        if config[group][field] % num_devices:
            raise UserError(
                f"{key}={config[group][field]} must be divisible by {num_devices} devices"
            )
    game, network = make_game_and_network(config)
    search = search_from_config(game, network_evaluator(game, network), config.search, explore=True)
    selfplay = selfplay_from_config(game, search, config)
    lc = config.learner
    learner, schedule = learner_from_config(network, lc)
    candidates = config.selfplay.batch_size * (game.max_episode_length + config.selfplay.num_steps)
    if config.replay.capacity < candidates:
        raise UserError(
            f"replay.capacity={config.replay.capacity} must hold one iteration's positions "
            f"(selfplay.batch_size * (max game length + selfplay.num_steps) = {candidates})"
        )
    batch_sharding = NamedSharding(mesh, PartitionSpec("data"))

    def init(key: Array) -> TrainerState:
        key, network_key, selfplay_key = jax.random.split(key, 3)
        variables = network.init(network_key)
        obs = game.observe(game.init(key))
        return TrainerState(
            train_state=learner.init(variables),
            buffer=replay.init(config.replay.capacity, obs.shape, game.num_actions, obs.dtype),
            selfplay=selfplay.init(selfplay_key),
            key=key,
            iteration=jnp.zeros((), jnp.int32),
            num_games=jnp.zeros((), jnp.int32),
            num_positions=jnp.zeros((), jnp.int32),
            elapsed=jnp.zeros((), jnp.float32),
        )

    def sample_batch(buffer: ReplayBuffer, key: Array) -> replay.Batch:
        sample_key, symmetry_key = jax.random.split(key)
        batch = replay.sample(buffer, sample_key, lc.batch_size)
        if config.replay.augment and game.symmetries > 1:
            index = jax.random.randint(symmetry_key, (lc.batch_size,), 0, game.symmetries)
            obs, policy = jax.vmap(game.apply_symmetry)(batch.obs, batch.policy, index)
            batch = batch.replace(obs=obs, policy=policy)
        return jax.lax.with_sharding_constraint(batch, batch_sharding)

    # XLA:CPU runs convolution gradients ~20x slower inside a loop body (lax.scan or
    # fori_loop; measured 690 vs 31 ms per Connect Four update), and unrolling many updates
    # compiles slowly. So `learn` unrolls a chunk of at most 8 updates and the host calls it
    # updates_per_iteration / chunk times.
    chunk = max(
        c
        for c in range(1, min(lc.updates_per_iteration, 8) + 1)
        if lc.updates_per_iteration % c == 0
    )

    def play(state: TrainerState) -> tuple[TrainerState, dict, Array]:
        """Self-play one iteration and store its labelled positions.

        Returns the new state, self-play metrics and the learner keys [U/chunk, chunk, 2].
        """
        key, selfplay_key, learn_key = jax.random.split(state.key, 3)
        selfplay_state, played = selfplay.run(
            state.train_state.variables, state.selfplay, selfplay_key
        )
        buffer = replay.add(state.buffer, played.batch, played.valid)
        games = jnp.maximum(played.num_games, 1)
        metrics = dict(
            games=played.num_games,
            average_game_length=played.total_game_length / games,
            first_player_win_rate=played.first_player_wins / games,
            second_player_win_rate=played.second_player_wins / games,
            positions_added=jnp.sum(played.valid),
            root_value=played.root_value,
            buffer_size=buffer.size,
        )
        positions = config.selfplay.batch_size * config.selfplay.num_steps
        next_state = state.replace(
            buffer=buffer,
            selfplay=selfplay_state,
            key=key,
            iteration=state.iteration + 1,
            num_games=state.num_games + played.num_games,
            num_positions=state.num_positions + positions,
        )
        learn_keys = jax.random.split(learn_key, lc.updates_per_iteration)
        return next_state, metrics, learn_keys.reshape(-1, chunk, *learn_keys.shape[1:])

    def learn(state: TrainerState, keys: Array) -> tuple[TrainerState, dict]:
        """`chunk` learner updates on minibatches from the buffer (none before min_size)."""
        ready = state.buffer.size >= config.replay.min_size
        train_state, all_metrics = state.train_state, []
        for index in range(chunk):
            new_state, metrics = learner.update(
                train_state, sample_batch(state.buffer, keys[index])
            )
            train_state = jax.tree.map(lambda n, o: jnp.where(ready, n, o), new_state, train_state)
            all_metrics.append(metrics)
        metrics = jax.tree.map(lambda *values: jnp.mean(jnp.stack(values)), *all_metrics)
        metrics.update(learning_rate=schedule(train_state.step), updates=train_state.step)
        return state.replace(train_state=train_state), metrics

    abstract = jax.eval_shape(init, jax.random.PRNGKey(0))
    replicated = NamedSharding(mesh, PartitionSpec())
    shardings = abstract.replace(
        **{
            f: jax.tree.map(lambda _: replicated, getattr(abstract, f))
            for f in (
                "train_state",
                "buffer",
                "key",
                "iteration",
                "num_games",
                "num_positions",
                "elapsed",
            )
        },
        selfplay=jax.tree.map(lambda _: batch_sharding, abstract.selfplay),
    )
    return Trainer(game, network, init, play, learn, mesh, shardings)


def prepare_workdir(config, workdir: Path, *, allow_config_change: bool) -> None:
    """Saves the resolved config, or checks it against the one already saved there.

    Raises:
      UserError: the saved config differs in keys that change what the run computes, and
        `allow_config_change` is False.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "config.json"
    given = json.loads(config_lib.to_json(config))
    if path.exists():
        try:
            saved = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise UserError(f"{path} is corrupt: {error}") from None
        differences = config_lib.config_differences(saved, given)
        if differences and not allow_config_change:
            raise UserError(
                f"{workdir} holds a run with a different config ("
                + "; ".join(differences)
                + "); use another --workdir, or pass --allow-config-change to resume anyway"
            )
    path.write_text(config_lib.to_json(config))


_COMPILED: dict = {}
_BOOKKEEPING = (
    "train.num_iterations",
    "train.max_minutes",
    "train.checkpoint_every",
    "train.keep_checkpoints",
)


def compiled_functions(config: ml_collections.ConfigDict, mesh: Mesh | None):
    """(trainer, jitted init, iterate, evaluate) for a config, built once per process.

    `iterate(state) -> (state, metrics)` calls the jitted `play` once and the jitted `learn`
    once per chunk of updates; `evaluate` is None when evaluation is off.

    Runs in one process (tests, notebooks, sweeps) that differ only in bookkeeping keys
    share compiled functions instead of compiling again.
    """
    mesh = make_mesh() if mesh is None else mesh
    flat = config_lib.flatten(json.loads(config_lib.to_json(config)))
    devices = tuple(device.id for device in mesh.devices.flat)
    train_key = json.dumps(
        {k: v for k, v in flat.items() if k not in _BOOKKEEPING and not k.startswith("eval.")},
        sort_keys=True,
    )
    if (train_key, devices) not in _COMPILED:
        trainer = make_trainer(config, mesh=mesh)
        init = jax.jit(trainer.init, out_shardings=trainer.shardings)
        play = jax.jit(
            trainer.play,
            in_shardings=(trainer.shardings,),
            out_shardings=(trainer.shardings, None, None),
        )
        learn = jax.jit(
            trainer.learn,
            in_shardings=(trainer.shardings, None),
            out_shardings=(trainer.shardings, None),
        )

        def iterate(state: TrainerState) -> tuple[TrainerState, dict]:
            """One iteration: self-play, then the learner updates, chunk by chunk."""
            state, metrics, learn_keys = play(state)
            learn_metrics = []
            for keys in learn_keys:
                state, chunk_metrics = learn(state, keys)
                learn_metrics.append(chunk_metrics)
            metrics.update(jax.tree.map(lambda *v: jnp.mean(jnp.stack(v)), *learn_metrics))
            metrics.update(
                learning_rate=learn_metrics[-1]["learning_rate"],
                updates=learn_metrics[-1]["updates"],
            )
            return state, metrics

        _COMPILED[train_key, devices] = (trainer, init, iterate)
    trainer, init, iterate = _COMPILED[train_key, devices]
    eval_key = json.dumps({k: v for k, v in flat.items() if k not in _BOOKKEEPING}, sort_keys=True)
    if config.eval.every <= 0:
        return trainer, init, iterate, None
    if eval_key not in _COMPILED:
        _COMPILED[eval_key] = make_evaluation(trainer.game, trainer.network, config)
    return trainer, init, iterate, _COMPILED[eval_key]


def train(
    config: ml_collections.ConfigDict,
    workdir: str | Path,
    *,
    allow_config_change: bool = False,
    mesh: Mesh | None = None,
    quiet: bool = False,
) -> TrainerState:
    """Runs (or resumes) the experiment `config` in `workdir` until its iteration budget.

    Ctrl-C saves a checkpoint of the last completed iteration before stopping; rerunning
    on the same workdir resumes from there.
    """
    log = (lambda *_: None) if quiet else print
    workdir = Path(workdir)
    prepare_workdir(config, workdir, allow_config_change=allow_config_change)
    trainer, init, iterate, evaluate = compiled_functions(config, mesh)
    state = init(jax.random.PRNGKey(config.seed))
    checkpointer = Checkpointer(workdir, max_to_keep=config.train.keep_checkpoints)
    latest = checkpointer.latest_step()
    if latest is not None:
        variables, rest = checkpointer.restore(latest, *split_state(state))
        state = jax.device_put(join_state(variables, rest), trainer.shardings)
        log(f"resuming {workdir} from iteration {latest}")
    start_iteration = int(state.iteration)
    writer = MetricsWriter(workdir, resume_iteration=start_iteration, tensorboard=not quiet)
    log(
        f"training {config.game} in {workdir} on {trainer.mesh.devices.size} "
        f"{jax.devices()[0].platform} device(s); first iteration compiles"
    )
    # Wall-clock time of the run: everything since this session's loop began (compiling,
    # self-play, learning, evaluation, checkpoints) plus the sessions before a resume.
    session_start, resumed_elapsed = time.perf_counter(), float(state.elapsed)

    def clock() -> float:
        return resumed_elapsed + time.perf_counter() - session_start

    def put_elapsed(seconds: float) -> Array:
        # Same sharding as iterate's output, so the next call hits the compilation cache.
        return jax.device_put(jnp.float32(seconds), trainer.shardings.elapsed)

    elapsed = clock()

    restore_signals = _interrupt_on_signals()
    deadline = math.inf if config.train.max_minutes <= 0 else 60.0 * config.train.max_minutes
    saved_iteration = start_iteration
    record = None
    try:
        while int(state.iteration) < config.train.num_iterations and elapsed < deadline:
            started = time.perf_counter()
            next_state, metrics = iterate(state)
            metrics = jax.device_get(metrics)
            seconds = time.perf_counter() - started
            elapsed = clock()
            state = next_state.replace(elapsed=put_elapsed(elapsed))
            iteration = int(state.iteration)
            positions = config.selfplay.batch_size * config.selfplay.num_steps
            record = {"iteration": iteration, **{k: float(v) for k, v in metrics.items()}}
            record.update(
                wall_time=elapsed,
                iteration_seconds=seconds,
                positions_per_second=positions / seconds,
                games_per_second=record["games"] / seconds,
                total_games=int(state.num_games),
                total_positions=int(state.num_positions),
            )
            if evaluate is not None and iteration % config.eval.every == 0:
                eval_started = time.perf_counter()
                record.update(evaluate(state.train_state.variables, iteration))
                eval_seconds = time.perf_counter() - eval_started
                elapsed = clock()
                record.update(wall_time=elapsed, eval_seconds=eval_seconds)
                state = state.replace(elapsed=put_elapsed(elapsed))
            writer.write(record)
            if not quiet:
                print_progress(record)
            record = None
            if iteration % config.train.checkpoint_every == 0:
                checkpointer.save(
                    iteration, *split_state(state.replace(elapsed=put_elapsed(clock())))
                )
                saved_iteration = iteration
            elapsed = clock()
    except KeyboardInterrupt:
        # An interrupt can land between writing the record and clearing it: write it once.
        if record is not None and record["iteration"] > writer.last_iteration:
            writer.write(record)
        if int(state.iteration) != saved_iteration:
            checkpointer.save(int(state.iteration), *split_state(state))
        log(
            f"\ninterrupted: saved iteration {int(state.iteration)} in {workdir}; "
            "run the same command again to resume"
        )
        writer.close()
        checkpointer.close()
        raise
    finally:
        restore_signals()
    if int(state.iteration) != saved_iteration:
        checkpointer.save(int(state.iteration), *split_state(state))
    writer.close()
    checkpointer.close()
    log(
        f"done: {int(state.iteration)} iterations, {int(state.num_games)} games, "
        f"{elapsed / 60:.1f} min; checkpoints in {workdir / 'checkpoints'}"
    )
    return state


def _interrupt_on_signals():
    """Turns SIGTERM (a scheduler's stop, `kill`) and SIGINT into KeyboardInterrupt, so the
    loop saves before it stops. SIGINT is reinstalled because a shell starts background jobs
    with it ignored. Returns a function restoring the previous handlers."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGINT)}

    def restore():
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore


def split_state(state: TrainerState):
    """(network variables, everything else) as saved in the two checkpoint items."""
    rest = {
        "opt_state": state.train_state.opt_state,
        "step": state.train_state.step,
        "buffer": state.buffer,
        "selfplay": state.selfplay,
        "key": state.key,
        "iteration": state.iteration,
        "num_games": state.num_games,
        "num_positions": state.num_positions,
        "elapsed": state.elapsed,
    }
    return state.train_state.variables, rest


def join_state(variables, rest: dict) -> TrainerState:
    """Inverse of `split_state`."""
    return TrainerState(
        train_state=TrainState(variables, rest["opt_state"], rest["step"]),
        buffer=rest["buffer"],
        selfplay=rest["selfplay"],
        key=rest["key"],
        iteration=rest["iteration"],
        num_games=rest["num_games"],
        num_positions=rest["num_positions"],
        elapsed=rest["elapsed"],
    )
