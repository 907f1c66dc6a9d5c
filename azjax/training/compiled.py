"""A run's compiled step functions: the device mesh, the state's shardings on it, and
`compile_run`, which jits `steps.play_step` and `steps.learn_step` (`Learner`: its parts
apart) once per process and config; `iterate` is one iteration with them (self-play, then
the learner chunk by chunk).
`train` loops over `iterate`; a population (`population`), the benchmarks and the memory
planner (`bench`) call the same functions.
"""

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from azjax import interrupt
from azjax.config.settings import Settings
from azjax.core import replay
from azjax.core.steps import (
    Hyperparams,
    Pipeline,
    TrainerState,
    init_state,
    learn_begin,
    learn_end,
    learn_parts,
    learn_update,
    play_step,
)
from azjax.types import UserError


def make_mesh(num_devices: int | None = None) -> Mesh:
    """A 1-D mesh with axis `data` over the first `num_devices` (default: all) devices.

    In a multi-process run (`distributed`) `jax.devices()` is every device of every process:
    the mesh is global, and `num_devices` must be all of them.

    Raises:
      UserError: `num_devices` is not between 1 and the number of devices.
    """
    devices = jax.devices()
    if num_devices is not None and jax.process_count() > 1 and num_devices != len(devices):
        raise UserError(
            f"--devices {num_devices}: a run of {jax.process_count()} processes uses all "
            f"{len(devices)} devices of all processes"
        )
    if num_devices is not None:
        if not 1 <= num_devices <= len(devices):
            raise UserError(f"--devices must be between 1 and {len(devices)}, got {num_devices}")
        devices = devices[:num_devices]
    return Mesh(np.asarray(devices), ("data",))


def state_shardings(pipeline: Pipeline, mesh: Mesh, init=None) -> TrainerState:
    """Self-play games and the replay's positions split over the `data` axis (each device its
    games and its ring, see `replay`); everything else replicated.

    Args:
      init: `functools.partial(init_state, pipeline)` (the default), the state's shapes
        come from; `compile_run` passes the one it jits, whose trace JAX then reuses.
    """
    init = functools.partial(init_state, pipeline) if init is None else init
    abstract = jax.eval_shape(init, jax.random.PRNGKey(0))
    replicated = NamedSharding(mesh, PartitionSpec())
    batch = NamedSharding(mesh, PartitionSpec("data"))
    shardings = jax.tree.map(lambda _: replicated, abstract)
    buffer = jax.tree.map(
        lambda spec: NamedSharding(mesh, spec),
        replay.specs_of(abstract.buffer),
        is_leaf=lambda x: isinstance(x, PartitionSpec),
    )
    # Per game slot: split; resignation's threshold and counts: replicated.
    selfplay = jax.tree.map(lambda _: batch, abstract.selfplay)
    if abstract.selfplay.resignation is not None:
        selfplay = selfplay.replace(
            resignation=selfplay.resignation.replace(
                threshold=replicated, checked=replicated, false_positives=replicated
            )
        )
    return shardings.replace(selfplay=selfplay, buffer=buffer)


class Learner(NamedTuple):
    """A chunk of learner updates, `learn(state, keys, hyper) -> (state, metrics)`: the parts
    of `steps.learn_step` jitted apart and called in turn (`steps.learn_parts`), the update's
    program once per update. The same computation as one jitted `learn_step`; its program is
    the chunk's updates unrolled, which XLA compiles, and reads back from the compile cache,
    many times slower than a single update's."""

    begin: callable  # begin(state, keys, hyper) -> steps.LearnChunk
    update: callable  # update(train_state, batch, ready, rate, hyper) -> (train_state, metrics)
    end: callable  # end(chunk, train_state, lr_multiplier, metrics) -> (train_state, ...)

    def __call__(self, state: TrainerState, keys, hyper: Hyperparams):
        return learn_parts(self.begin, self.update, self.end, state, keys, hyper)


def make_learner(pipeline: Pipeline, shardings: TrainerState) -> Learner:
    """`Learner` of `pipeline`, its outputs sharded as `shardings` (the state's)."""
    train_state = shardings.train_state
    return Learner(
        begin=jax.jit(
            functools.partial(learn_begin, pipeline), in_shardings=(shardings, None, None)
        ),
        update=jax.jit(
            functools.partial(learn_update, pipeline),
            in_shardings=(train_state, None, None, None, None),
            out_shardings=(train_state, None),
        ),
        end=jax.jit(
            functools.partial(learn_end, pipeline),
            in_shardings=(None, train_state, shardings.lr_multiplier, None),
            out_shardings=(train_state, shardings.lr_multiplier, None),
        ),
    )


class CompiledRun(NamedTuple):
    """A run's jitted functions."""

    pipeline: Pipeline
    mesh: Mesh
    shardings: TrainerState  # NamedSharding per leaf
    init: callable  # init(key) -> TrainerState
    play: callable  # play(state, hyper) -> (state, metrics, learn keys)
    learn: Learner  # learn(state, keys [chunk, 2], hyper) -> (state, metrics)


_COMPILED: dict = {}


