"""The pure step functions of an iteration of training.

`play_step` self-plays one batch of plies and stores the labelled positions; `learn_step`
takes a chunk of learner updates. Both are module-level pure functions of a static
`build.Pipeline`, the `TrainerState` and the tunable `build.Hyperparams` (traced scalars), so
the driver (`train.compile_run`) jits them once, a notebook can call them, and a population
can `vmap` them over members.
"""

import functools

import jax
import jax.numpy as jnp
from flax import struct
from jax.sharding import Sharding

from azjax import learner, replay, selfplay
from azjax.build import Hyperparams, Pipeline
from azjax.learner import TrainState
from azjax.replay import ReplayBuffer
from azjax.selfplay import SelfPlayState
from azjax.types import Array, Batch, PRNGKey


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


def init_state(pipeline: Pipeline, key: PRNGKey) -> TrainerState:
    """A new run: fresh network, optimizer state, empty replay, games at their start."""
    key, network_key, selfplay_key = jax.random.split(key, 3)
    game = pipeline.game
    variables = pipeline.network.init(network_key)
    obs = game.observe(game.init(key))
    return TrainerState(
        train_state=learner.init(pipeline.optimizer, variables),
        buffer=replay.init(pipeline.replay_capacity, obs.shape, game.num_actions, obs.dtype),
        selfplay=selfplay.init(game, selfplay_key, batch_size=pipeline.selfplay_batch_size),
        key=key,
        iteration=jnp.zeros((), jnp.int32),
        num_games=jnp.zeros((), jnp.int32),
        num_positions=jnp.zeros((), jnp.int32),
        elapsed=jnp.zeros((), jnp.float32),
    )


def play_step(
    pipeline: Pipeline, state: TrainerState, hyper: Hyperparams
) -> tuple[TrainerState, dict, Array]:
    """Self-play one iteration and store its labelled positions.

    Returns the new state, self-play metrics and the learner keys [U / chunk, chunk, 2].
    """
    key, selfplay_key, learn_key = jax.random.split(state.key, 3)
    search = functools.partial(pipeline.search, params=hyper.search)
    selfplay_state, played = selfplay.run(
        pipeline.game,
        search,
        state.train_state.variables,
        state.selfplay,
        selfplay_key,
        num_steps=pipeline.num_steps,
        temperature_moves=pipeline.temperature_moves,
        sample_search_action=pipeline.sample_search_action,
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
    positions = pipeline.selfplay_batch_size * pipeline.num_steps
    next_state = state.replace(
        buffer=buffer,
        selfplay=selfplay_state,
        key=key,
        iteration=state.iteration + 1,
        num_games=state.num_games + played.num_games,
        num_positions=state.num_positions + positions,
    )
    learn_keys = jax.random.split(learn_key, pipeline.updates_per_iteration)
    return next_state, metrics, learn_keys.reshape(-1, pipeline.chunk, *learn_keys.shape[1:])


def sample_batch(
    pipeline: Pipeline, buffer: ReplayBuffer, key: PRNGKey, sharding: Sharding | None = None
) -> Batch:
    """A minibatch drawn uniformly from the buffer, each sample in a random board symmetry.

    With a `sharding` (the `data` axis of a mesh) the minibatch is split over the devices,
    so each computes the gradient of its share.
    """
    sample_key, symmetry_key = jax.random.split(key)
    batch = replay.sample(buffer, sample_key, pipeline.learner_batch_size)
    game = pipeline.game
    if pipeline.augment and game.symmetries > 1:
        index = jax.random.randint(symmetry_key, (pipeline.learner_batch_size,), 0, game.symmetries)
        obs, policy = jax.vmap(game.apply_symmetry)(batch.obs, batch.policy, index)
        batch = batch.replace(obs=obs, policy=policy)
    if sharding is not None:
        batch = jax.lax.with_sharding_constraint(batch, sharding)
    return batch


def learn_step(
    pipeline: Pipeline,
    state: TrainerState,
    keys: Array,
    hyper: Hyperparams,
    *,
    batch_sharding: Sharding | None = None,
) -> tuple[TrainerState, dict]:
    """`chunk` learner updates on minibatches from the buffer (none before `min_size`).

    The updates are unrolled, not scanned: see `build.learn_chunk`.

    Args:
      keys: [chunk, 2] one key per update (from `play_step`).
      batch_sharding: how to split each minibatch over devices (see `sample_batch`).
    """
    ready = state.buffer.size >= pipeline.replay_min_size
    train_state, all_metrics = state.train_state, []
    for index in range(pipeline.chunk):
        batch = sample_batch(pipeline, state.buffer, keys[index], batch_sharding)
        new_state, metrics = learner.update(
            pipeline.network,
            pipeline.optimizer,
            train_state,
            batch,
            learning_rate=hyper.learning_rate,
            weight_decay=hyper.weight_decay,
        )
        train_state = jax.tree.map(lambda n, o: jnp.where(ready, n, o), new_state, train_state)
        all_metrics.append(metrics)
    metrics = jax.tree.map(lambda *values: jnp.mean(jnp.stack(values)), *all_metrics)
    metrics.update(
        learning_rate=hyper.learning_rate * pipeline.optimizer.shape(train_state.step),
        updates=train_state.step,
    )
    return state.replace(train_state=train_state), metrics
