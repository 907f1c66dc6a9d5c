"""The pure step functions of an iteration of training.

`play_step` self-plays one batch of plies and stores the labelled positions; `learn_step`
takes a chunk of learner updates (`learn_begin`, `learn_update` on each minibatch,
`learn_end`, which the driver compiles apart). Both are module-level pure functions of a static
`Pipeline`, the `TrainerState` and the tunable `Hyperparams` (traced scalars), so
the driver (`compiled.compile_run`) jits them once, a notebook can call them, and a population
can `vmap` them over members.
"""

import dataclasses
import functools

import jax
import jax.numpy as jnp
from flax import struct
from jax.sharding import Mesh, PartitionSpec

from azjax.core import learner, replay, selfplay
from azjax.core.learner import Optimizer, TrainState
from azjax.core.networks import Network
from azjax.core.replay import ReplayBuffer
from azjax.core.search import SearchParams
from azjax.core.selfplay import SelfPlayRules, SelfPlayState
from azjax.games import Game
from azjax.types import Array, Batch, PRNGKey, Searcher


@struct.dataclass
class Hyperparams:
    """The tunable scalars of a run, [] float32 each but `temperature_moves` (or [K] for a
    population of K). `config.TUNABLE_KEYS` names their config keys."""

    search: SearchParams  # self-play search noise and PUCT constants
    learning_rate: Array  # base learning rate, times the schedule's shape
    weight_decay: Array  # L2 coefficient c
    value_loss_weight: Array  # weight of the value loss
    temperature_moves: Array  # [] int32: self-play samples its moves for this many plies


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """The static pieces of a run: what `steps.play_step` and `steps.learn_step` close over.

    Everything here fixes shapes or compiled code; two configs with the same pipeline share
    compiled functions.
    """

    game: Game  # self-play's: the rules of `game_kwargs` with `selfplay.game_kwargs` over them
    eval_game: Game  # the rules of `game_kwargs`: what evaluations and gating matches play
    network: Network
    # Self-play search (with exploration). Its built-in constants are those of the config
    # the pipeline was first built for: callers pass `params=` (`Hyperparams.search`).
    search: Searcher
    optimizer: Optimizer
    selfplay_batch_size: int  # games in lockstep
    num_steps: int  # plies per iteration in every game
    replay_capacity: int
    replay_min_size: int  # no update before the buffer holds this many positions
    augment: bool  # random board symmetry per sample
    learner_batch_size: int
    updates_per_iteration: int
    chunk: int  # updates per `learn_step`, between the KL rate's checks (see `learn_chunk`)
    # How self-play chooses, plays, ends and labels its games: the search's own action
    # (Gumbel), playout caps, resignation, adjudication, random moves, handicap starts, the
    # auxiliary targets labelled.
    rules: SelfPlayRules = SelfPlayRules()
    # The weight of the searched root value in the value target (`targets.value_target`).
    value_target_mix: float = 0.0
    kl_target: float = 0.0  # KL-adaptive learning rate's target (0: off)
    # KataGo's auxiliary targets: the loss weights of the ownership and score heads (0: off,
    # no head, no buffer field).
    ownership_weight: float = 0.0
    score_weight: float = 0.0
    # The devices the state is sharded over (`compiled.compile_run` sets it); None: one device,
    # unsharded (notebooks calling the steps directly).
    mesh: Mesh | None = None

    @property
    def num_shards(self) -> int:
        """D: the replay's rings, one per device of the `data` axis."""
        return 1 if self.mesh is None else int(self.mesh.devices.size)

    @property
    def ownership_points(self) -> int:
        """P, the board points of the ownership target (the observation's H * W); 0: off."""
        if self.ownership_weight <= 0:
            return 0
        height, width = self.game.observation_shape[:2]
        return height * width


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
    # [] float32 the KL-adaptive learning rate's multiplier (None: `kl_target` is off)
    lr_multiplier: Array | None = None


