"""The one place where an experiment config becomes objects.

Everything below this module (games, networks, search, selfplay, replay, learner) takes plain
keyword arguments and never sees a config. Each command builds its records here once
(`make_settings`: the `Settings` of `config.settings`) and hands them to the wings above
(`runs/`, `matches/`, `training/`), which never see a config either. A config is split in two
here:

- a `Pipeline`: the static pieces that fix shapes and compiled code (game, network, search
  with its number of simulations, batch sizes, the optimizer's kind and schedule shape);
- `Hyperparams`: the tunable scalars (learning rate, weight decay, value-loss weight, search
  noise and PUCT constants, temperature moves), passed to the step functions as [] arrays, so
  changing one does not recompile and a population can `vmap` over them.
"""

import dataclasses

import jax
import ml_collections

from azjax import config as config_lib
from azjax import games
from azjax.config.keys import TUNABLE_KEYS
from azjax.config.schema import selfplay_game_kwargs
from azjax.config.settings import (
    AgentSettings,
    EvalSettings,
    GatingSettings,
    RecordSettings,
    RunSettings,
    SearchSettings,
    Settings,
    TrackerSettings,
    hyperparams,
    search_params,
)
from azjax.core.learner import Optimizer, make_schedule
from azjax.core.networks import Network, make_network
from azjax.core.selfplay import PlayoutCap, ResignRule, SelfPlayRules
from azjax.core.steps import Hyperparams, Pipeline
from azjax.games import Game
from azjax.types import Searcher, UserError


def make_game(config: ml_collections.ConfigDict) -> Game:
    """The game of `config.game` with the rule options of `config.game_kwargs`."""
    return games.make(config.game, **dict(config.game_kwargs))


def make_network_for(config: ml_collections.ConfigDict, game: Game) -> Network:
    """The network of `config.network`, sized for `game`, with the ownership and score
    heads where the learner trains them (`learner.ownership_weight`, `score_weight` > 0).

    Its `apply` is jitted. Inside a compiled step that changes no result (XLA inlines a
    nested call), but each call site then traces a cached call instead of the whole
    network: the learner's `chunk` unrolled updates traced in 12 s, growing with the square
    of `chunk` (a Flax BatchNorm statistics write inside a trace makes JAX scan the whole
    trace so far), and in 1 s jitted (Connect Four 64 x 4, chunk 8; docs/architecture.md)."""
    network = config.network
    built = make_network(
        tuple(game.observation_shape),
        game.num_actions,
        channels=network.channels,
        num_blocks=network.num_blocks,
        policy_channels=network.policy_channels,
        value_channels=network.value_channels,
        value_hidden=network.value_hidden,
        dtype=network.dtype,
        global_pooling=bool(network.global_pooling),
        ownership_head=config.learner.ownership_weight > 0,
        score_head=config.learner.score_weight > 0,
    )
    return built._replace(
        apply=jax.jit(built.apply, static_argnums=2),
        apply_heads=jax.jit(built.apply_heads, static_argnums=2),
    )


def make_searcher(
    config: ml_collections.ConfigDict, game: Game, network: Network, **options
) -> Searcher:
    """The network-guided search of `config.search` (`SearchSettings.searcher`'s options:
    `explore`, `num_simulations`, `return_tree`)."""
    return make_search_settings(config).searcher(game, network, **options)


def make_agent_searcher(
    config: ml_collections.ConfigDict, game: Game, network: Network, **options
) -> Searcher:
    """The search an agent of `config` plays with (`AgentSettings.searcher`'s options:
    `num_simulations`, `return_tree`)."""
    return make_agent_settings(config).searcher(game, network, **options)


def make_optimizer(config: ml_collections.ConfigDict) -> Optimizer:
    """The optimizer of `config.learner`; its base learning rate comes with `Hyperparams`."""
    learner = config.learner
    shape = make_schedule(
        schedule=learner.schedule,
        warmup_steps=learner.warmup_steps,
        decay_steps=learner.decay_steps,
        boundaries=tuple(learner.boundaries),
        decay_factor=learner.decay_factor,
    )
    return Optimizer(
        learner.optimizer, shape, momentum=learner.momentum, max_grad_norm=learner.max_grad_norm
    )


def tunable_values(config: ml_collections.ConfigDict) -> dict:
    """The tunable keys of `config` and their values ({"learner.learning_rate": 1e-3, ...})."""
    return {key: config[key.split(".")[0]][key.split(".")[1]] for key in TUNABLE_KEYS}


