"""The records a config becomes, built once per command (`build.make_settings`) and handed
down: `runs/`, `matches/` and `training/` read these and never a config.

`Settings` bundles them: the `Pipeline` and `Hyperparams` of the step functions, the game and
network, a run's bookkeeping (`RunSettings`, with its gating, trackers and game records), its
evaluation (`EvalSettings`) and how its network plays as an agent (`AgentSettings`, with the
search's `SearchSettings`), plus the resolved config as JSON, which a run saves. A record
makes the objects its keys describe (`SearchSettings.searcher`), so a driver below `config/`
builds a search without a config; `Settings.retuned` changes the tunable keys
(population-based training) without one.
"""

import dataclasses
import json

import numpy as np

from azjax.config.keys import TUNABLE_KEYS, config_text
from azjax.core.evaluators import network_evaluator, with_immediate_wins
from azjax.core.networks import Network
from azjax.core.search import SearchParams, make_search
from azjax.core.steps import Hyperparams, Pipeline
from azjax.games import Game
from azjax.types import Searcher


def search_params(tunable: dict) -> SearchParams:
    """The tunable search scalars of `tunable` (config key -> value), as Python floats."""
    # The search scalars among `TUNABLE_KEYS`: `search.FIELD` for each field of SearchParams.
    fields = (f.name for f in dataclasses.fields(SearchParams))
    return SearchParams(**{field: float(tunable[f"search.{field}"]) for field in fields})


def hyperparams(tunable: dict) -> Hyperparams:
    """The tunable scalars (config key -> value, `TUNABLE_KEYS`) as float32 numbers."""
    search = search_params(tunable)
    return Hyperparams(
        search=SearchParams(
            **{f.name: np.float32(getattr(search, f.name)) for f in dataclasses.fields(search)}
        ),
        learning_rate=np.float32(tunable["learner.learning_rate"]),
        weight_decay=np.float32(tunable["learner.weight_decay"]),
        value_loss_weight=np.float32(tunable["learner.value_loss_weight"]),
        temperature_moves=np.int32(tunable["selfplay.temperature_moves"]),
    )


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """The network-guided search of `search.*`, read once; `searcher` builds it."""

    algorithm: str  # "puct" or "gumbel"
    num_simulations: int  # self-play's simulations per move
    max_num_considered_actions: int  # Gumbel's root actions
    gumbel_value_scale: float
    symmetric_eval: bool  # each evaluation through a random symmetry
    win_check: bool  # one ply of lookahead for immediate wins
    tree_reuse: bool  # PUCT's subtree under the move played starts the next search
    forced_playouts: float  # self-play's forced root visits (0: off)
    params: SearchParams  # the tunable scalars, with root noise (`search_params`)

    def params_for(self, *, explore: bool) -> SearchParams:
        """The tunable scalars; `explore=False` turns the root noise (Dirichlet for PUCT,
        Gumbel for Gumbel search) off."""
        if explore:
            return self.params
        return dataclasses.replace(self.params, dirichlet_fraction=0.0, gumbel_scale=0.0)

    def searcher(
        self,
        game: Game,
        network: Network,
        *,
        explore: bool,
        num_simulations: int | None = None,
        return_tree: bool = False,
    ) -> Searcher:
        """The search on `game` guided by `network`.

        Args:
          explore: with root noise (self-play) or without (evaluation, play).
          num_simulations: simulations per move (default: self-play's).
          return_tree: return the search tree too (GTP analysis); such a search starts from
            an empty tree at every call (no tree reuse).
        """
        evaluate = network_evaluator(game, network, symmetric=self.symmetric_eval)
        if self.win_check:
            evaluate = with_immediate_wins(game, evaluate)
        return make_search(
            game,
            evaluate,
            num_simulations=num_simulations or self.num_simulations,
            algorithm=self.algorithm,
            max_num_considered_actions=self.max_num_considered_actions,
            gumbel_value_scale=self.gumbel_value_scale,
            params=self.params_for(explore=explore),
            return_tree=return_tree,
            # Gumbel's sequential halving starts from an empty root: it ignores tree reuse.
            tree_reuse=self.tree_reuse and self.algorithm == "puct" and not return_tree,
            # Self-play's searches only: an agent's move is its most visited either way.
            forced_playouts=self.forced_playouts if explore else 0.0,
        )


@dataclasses.dataclass(frozen=True)
class AgentSettings:
    """How a run's network plays as an agent (`matches.agent`): its evaluation search's
    simulations, and self-play's move choice for playing as training does."""

    simulations: int  # `eval.num_simulations`
    temperature_moves: int  # plies sampled from the search policy in self-play
    sample_search_action: bool  # those plies play the search's own action (Gumbel)
    search: SearchSettings

    def searcher(
        self,
        game: Game,
        network: Network,
        *,
        num_simulations: int | None = None,
        return_tree: bool = False,
    ) -> Searcher:
        """The search an agent plays with (no noise), at `num_simulations` or `simulations`
        (`return_tree`: as in `SearchSettings.searcher`)."""
        return self.search.searcher(
            game,
            network,
            explore=False,
            num_simulations=num_simulations or self.simulations,
            return_tree=return_tree,
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


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything a command reads from one config, built once (`build.make_settings`)."""

    # The static pieces of the step functions; None where a saved run is read for its agent
    # alone (`config.saved`), which needs no self-play.
    pipeline: Pipeline | None
    hyper: Hyperparams  # their tunable scalars
    game: Game  # the rules of `game_kwargs`: evaluations and agents (`Pipeline.eval_game`)
    network: Network  # the run's network (`Pipeline.network`)
    run: RunSettings  # bookkeeping: budget, checkpoints, gating, trackers, records
    eval: EvalSettings  # training's evaluation
    agent: AgentSettings  # how the network plays as an agent, and its search
    tunable: dict  # config key -> value for each of `TUNABLE_KEYS`, in that order
    config_json: str  # the resolved config as stable JSON (config.json, checkpoints)
    pipeline_key: str  # `config.pipeline_key`: configs with the same share compiled steps

    @property
    def evaluation_key(self) -> tuple:
        """What fixes the evaluation's compiled matches and results (opponents, games, seed,
        the agent's search), for sharing them between runs of a process."""
        return (repr(self.eval), repr(self.agent.search), self.agent.simulations)

    def retuned(self, values: dict) -> "Settings":
        """These settings with the tunable keys of `values` (config key -> value) set: the
        hyperparameters, the agent's search scalars and the saved config."""
        tunable = dict(self.tunable)
        tree = json.loads(self.config_json)
        for key, value in values.items():
            if key not in tunable:
                raise KeyError(f"{key} is not a tunable key ({', '.join(TUNABLE_KEYS)})")
            if isinstance(tunable[key], float) and type(value) is int:
                value = float(value)  # as a config's float key takes an int
            tunable[key] = value
            group, field = key.split(".")
            tree[group][field] = value
        search = dataclasses.replace(self.agent.search, params=search_params(tunable))
        agent = dataclasses.replace(
            self.agent,
            search=search,
            temperature_moves=int(tunable["selfplay.temperature_moves"]),
        )
        return dataclasses.replace(
            self,
            hyper=hyperparams(tunable),
            agent=agent,
            tunable=tunable,
            config_json=config_text(tree),
        )
