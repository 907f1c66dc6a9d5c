"""The one place where an experiment config becomes objects.

Everything below this module (games, networks, search, selfplay, replay, learner) takes plain
keyword arguments and never sees a config; the drivers above it (train, agent, bench,
protocols, cli) call these functions. A config is split in two here:

- a `Pipeline`: the static pieces that fix shapes and compiled code (game, network, search
  with its number of simulations, batch sizes, the optimizer's kind and schedule shape);
- `Hyperparams`: the tunable scalars (learning rate, weight decay, value-loss weight, search
  noise and PUCT constants, temperature moves), passed to the step functions as [] arrays, so
  changing one does not recompile and a population can `vmap` over them.
"""

import dataclasses

import jax
import ml_collections
import numpy as np

from azjax import games
from azjax.config.schema import selfplay_game_kwargs
from azjax.core.evaluators import network_evaluator, with_immediate_wins
from azjax.core.learner import Optimizer, make_schedule
from azjax.core.networks import Network, make_network
from azjax.core.search import SearchParams, make_search
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


def make_search_params(config: ml_collections.ConfigDict, *, explore: bool) -> SearchParams:
    """The tunable search scalars of `config.search`; `explore=False` turns the root noise
    (Dirichlet for PUCT, Gumbel for Gumbel search) off."""
    search = config.search
    return SearchParams(
        dirichlet_alpha=float(search.dirichlet_alpha),
        dirichlet_fraction=float(search.dirichlet_fraction) if explore else 0.0,
        pb_c_init=float(search.pb_c_init),
        pb_c_base=float(search.pb_c_base),
        gumbel_scale=float(search.gumbel_scale) if explore else 0.0,
    )


def make_searcher(
    config: ml_collections.ConfigDict,
    game: Game,
    network: Network,
    *,
    explore: bool,
    num_simulations: int | None = None,
    return_tree: bool = False,
) -> Searcher:
    """The network-guided search of `config.search`.

    Args:
      explore: with root noise (self-play) or without (evaluation, play).
      num_simulations: simulations per move (default: `config.search.num_simulations`).
      return_tree: return the search tree too (GTP analysis); such a search starts from an
        empty tree at every call (no tree reuse).
    """
    evaluate = network_evaluator(game, network, symmetric=bool(config.search.symmetric_eval))
    if config.search.win_check:
        evaluate = with_immediate_wins(game, evaluate)
    return make_search(
        game,
        evaluate,
        num_simulations=num_simulations or config.search.num_simulations,
        algorithm=config.search.algorithm,
        max_num_considered_actions=config.search.max_num_considered_actions,
        gumbel_value_scale=config.search.gumbel_value_scale,
        params=make_search_params(config, explore=explore),
        return_tree=return_tree,
        # Gumbel's sequential halving starts from an empty root: it ignores tree reuse.
        tree_reuse=(
            bool(config.search.tree_reuse) and config.search.algorithm == "puct" and not return_tree
        ),
        # Self-play's searches only: an agent's move is its most visited either way.
        forced_playouts=float(config.search.forced_playouts) if explore else 0.0,
    )


def make_agent_searcher(
    config: ml_collections.ConfigDict,
    game: Game,
    network: Network,
    *,
    num_simulations: int | None = None,
    return_tree: bool = False,
) -> Searcher:
    """The search an agent plays with (no noise), at `num_simulations` or the run's
    `eval.num_simulations` (`return_tree`: as in `make_searcher`)."""
    return make_searcher(
        config,
        game,
        network,
        explore=False,
        num_simulations=num_simulations or config.eval.num_simulations,
        return_tree=return_tree,
    )


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


def make_hyperparams(config: ml_collections.ConfigDict) -> Hyperparams:
    """The tunable scalars of `config` as float32 numbers."""
    search = _as_float32(make_search_params(config, explore=True))
    return Hyperparams(
        search=search,
        learning_rate=np.float32(config.learner.learning_rate),
        weight_decay=np.float32(config.learner.weight_decay),
        value_loss_weight=np.float32(config.learner.value_loss_weight),
        temperature_moves=np.int32(config.selfplay.temperature_moves),
    )


