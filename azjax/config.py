"""Experiment configs: defaults, loading `get_config()` files, command-line overrides.

Configs are `ml_collections.ConfigDict`s. They never enter jitted code: factories read the
Python numbers they need and close over them.
"""

import ast
import difflib
import inspect
import json
from pathlib import Path

import ml_collections

# The key tables (resumable, gating, added, tunable), re-exported.
from azjax.config_keys import (  # noqa: F401
    ADDED_KEYS,
    GATING_KEYS,
    OLD_VALUES,
    RESUMABLE_KEYS,
    TUNABLE_KEYS,
)

# Finding and loading the files, re-exported (`config.find_experiment` and the rest).
from azjax.experiment_files import (  # noqa: F401
    EXPERIMENTS_DIR,
    PACKAGE_DIR,
    REPO_ROOT,
    SPACES_DIR,
    experiment_names,
    file_names,
    find_experiment,
    find_file,
    load_module,
    split_variant,
)
from azjax.schema import _game_parameters, flatten, parse_opponent_spec, validate
from azjax.types import UserError

__all__ = [
    "accelerator_config",
    "apply_overrides",
    "base_config",
    "cpu_config",
    "config_differences",
    "evaluation_key",
    "experiment_names",
    "file_names",
    "find_experiment",
    "find_file",
    "flatten",
    "from_dict",
    "load_config",
    "parse_opponent_spec",
    "pipeline_key",
    "read_config_file",
    "to_json",
    "validate",
]