def make_hyperparams(config: ml_collections.ConfigDict) -> Hyperparams:
    """The tunable scalars of `config` as float32 numbers."""
    return hyperparams(tunable_values(config))


def make_search_settings(config: ml_collections.ConfigDict) -> SearchSettings:
    """The search of `config.search` (`SearchSettings.searcher` builds it)."""
    search = config.search
    return SearchSettings(
        algorithm=search.algorithm,
        num_simulations=search.num_simulations,
        max_num_considered_actions=search.max_num_considered_actions,
        gumbel_value_scale=search.gumbel_value_scale,
        symmetric_eval=bool(search.symmetric_eval),
        win_check=bool(search.win_check),
        tree_reuse=bool(search.tree_reuse),
        forced_playouts=float(search.forced_playouts),
        params=search_params(tunable_values(config)),
    )


def make_run_settings(config: ml_collections.ConfigDict) -> RunSettings:
    train = config.train
    records = None
    if config.records.path:  # validated: each key of its type
        fields = dataclasses.fields(RecordSettings)
        records = RecordSettings(**{f.name: config.records[f.name] for f in fields})
    gating = None
    if train.gating:
        gating = GatingSettings(
            games=int(train.gating_games),
            every=int(train.gating_every),
            threshold=float(train.gating_threshold),
        )
    return RunSettings(
        name=config.name or config.game,
        game=config.game,
        game_kwargs=dict(config.game_kwargs),
        seed=int(config.seed),
        num_iterations=int(train.num_iterations),
        max_minutes=float(train.max_minutes),
        checkpoint_every=int(train.checkpoint_every),
        storage_timeout_s=float(train.storage_timeout_s),
        keep_checkpoints=int(train.keep_checkpoints),
        eval_every=int(config.eval.every),
        positions_per_iteration=int(config.selfplay.batch_size * config.selfplay.num_steps),
        profile=tuple(int(i) for i in train.profile),
        gating=gating,
        trackers=TrackerSettings(
            loggers=tuple(train.loggers),
            wandb_project=str(train.wandb_project),
            mlflow_uri=str(train.mlflow_uri or ""),
            experiment=str(config.name),
        ),
        records=records,
    )


def make_agent_settings(config: ml_collections.ConfigDict) -> AgentSettings:
    return AgentSettings(
        simulations=int(config.eval.num_simulations),
        temperature_moves=int(config.selfplay.temperature_moves),
        sample_search_action=config.search.algorithm == "gumbel",
        search=make_search_settings(config),
    )


def make_eval_settings(config: ml_collections.ConfigDict) -> EvalSettings:
    elo = None
    if config.eval.elo:
        elo = {
            "anchor": config.eval.elo_anchor,
            "ratings": config.eval.elo_ratings,
            "game": config.game,
            "game_kwargs": dict(config.game_kwargs),
        }
    return EvalSettings(
        opponents=tuple(config.eval.opponents),
        num_games=int(config.eval.num_games),
        seed=int(config.seed),
        elo=elo,
    )


def learn_chunk(updates_per_iteration: int) -> int:
    """The largest divisor of `updates_per_iteration` up to 8.

    XLA:CPU runs convolution gradients about 20x slower inside a loop body (lax.scan or
    fori_loop; measured 690 vs 31 ms per Connect Four update), so the updates are not
    looped in a program: `steps.learn_step` unrolls a chunk of at most 8, and the driver
    (`compiled.Learner`) calls one update's program per update. The KL-adaptive rate adapts
    once per chunk, so the chunk is part of what a run computes.
    """
    divisors = range(1, min(updates_per_iteration, 8) + 1)
    return max(c for c in divisors if updates_per_iteration % c == 0)


def check_game_options(config: ml_collections.ConfigDict, game: Game) -> None:
    """Refuses the options that need what `game` lacks.

    Raises:
      UserError: adjudication without `Game.adjudicate`, handicap starts without
        `Game.handicap_init`, ownership targets without `Game.ownership`, score targets
        without `Game.final_score`.
    """
    for key in ("draw_adjudication", "win_adjudication"):
        if config.selfplay[key] != 0 and not game.adjudicates:
            raise UserError(f"selfplay.{key}: {game.name} has no adjudication (Game.adjudicate)")
    if config.selfplay.handicap_starts > 0 and not game.has_handicap_starts:
        raise UserError(
            f"selfplay.handicap_starts: {game.name} has no handicap starts (Game.handicap_init)"
        )
    if config.learner.ownership_weight > 0 and not game.has_ownership:
        raise UserError(f"learner.ownership_weight: {game.name} has no ownership (Game.ownership)")
    if config.learner.score_weight > 0 and not game.has_score:
        raise UserError(f"learner.score_weight: {game.name} has no final score (Game.final_score)")