def _as_float32(params: SearchParams) -> SearchParams:
    """`params` with every field a float32 scalar."""
    return SearchParams(
        **{f.name: np.float32(getattr(params, f.name)) for f in dataclasses.fields(params)}
    )


@dataclasses.dataclass(frozen=True)
class GatingSettings:
    """AlphaGo Zero's gate (`training.gating`), read once from `train.gating_*`."""

    games: int  # games of the current network against the best
    every: int  # iterations between gating matches
    threshold: float  # the score that makes the current network the best


@dataclasses.dataclass(frozen=True)
class TrackerSettings:
    """Where a run's records go besides `metrics.jsonl` (`runs.trackers`), from `train.*`."""

    loggers: tuple[str, ...]  # of "tensorboard", "wandb", "mlflow"
    wandb_project: str
    mlflow_uri: str  # "": a SQLite store in the run's folder
    experiment: str  # the MLflow experiment: the run's name


@dataclasses.dataclass(frozen=True)
class RecordSettings:
    """The game records a run learns from before self-play (`training.pretrain`), from
    `records.*`."""

    path: str  # a file, folder or glob of records
    updates: int  # supervised updates
    holdout: float  # share of the games held out
    eval_every: int  # updates between held-out measurements and saves
    strict: bool  # refuse everything at the first bad record
    replay: bool  # the records' positions fill self-play's empty replay
    max_games: int  # games read at most; 0: all


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """A run's bookkeeping, read once from `train.*`, `eval.every` and the self-play sizes: what
    the host loop (`host_loop`) needs beside the compiled steps."""

    name: str  # the run's name (the experiment's, or the game's)
    game: str  # the game's name, as the config gives it
    game_kwargs: dict  # and its options (`games.make(game, **game_kwargs)`)
    seed: int  # the run's seed (its initial state; its evaluations' games)
    num_iterations: int  # the iteration budget
    max_minutes: float  # wall-clock budget; 0: none
    checkpoint_every: int  # iterations between checkpoints
    storage_timeout_s: float  # cloud storage's answers waited for; 0: the libraries' retries
    keep_checkpoints: int  # newest checkpoints kept
    eval_every: int  # iterations between evaluations; 0: none
    positions_per_iteration: int  # self-play positions per iteration (games x plies)
    profile: tuple[int, int]  # first and last iteration traced; (0, 0): none
    gating: GatingSettings | None  # self-play plays the best network so far; None: off
    trackers: TrackerSettings
    records: RecordSettings | None = None  # None: no records, self-play from scratch


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


@dataclasses.dataclass(frozen=True)
class AgentSettings:
    """How a run's network plays as an agent (`matches.agent`): its evaluation search's
    simulations, and self-play's move choice for playing as training does."""

    simulations: int  # `eval.num_simulations`
    temperature_moves: int  # plies sampled from the search policy in self-play
    sample_search_action: bool  # those plies play the search's own action (Gumbel)


def make_agent_settings(config: ml_collections.ConfigDict) -> AgentSettings:
    return AgentSettings(
        simulations=int(config.eval.num_simulations),
        temperature_moves=int(config.selfplay.temperature_moves),
        sample_search_action=config.search.algorithm == "gumbel",
    )


@dataclasses.dataclass(frozen=True)
class EvalSettings:
    """What a run's evaluation plays (`evaluation.make_evaluation`), read once from `eval.*`."""

    opponents: tuple[str, ...]  # opponent specs (`config.parse_opponent_spec`)
    num_games: int  # games against each opponent, half as first player
    seed: int  # draws the games
    # The Elo estimate's settings, None when `eval.elo` is off: the anchor opponent, a ratings
    # file, and the config's game name and kwargs (a preset such as "gomoku_6x6_k4" is
    # `Gomoku` named "gomoku" with the preset's board, which the game object's name would lose).
    elo: dict | None


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
    fori_loop; measured 690 vs 31 ms per Connect Four update), and unrolling many updates
    compiles slowly. So a compiled learn step unrolls a chunk of at most 8 updates and the
    host calls it updates_per_iteration / chunk times.
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
    search = make_searcher(config, game, network, explore=True)
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