def base_config() -> ml_collections.ConfigDict:
    """Defaults every experiment starts from (sized for Connect Four on a laptop CPU)."""
    config = ml_collections.ConfigDict()
    config.name = "connect_four"
    config.game = "connect_four"
    config.game_kwargs = ml_collections.ConfigDict()
    config.seed = 0

    config.network = ml_collections.ConfigDict()
    config.network.channels = 32
    config.network.num_blocks = 3
    config.network.policy_channels = 2
    config.network.value_channels = 1
    config.network.value_hidden = 64
    # "bfloat16": computes in bfloat16 with float32 parameters, optimizer state, BatchNorm
    # statistics and outputs (TPUs, recent GPUs); "float32" computes everything in float32.
    config.network.dtype = "float32"
    # KataGo's global pooling bias in residual blocks 3, 6, 9, ... (azjax/networks.py).
    config.network.global_pooling = False

    config.search = ml_collections.ConfigDict()
    config.search.algorithm = "puct"  # "puct" (AlphaZero) or "gumbel" (Gumbel MuZero)
    config.search.num_simulations = 32
    config.search.dirichlet_alpha = 1.0  # about 10 / (typical number of legal moves)
    config.search.dirichlet_fraction = 0.25
    config.search.pb_c_init = 1.25
    config.search.pb_c_base = 19652.0
    config.search.max_num_considered_actions = 16
    config.search.gumbel_scale = 1.0
    # Start each search from the subtree the previous one left under the move played (PUCT
    # only, Gumbel ignores it; AlphaGo Zero, AlphaZero_Gomoku): its visits count toward the
    # next move's. On Gomoku 6x6 k4, 10 minutes on 2 CPU cores, its score against
    # 1000-simulation MCTS was 0.940 against 0.895 without (docs/results.md, "Learning faster").
    config.search.tree_reuse = True
    # Each network evaluation in the search sees the position through a random board
    # symmetry (AlphaGo Zero); off by default (the ablation measures it).
    config.search.symmetric_eval = False
    # KataGo's forced playouts with policy target pruning in self-play's PUCT search: k (0:
    # off; KataGo uses 2). A root child short of sqrt(k * prior * visits) visits is visited
    # next, and those forced visits come off the policy target (azjax/forced_playouts.py).
    # At 32 simulations on Gomoku 6x6 it scored 0.075 against MCTS-1000 where the defaults
    # scored 0.885 (docs/results.md): forcing then takes most of each search.
    config.search.forced_playouts = 0.0

    config.selfplay = ml_collections.ConfigDict()
    config.selfplay.batch_size = 128  # games in lockstep
    config.selfplay.num_steps = 16  # plies per iteration in every game
    config.selfplay.temperature_moves = 8  # sample moves for this many plies, then argmax
    # KataGo's playout cap randomization: a ply is a full search with this probability (its
    # positions are trained on), else a cheap one of `cheap_simulations` without noise
    # (played, not stored). 1.0: every ply is full.
    config.selfplay.full_search_fraction = 1.0
    config.selfplay.cheap_simulations = 8
    # AlphaGo Zero's resignation: a game resigns when the mover's searched value and its
    # move's value fall below v_resign (starting at resign_threshold); resign_check_fraction
    # of the games never resign and measure false positives, and v_resign adapts to keep
    # their rate at most resign_false_positives.
    config.selfplay.resign = False
    config.selfplay.resign_threshold = -0.9
    config.selfplay.resign_check_fraction = 0.1
    config.selfplay.resign_false_positives = 0.05
    # Drawn games' positions labelled with this weight times the game's heuristic score of
    # the last position (`Game.adjudicate`: Xiangqi's material) instead of 0; 0: off. Not
    # AlphaZero: a prior for games whose self-play draws everything (docs/results.md, Xiangqi).
    config.selfplay.draw_adjudication = 0.0
    config.selfplay.win_adjudication = 0.0
    config.selfplay.random_move_fraction = 0.0

    config.replay = ml_collections.ConfigDict()
    config.replay.capacity = 60_000
    config.replay.min_size = 2_000  # no updates before the buffer holds this many positions
    config.replay.augment = True  # random board symmetry per sample

    config.learner = ml_collections.ConfigDict()
    config.learner.batch_size = 256
    config.learner.updates_per_iteration = 8
    config.learner.optimizer = "adam"  # "adam" or "sgd" (with momentum)
    config.learner.learning_rate = 1e-3
    config.learner.momentum = 0.9
    config.learner.schedule = "constant"  # "constant", "cosine" or "piecewise"
    config.learner.warmup_steps = 0
    config.learner.decay_steps = 10_000
    config.learner.boundaries = (0,)  # piecewise: multiply by decay_factor at these updates
    config.learner.decay_factor = 0.1
    config.learner.weight_decay = 1e-4
    # loss = value_loss_weight * (z - v)^2 + CE(pi, p) + weight_decay * ||theta||^2
    config.learner.value_loss_weight = 1.0
    config.learner.max_grad_norm = 0.0
    # Value target (1 - w) z + w v: the game outcome z mixed with the searched root value v.
    # On Gomoku 6x6 k4 (10 minutes, 2 CPU cores) 0.5 scored 0.935 against 1000-simulation
    # MCTS where 0 scored 0.895 (docs/results.md, "Learning faster"); older runs keep 0.
    config.learner.value_target_mix = 0.5
    # AlphaZero_Gomoku's adaptive learning rate: after each chunk of updates the rate's
    # multiplier shrinks by 1.5 when the KL divergence of the policy before and after it
    # exceeds 2 * kl_target, and grows by 1.5 when below kl_target / 2 (0: off).
    config.learner.kl_target = 0.0
    # KataGo's auxiliary targets (Go): the loss weights of an ownership head (KataGo: 1.5) and
    # a score head, trained on the game's final position (azjax/learner.py). 0: off.
    config.learner.ownership_weight = 0.0
    config.learner.score_weight = 0.0

    config.train = ml_collections.ConfigDict()
    config.train.num_iterations = 300
    config.train.max_minutes = 0.0  # stop after this much wall-clock time (0: no limit)
    config.train.checkpoint_every = 10
    config.train.keep_checkpoints = 3
    # AlphaGo Zero's gating (off in AlphaZero): self-play plays the best network so far, and
    # every `gating_every` iterations the trained network replaces it if it scores at least
    # `gating_threshold` in `gating_games` games against it (see `azjax/gating.py`).
    config.train.gating = False
    config.train.gating_every = 10
    config.train.gating_games = 40  # even: half with each colour
    config.train.gating_threshold = 0.55
    # Where records go besides metrics.jsonl (azjax/trackers.py): "tensorboard", "wandb"
    # (Weights & Biases, project `wandb_project`), "mlflow" (at `mlflow_uri`; "": SQLite in
    # WORKDIR/mlflow.db).
    config.train.loggers = ("tensorboard",)
    config.train.wandb_project = "azjax"
    config.train.mlflow_uri = ""
    # A jax.profiler trace of iterations (first, last) in WORKDIR/profile; (0, 0): none.
    config.train.profile = (0, 0)

    config.eval = ml_collections.ConfigDict()
    config.eval.every = 10  # iterations between evaluations (0: never)
    config.eval.num_games = 64  # per opponent, half with each colour
    config.eval.num_simulations = 32  # the agent's search when evaluated
    # Specs: random, minimax, mcts:N, ladder:N, previous, workdir:PATH, gtp:..., uci:...
    config.eval.opponents = ("random", "mcts:200")
    # `eval/elo` against the fixed opponents (ratings.anchors): rated by a tournament among
    # them at the first evaluation, or from a tournament's ratings file (elo_ratings).
    config.eval.elo = True
    config.eval.elo_anchor = ""  # the anchor at 0; "": the first mcts:N opponent
    config.eval.elo_ratings = ""  # a tournament's ratings.csv rating every fixed opponent
    return config