def compile_run(settings: Settings, mesh: Mesh | None = None) -> CompiledRun:
    """The jitted step functions of `settings.pipeline`, built once per process.

    The cache keys on every config key that reaches the `Pipeline` (`Settings.pipeline_key`:
    game, network, search shape, batch sizes, replay, optimizer kind and schedule) and on the
    devices of the mesh; it ignores the tunable scalars (`Hyperparams`, passed as arguments),
    the bookkeeping keys (`config.RESUMABLE_KEYS`: iteration budget, checkpoint cadence,
    evaluation), gating (`config.GATING_KEYS`: which network self-play is passed) and names.
    Runs in one process (tests, notebooks, sweeps) that differ only there share compiled
    functions instead of compiling again.
    """
    mesh = make_mesh() if mesh is None else mesh
    cache_key = (settings.pipeline_key, tuple(d.id for d in mesh.devices.flat))
    if cache_key not in _COMPILED:
        num_devices = mesh.devices.size
        pipeline = settings.pipeline
        for key, value in (
            ("selfplay.batch_size", pipeline.selfplay_batch_size),
            ("learner.batch_size", pipeline.learner_batch_size),
            ("replay.capacity", pipeline.replay_capacity),
        ):
            if value % num_devices:
                raise UserError(f"{key}={value} must be divisible by {num_devices} devices")
        pipeline = dataclasses.replace(pipeline, mesh=mesh)
        # One function for the shapes and the jitted init: JAX traces it once for both.
        init = functools.partial(init_state, pipeline)
        shardings = state_shardings(pipeline, mesh, init)
        _COMPILED[cache_key] = CompiledRun(
            pipeline=pipeline,
            mesh=mesh,
            shardings=shardings,
            init=jax.jit(init, out_shardings=shardings),
            play=jax.jit(
                functools.partial(play_step, pipeline),
                in_shardings=(shardings, None),
                out_shardings=(shardings, None, None),
            ),
            learn=make_learner(pipeline, shardings),
        )
    return _COMPILED[cache_key]


def abstract_arguments(run: CompiledRun, settings: Settings):
    """Shapes of the arguments of `run.play` and `run.learn`, nothing computed: (state,
    chunk's learn keys, hyperparameters), for lowering and compiling them ahead of time."""
    state = jax.eval_shape(run.init, jax.random.PRNGKey(settings.run.seed))
    hyper = settings.hyper
    _, _, learn_keys = jax.eval_shape(run.play, state, hyper)
    return state, jax.ShapeDtypeStruct(learn_keys.shape[1:], learn_keys.dtype), hyper


def learner_programs(run: CompiledRun, state, keys, hyper) -> list[tuple[str, callable, tuple]]:
    """The learner's three programs, each with the shapes of its arguments (nothing
    computed), for lowering and compiling them ahead of time: (name, jitted, arguments).

    Args:
      state, keys, hyper: `abstract_arguments`'.
    """
    learn = run.learn
    split = NamedSharding(run.mesh, PartitionSpec("data"))
    replicated = NamedSharding(run.mesh, PartitionSpec())
    # The minibatches come split over `data` (`steps.sample_batch`); the scalars replicated.
    chunk = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=split if x.ndim else replicated),
        jax.eval_shape(learn.begin, state, keys, hyper),
    )
    update = (state.train_state, chunk.batches[0], chunk.ready, chunk.learning_rate, hyper)
    train_state, metrics = jax.eval_shape(learn.update, *update)
    end = (chunk, train_state, state.lr_multiplier, [metrics] * len(chunk.batches))
    return [
        ("learn_begin", learn.begin, (state, keys, hyper)),
        ("learn_update", learn.update, update),
        ("learn_end", learn.end, end),
    ]


def iterate(run: CompiledRun, state: TrainerState, hyper: Hyperparams, selfplay_variables=None):
    """One iteration: self-play, then the learner updates chunk by chunk.

    Args:
      selfplay_variables: the network self-play plays with (gating's best network), sharded
        like `state.train_state.variables` so that `run.play` is not compiled again; None:
        the learner's own.

    Returns (state, metrics), or (None, None) when a stop was requested (`interrupt`) before
    the iteration finished: the iteration is then dropped, and `state` is the last complete
    one. (With several processes a stop is agreed on between iterations only: see `_loop`.)
    """
    interruptible = jax.process_count() == 1
    if selfplay_variables is None:
        state, metrics, learn_keys = run.play(state, hyper)
    else:
        # `play_step` leaves `train_state` as it is: the learner's goes back afterwards.
        learner_state = state.train_state
        selfplay_state = learner_state._replace(variables=selfplay_variables)
        state, metrics, learn_keys = run.play(state.replace(train_state=selfplay_state), hyper)
        state = state.replace(train_state=learner_state)
    learn_metrics = []
    for keys in learn_keys:
        if interruptible and interrupt.requested():
            return None, None
        state, chunk_metrics = run.learn(state, keys, hyper)
        learn_metrics.append(chunk_metrics)
    metrics.update(jax.tree.map(lambda *v: jnp.mean(jnp.stack(v), axis=0), *learn_metrics))
    metrics.update(
        learning_rate=learn_metrics[-1]["learning_rate"], updates=learn_metrics[-1]["updates"]
    )
    return state, metrics