def make_pipeline(config: ml_collections.ConfigDict) -> Pipeline:
    """The static pieces of the run `config` describes.

    Raises:
      UserError: the replay buffer cannot hold the running games' positions, or an option
        needs what the game lacks (adjudication, handicap starts, ownership, a final score).
    """
    game = games.make(config.game, **selfplay_game_kwargs(config))
    check_game_options(config, game)
    network = make_network_for(config, game)
    # Every position of a running game stays in the ring until its game ends (replay).
    needed = config.selfplay.batch_size * max(game.max_episode_length, config.selfplay.num_steps)
    if config.replay.capacity < needed:
        raise UserError(
            f"replay.capacity={config.replay.capacity} must hold the running games' positions "
            f"(selfplay.batch_size * max(max game length, selfplay.num_steps) = {needed})"
        )
    search = make_search_settings(config).searcher(game, network, explore=True)
    selfplay = config.selfplay
    playout_cap = resign = None
    if selfplay.full_search_fraction < 1.0:
        cheap = search.with_simulations(selfplay.cheap_simulations)
        playout_cap = PlayoutCap(float(selfplay.full_search_fraction), cheap)
    if selfplay.resign:
        resign = ResignRule(
            initial=float(selfplay.resign_threshold),
            no_resign_fraction=float(selfplay.resign_check_fraction),
            target=float(selfplay.resign_false_positives),
        )
    rules = SelfPlayRules(
        sample_search_action=config.search.algorithm == "gumbel",
        playout_cap=playout_cap,
        resign=resign,
        draw_adjudication=float(selfplay.draw_adjudication),
        win_adjudication=float(selfplay.win_adjudication),
        random_move_fraction=float(selfplay.random_move_fraction),
        handicap_starts=float(selfplay.handicap_starts),
        label_ownership=config.learner.ownership_weight > 0,
        label_score=config.learner.score_weight > 0,
    )
    return Pipeline(
        game=game,
        eval_game=make_game(config) if config.selfplay.game_kwargs else game,
        network=network,
        search=search,
        rules=rules,
        value_target_mix=float(config.learner.value_target_mix),
        kl_target=float(config.learner.kl_target),
        ownership_weight=float(config.learner.ownership_weight),
        score_weight=float(config.learner.score_weight),
        optimizer=make_optimizer(config),
        selfplay_batch_size=config.selfplay.batch_size,
        num_steps=config.selfplay.num_steps,
        replay_capacity=config.replay.capacity,
        replay_min_size=config.replay.min_size,
        augment=bool(config.replay.augment),
        learner_batch_size=config.learner.batch_size,
        updates_per_iteration=config.learner.updates_per_iteration,
        chunk=learn_chunk(config.learner.updates_per_iteration),
    )


# The pipelines this process built, by `config.pipeline_key`: configs with the same key build
# one (its search's constants those of the first; `Hyperparams` carries each run's own), as
# `compiled.compile_run` compiles one.
_PIPELINES: dict = {}


def make_settings(config: ml_collections.ConfigDict, *, pipeline: bool = True) -> Settings:
    """Every record `config` describes, built once for a command to hand down; without
    `pipeline`, no self-play pipeline (None): a saved run read for its agent alone.

    Raises:
      UserError: as `make_pipeline` (with `pipeline`).
    """
    key = config_lib.pipeline_key(config)
    built = None
    if pipeline:
        if key not in _PIPELINES:
            _PIPELINES[key] = make_pipeline(config)
        built = _PIPELINES[key]
        game, network = built.eval_game, built.network
    else:
        game = make_game(config)
        network = make_network_for(config, game)
    tunable = tunable_values(config)
    return Settings(
        pipeline=built,
        hyper=hyperparams(tunable),
        game=game,
        network=network,
        run=make_run_settings(config),
        eval=make_eval_settings(config),
        agent=make_agent_settings(config),
        tunable=tunable,
        config_json=config_lib.to_json(config),
        pipeline_key=key,
    )