def cpu_config(name: str, game: str) -> ml_collections.ConfigDict:
    """The recipe the 2-core-CPU variants of the larger games start from: Gomoku 6x6 k4's
    (0.945 against MCTS-1000 after 10 minutes): 32 channels x 3 blocks, 128 games of 16
    plies in lockstep, 32 PUCT simulations, 60,000 positions of replay, 16 Adam updates of
    256 with AlphaZero_Gomoku's KL-adaptive rate; two hours, rated every 100 iterations
    against random and MCTS-1000."""
    config = base_config()
    config.name, config.game = name, game
    config.network.channels = 32
    config.network.num_blocks = 3
    config.network.value_hidden = 64
    config.search.num_simulations = 32
    config.selfplay.batch_size = 128
    config.selfplay.num_steps = 16
    config.replay.capacity = 60_000
    config.replay.min_size = 2_000
    config.learner.batch_size = 256
    config.learner.updates_per_iteration = 16
    config.learner.kl_target = 0.02
    config.train.num_iterations = 10_000
    config.train.max_minutes = 120.0
    config.eval.every = 100
    config.eval.num_games = 64
    config.eval.num_simulations = 32
    config.eval.opponents = ("random", "mcts:1000")
    return config


def accelerator_config() -> ml_collections.ConfigDict:
    """The recipe the accelerator experiments (Go, Xiangqi) start from: AlphaGo Zero's
    (SGD with momentum 0.9, a stepped learning rate, L2 1e-4, a large replay) scaled to one
    accelerator host, with Gumbel search at 32 simulations and 256 games in lockstep."""
    config = base_config()
    config.search.algorithm = "gumbel"
    config.search.num_simulations = 32
    config.search.max_num_considered_actions = 16
    config.selfplay.batch_size = 256
    config.selfplay.num_steps = 16
    config.replay.capacity = 400_000
    config.learner.batch_size = 512
    config.learner.updates_per_iteration = 16
    config.learner.optimizer = "sgd"
    config.learner.learning_rate = 2e-2
    config.learner.momentum = 0.9
    config.learner.schedule = "piecewise"
    config.learner.boundaries = (50_000, 100_000)  # updates
    config.learner.decay_factor = 0.1
    config.learner.weight_decay = 1e-4
    config.train.num_iterations = 10_000
    config.eval.every = 100
    config.eval.num_games = 64
    config.eval.num_simulations = 64
    config.eval.opponents = ("random", "mcts:400")
    return config