def init_state(pipeline: Pipeline, key: PRNGKey) -> TrainerState:
    """A new run: fresh network, optimizer state, empty replay, games at their start."""
    key, network_key, selfplay_key = jax.random.split(key, 3)
    game = pipeline.game
    variables = pipeline.network.init(network_key)
    stored = game.encode_observation(game.observe(game.init(key)))
    return TrainerState(
        train_state=learner.init(pipeline.optimizer, variables),
        buffer=replay.init(
            pipeline.replay_capacity,
            stored.shape,
            game.num_actions,
            stored.dtype,
            num_shards=pipeline.num_shards,
            root_value=pipeline.value_target_mix > 0,
            ownership_points=pipeline.ownership_points,
            score=pipeline.score_weight > 0,
        ),
        selfplay=selfplay.init(
            game, selfplay_key, batch_size=pipeline.selfplay_batch_size, rules=pipeline.rules
        ),
        key=key,
        iteration=jnp.zeros((), jnp.int32),
        num_games=jnp.zeros((), jnp.int32),
        num_positions=jnp.zeros((), jnp.int32),
        elapsed=jnp.zeros((), jnp.float32),
        lr_multiplier=jnp.ones((), jnp.float32) if pipeline.kl_target > 0 else None,
    )


def play_step(
    pipeline: Pipeline, state: TrainerState, hyper: Hyperparams
) -> tuple[TrainerState, dict, Array]:
    """Self-play one iteration and store its labelled positions.

    Returns the new state, self-play metrics and the learner keys [U / chunk, chunk, 2].
    """
    key, selfplay_key, learn_key = jax.random.split(state.key, 3)
    search = pipeline.search.with_params(hyper.search)
    selfplay_state, buffer, played = selfplay.run(
        pipeline.game,
        search,
        state.train_state.variables,
        state.selfplay,
        state.buffer,
        selfplay_key,
        num_steps=pipeline.num_steps,
        temperature_moves=hyper.temperature_moves,
        rules=pipeline.rules,
        write=replay_writer(pipeline),
    )
    games = jnp.maximum(played.num_games, 1)
    metrics = dict(
        games=played.num_games,
        average_game_length=played.total_game_length / games,
        first_player_win_rate=played.first_player_wins / games,
        second_player_win_rate=played.second_player_wins / games,
        positions_added=played.num_labelled,
        root_value=played.root_value,
        buffer_size=buffer.size,
    )
    if pipeline.search.tree_reuse:
        metrics["reuse/carried_fraction"] = played.carried_fraction
    if pipeline.rules.win_adjudication > 0:
        metrics["adjudicated_rate"] = played.num_adjudicated / games
    if pipeline.rules.playout_cap is not None:
        metrics["playout_cap/full_fraction"] = played.num_full_plies / pipeline.num_steps
    resignation = selfplay_state.resignation
    if resignation is not None:
        # At the grid threshold nearest the v_resign this call played with (the decay
        # after the call scales both counts alike).
        rates = selfplay.false_positive_rates(resignation)
        thresholds = jnp.asarray(selfplay.RESIGN_THRESHOLDS)
        at = jnp.argmin(jnp.abs(thresholds - state.selfplay.resignation.threshold))
        metrics.update(
            {
                "resign/threshold": resignation.threshold,
                "resign/resigned_rate": played.num_resigned / games,
                "resign/false_positive_rate": rates[at],
                "resign/checked_games": resignation.checked,
            }
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


def replay_writer(pipeline: Pipeline):
    """`replay.write` for this pipeline: on each device's shard when there is a mesh."""
    write = functools.partial(replay.write, max_length=pipeline.game.max_episode_length)
    if pipeline.mesh is None:
        return write
    specs = buffer_specs(pipeline)
    in_specs = (specs, replay.Entry.specs())
    return replay.sharded(pipeline.mesh, write, in_specs, (specs, PartitionSpec()))


def buffer_specs(pipeline: Pipeline) -> ReplayBuffer:
    """The PartitionSpecs of this pipeline's replay buffer (its optional fields)."""
    return replay.specs(
        root_value=pipeline.value_target_mix > 0,
        ownership=pipeline.ownership_weight > 0,
        score=pipeline.score_weight > 0,
    )


def sample_batch(pipeline: Pipeline, buffer: ReplayBuffer, key: PRNGKey) -> Batch:
    """A minibatch drawn uniformly from the labelled positions, each sample in a random board
    symmetry. With a mesh each device draws its share from its own shard (`replay`), so the
    minibatch comes split over the `data` axis and each device computes its share's gradient.
    """
    game = pipeline.game
    shards = pipeline.num_shards
    per_shard = pipeline.learner_batch_size // shards

    def draw(buffer, key):
        if pipeline.mesh is not None:
            key = jax.random.fold_in(key, jax.lax.axis_index("data"))
        sample_key, symmetry_key = jax.random.split(key)
        batch = replay.sample(
            buffer, sample_key, per_shard, game.decode_observation, pipeline.value_target_mix
        )
        if pipeline.augment and game.symmetries > 1:
            index = jax.random.randint(symmetry_key, (per_shard,), 0, game.symmetries)
            obs, policy = jax.vmap(game.apply_symmetry)(batch.obs, batch.policy, index)
            batch = batch.replace(obs=obs, policy=policy)
            if batch.ownership is not None:  # per point, as the observation's points
                batch = batch.replace(
                    ownership=jax.vmap(game.permute_points)(batch.ownership, index)
                )
        return batch

    split = PartitionSpec("data")
    batch_specs = Batch(
        obs=split,
        policy=split,
        value=split,
        ownership=split if pipeline.ownership_weight > 0 else None,
        score=split if pipeline.score_weight > 0 else None,
    )
    sharded_draw = replay.sharded(
        pipeline.mesh, draw, (buffer_specs(pipeline), PartitionSpec()), batch_specs
    )
    return sharded_draw(buffer, key)


@struct.dataclass
class LearnChunk:
    """What a chunk's updates share, drawn before the first (`learn_begin`)."""

    batches: tuple[Batch, ...]  # one minibatch per update of the chunk
    ready: Array  # [] bool: the buffer holds min_size (no update before)
    learning_rate: Array  # [] float32 the base rate times the KL-adaptive multiplier
    # [b, A] the policy on the first minibatch before the chunk (None: kl_target is off)
    before: Array | None = None


def learn_step(
    pipeline: Pipeline,
    state: TrainerState,
    keys: Array,
    hyper: Hyperparams,
) -> tuple[TrainerState, dict]:
    """`chunk` learner updates on minibatches from the buffer (none before `min_size`):
    `learn_begin`, `learn_update` for each minibatch, `learn_end`.

    The updates are unrolled, not scanned: see `build.learn_chunk`. The run's driver
    (`compiled.compile_run`) compiles the three parts apart and calls them in this order, so
    that an update is compiled once, not once per update of the chunk.

    Args:
      keys: [chunk, 2] one key per update (from `play_step`).
    """
    # Traced once for the chunk, not once per update: `jax.checkpoint` keeps the trace of a
    # function for arguments of the same shapes, and lowers it inline, the program of the
    # plain calls (it rematerialises only under differentiation, which never reaches here).
    update = jax.checkpoint(functools.partial(learn_update, pipeline))
    begin = functools.partial(learn_begin, pipeline)
    end = functools.partial(learn_end, pipeline)
    return learn_parts(begin, update, end, state, keys, hyper)


def learn_parts(begin, update, end, state: TrainerState, keys: Array, hyper: Hyperparams):
    """`learn_step` from its parts, pipeline bound: `begin`, `update` on each minibatch of
    the chunk, `end`; the functions themselves, or the programs compiled from them."""
    chunk = begin(state, keys, hyper)
    train_state, all_metrics = state.train_state, []
    for batch in chunk.batches:
        train_state, metrics = update(train_state, batch, chunk.ready, chunk.learning_rate, hyper)
        all_metrics.append(metrics)
    train_state, lr_multiplier, metrics = end(chunk, train_state, state.lr_multiplier, all_metrics)
    return state.replace(train_state=train_state, lr_multiplier=lr_multiplier), metrics


def learn_begin(
    pipeline: Pipeline, state: TrainerState, keys: Array, hyper: Hyperparams
) -> LearnChunk:
    """The chunk's minibatches in one vmapped draw (the same as a draw per key: the buffer's
    sampling tables are computed once, not once per update), whether the buffer is ready,
    the learning rate, and the policy before the chunk where the rate adapts to its KL."""
    # Every shard must hold its share of min_size (and at least one position) to sample.
    shards = pipeline.num_shards
    share = max(1, -(-pipeline.replay_min_size // shards))
    ready = jnp.min(replay.shard_sizes(state.buffer, shards)) >= share
    stacked = jax.vmap(lambda key: sample_batch(pipeline, state.buffer, key))(keys)
    batches = tuple(jax.tree.map(lambda x, i=i: x[i], stacked) for i in range(len(keys)))
    learning_rate, before = hyper.learning_rate, None
    if state.lr_multiplier is not None:
        learning_rate = learning_rate * state.lr_multiplier
        before = _policy(pipeline, state.train_state, batches[0])
    return LearnChunk(batches=batches, ready=ready, learning_rate=learning_rate, before=before)


def learn_update(
    pipeline: Pipeline,
    train_state: TrainState,
    batch: Batch,
    ready: Array,
    learning_rate: Array,
    hyper: Hyperparams,
) -> tuple[TrainState, dict]:
    """One learner update on `batch` (`learner.update`), kept only where `ready`."""
    new_state, metrics = learner.update(
        pipeline.network,
        pipeline.optimizer,
        train_state,
        batch,
        learning_rate=learning_rate,
        weight_decay=hyper.weight_decay,
        value_loss_weight=hyper.value_loss_weight,
        ownership_weight=pipeline.ownership_weight,
        score_weight=pipeline.score_weight,
    )
    train_state = jax.tree.map(lambda n, o: jnp.where(ready, n, o), new_state, train_state)
    return train_state, metrics


def learn_end(
    pipeline: Pipeline,
    chunk: LearnChunk,
    train_state: TrainState,
    lr_multiplier: Array | None,
    all_metrics: list[dict],
) -> tuple[TrainState, Array | None, dict]:
    """The chunk's metrics (the mean of its updates'), and the KL-adaptive rate's multiplier
    adapted to how far the chunk moved the policy (`adapt_learning_rate`)."""
    metrics = jax.tree.map(lambda *values: jnp.mean(jnp.stack(values)), *all_metrics)
    metrics.update(
        learning_rate=chunk.learning_rate * pipeline.optimizer.shape(train_state.step),
        updates=train_state.step,
    )
    if lr_multiplier is not None:
        after = _policy(pipeline, train_state, chunk.batches[0])
        before = chunk.before
        kl = jnp.mean(jnp.sum(jnp.exp(before) * (before - after), axis=-1))
        multiplier = adapt_learning_rate(lr_multiplier, kl, pipeline.kl_target)
        lr_multiplier = jnp.where(chunk.ready, multiplier, lr_multiplier)
        metrics.update(kl=kl, lr_multiplier=lr_multiplier)
    return train_state, lr_multiplier, metrics


def _policy(pipeline: Pipeline, train_state: TrainState, batch: Batch) -> Array:
    """[b, A] the network's log policy (inference mode) on a minibatch."""
    logits, _, _ = pipeline.network.apply(train_state.variables, batch.obs, False)
    return jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)


def adapt_learning_rate(multiplier: Array, kl: Array, target: float) -> Array:
    """AlphaZero_Gomoku's rule (train.py `policy_update`): divide the learning rate's
    multiplier by 1.5 when the policy moved by KL > 2 * target, multiply it by 1.5 when
    KL < target / 2, within [0.1, 10]."""
    multiplier = jnp.where((kl > 2 * target) & (multiplier > 0.1), multiplier / 1.5, multiplier)
    multiplier = jnp.where((kl < target / 2) & (multiplier < 10.0), multiplier * 1.5, multiplier)
    return multiplier.astype(jnp.float32)