def load_config(path: str | None) -> ml_collections.ConfigDict:
    """Loads an experiment's config, validated.

    Args:
      path: an experiment file with `get_config()`, or the name of one of azjax's
        (`connect_four`; `azjax/experiments/`, see `find_file`), or a run's resolved config
        (`RUN/config.json`, or the run directory `RUN`); None: `connect_four`.
        `file.py:variant` (or `name:variant`) calls `get_config("variant")`: one file holds
        the accelerator-sized experiment and its variants (`othello:cpu`).

    Raises:
      UserError: no such file, a file that fails to load, or a config with bad values.
    """
    if path is None:
        path = "connect_four"
    path, variant = split_variant(path)
    candidate = find_experiment(path)
    if candidate.suffix == ".json":
        if variant is not None:
            raise UserError(f"{candidate} is a saved config: it has no variants")
        return read_config_file(candidate)
    if candidate.suffix != ".py":
        raise UserError(f"experiment config {path!r} is not a Python file (.py) or config.json")
    module = load_module(candidate, "experiment")
    if not hasattr(module, "get_config"):
        raise UserError(f"experiment {candidate} has no get_config() function")
    takes_variant = bool(inspect.signature(module.get_config).parameters)
    if variant is not None and not takes_variant:
        raise UserError(f"experiment {candidate} has no variants (its get_config() takes none)")
    try:
        config = module.get_config(variant) if takes_variant else module.get_config()
    except UserError:
        raise
    except Exception as error:
        raise UserError(f"get_config() of {candidate} failed: {error}") from None
    validate(config)
    return config


def _parse_value(key: str, text: str, current):
    if isinstance(current, bool):
        lowered = text.lower()
        if lowered in ("true", "1", "yes"):
            return True
        if lowered in ("false", "0", "no"):
            return False
        raise UserError(f"config key {key!r} expects a bool (true/false), got {text!r}")
    if isinstance(current, str):
        return text
    if isinstance(current, float):
        try:
            return float(text)  # also "1e-3", "nan" and "inf" (the schema refuses the last two)
        except ValueError:
            raise UserError(f"config key {key!r} expects float, got {text!r}") from None
    value = _literal(text)
    if isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if isinstance(current, tuple) and isinstance(value, list | tuple | str | int | float):
        value = tuple(value) if isinstance(value, list | tuple) else (value,)
    if type(value) is not type(current):
        raise UserError(f"config key {key!r} expects {type(current).__name__}, got {text!r}")
    return value


def _literal(text: str):
    """A Python literal (number, bool, tuple, ...) or, failing that, the text itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def _set_game_option(config: ml_collections.ConfigDict, key: str, name: str, text: str) -> None:
    parameters = _game_parameters(config)
    if name not in parameters:
        close = difflib.get_close_matches(name, list(parameters), n=1)
        hint = f"; did you mean 'game_kwargs.{close[0]}'?" if close else ""
        known = ", ".join(parameters) or "none"
        raise UserError(
            f"unknown config key {key!r}: game {config.game!r} takes the options {known}{hint}"
        )
    current = config.game_kwargs.get(name, parameters[name].default)
    if current is None or current is inspect.Parameter.empty:
        value = _literal(text)  # no default to type it by: the game's constructor checks it
    else:
        value = _parse_value(key, text, current)
    with config.game_kwargs.unlocked():
        config.game_kwargs[name] = value


def apply_overrides(config: ml_collections.ConfigDict, overrides: dict[str, str]):
    """Sets `config.a.b = value` for each `a.b=value`, typed like the existing value.

    Keys under `game_kwargs` are the game constructor's options (`komi`, `superko`, `k`...),
    checked against its signature.

    Raises:
      UserError: a key that does not exist (with a suggestion) or a bad value.
    """
    for key, text in overrides.items():
        parts = key.split(".")
        if parts[0] == "game_kwargs" and len(parts) == 2:
            _set_game_option(config, key, parts[1], text)
            continue
        node = config
        for depth, part in enumerate(parts):
            children = list(node.keys()) if isinstance(node, ml_collections.ConfigDict) else []
            if part not in children:
                prefix = ".".join(parts[:depth])
                known = [f"{prefix}.{c}" if prefix else c for c in children]
                close = difflib.get_close_matches(key, known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise UserError(f"unknown config key {key!r}{hint}")
            if depth < len(parts) - 1:
                node = node[part]
        current = node[parts[-1]]
        if isinstance(current, ml_collections.ConfigDict):
            raise UserError(f"config key {key!r} is a group; set one of its fields")
        node[parts[-1]] = _parse_value(key, text, current)
    validate(config)
    return config


def pipeline_key(config: ml_collections.ConfigDict) -> str:
    """The config keys that fix a run's compiled step functions, as stable JSON."""
    ignored = set(RESUMABLE_KEYS) | set(TUNABLE_KEYS) | set(GATING_KEYS) | {"name", "seed"}
    flat = flatten(json.loads(to_json(config)))
    return json.dumps({k: v for k, v in flat.items() if k not in ignored}, sort_keys=True)


def evaluation_key(config: ml_collections.ConfigDict) -> str:
    """The config keys that fix a run's evaluation (agent search, opponents, games, seed)."""
    flat = flatten(json.loads(to_json(config)))
    keys = {k: v for k, v in flat.items() if k.startswith(("eval.", "search.")) or k == "seed"}
    return json.dumps(keys, sort_keys=True)


def read_config_file(path: str | Path) -> ml_collections.ConfigDict:
    """Reads and validates a resolved config saved as JSON (a run's config.json).

    Raises:
      UserError: the file is missing, not JSON, not a config object, or holds bad values.
    """
    path = path if hasattr(path, "read_text") else Path(path)  # keeps a gs:// epath.Path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"{path} is corrupt: {error}") from None
    return from_dict(data, source=str(path))


def from_dict(data, *, source: str) -> ml_collections.ConfigDict:
    """A validated config from its JSON form (`to_json`), tuples restored and `ADDED_KEYS`
    that a config saved before them lacks set to their defaults.

    Raises:
      UserError: `data` is not a complete, valid config.
    """
    if not isinstance(data, dict) or not data:
        raise UserError(f"{source} is corrupt: not an azjax config (a JSON object of settings)")
    defaults = flatten(base_config().to_dict(), keep_tuples=True)
    for key in ADDED_KEYS:
        group, field = key.split(".")
        if isinstance(data.get(group), dict):
            data[group].setdefault(field, OLD_VALUES.get(key, defaults[key]))
    for key, value in flatten(data).items():
        if isinstance(defaults.get(key), tuple) and isinstance(value, list):
            group, _, field = key.rpartition(".")
            node = data
            for part in group.split(".") if group else []:
                node = node[part]
            node[field] = tuple(value)
    try:
        config = ml_collections.ConfigDict(data)
        validate(config)
    except UserError as error:
        raise UserError(f"{source} is not a valid azjax config: {error}") from None
    except Exception as error:
        raise UserError(f"{source} is corrupt: {error}") from None
    return config


def to_json(config: ml_collections.ConfigDict) -> str:
    """The resolved config as stable JSON (saved in the workdir)."""
    return json.dumps(config.to_dict(), indent=2, sort_keys=True, default=list)


def config_differences(saved: dict, given: dict) -> list[str]:
    """Keys whose values differ between a saved config and the given one (ignoring keys
    that only affect bookkeeping, listed in RESUMABLE_KEYS), as 'key: saved -> given'."""
    saved_flat, given_flat = flatten(saved), flatten(given)
    differences = []
    for key in sorted(set(saved_flat) | set(given_flat)):
        if key in RESUMABLE_KEYS:
            continue
        if saved_flat.get(key) != given_flat.get(key):
            differences.append(f"{key}: {saved_flat.get(key)!r} -> {given_flat.get(key)!r}")
    return differences
