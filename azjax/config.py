"""Experiment configs: defaults, loading `get_config()` files, command-line overrides.

Configs are `ml_collections.ConfigDict`s. They never enter jitted code: factories read the
Python numbers they need and close over them.
"""

import ast
import difflib
import importlib.util
import json
from pathlib import Path

import ml_collections

from azjax.types import UserError

REPO_ROOT = Path(__file__).resolve().parent.parent


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

    config.search = ml_collections.ConfigDict()
    config.search.algorithm = "puct"  # "puct" (AlphaZero) or "gumbel" (Gumbel MuZero)
    config.search.num_simulations = 32
    config.search.dirichlet_alpha = 1.0  # about 10 / (typical number of legal moves)
    config.search.dirichlet_fraction = 0.25
    config.search.pb_c_init = 1.25
    config.search.pb_c_base = 19652.0
    config.search.max_num_considered_actions = 16
    config.search.gumbel_scale = 1.0

    config.selfplay = ml_collections.ConfigDict()
    config.selfplay.batch_size = 128  # games in lockstep
    config.selfplay.num_steps = 16  # plies per iteration in every game
    config.selfplay.temperature_moves = 8  # sample moves for this many plies, then argmax

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
    config.learner.max_grad_norm = 0.0

    config.train = ml_collections.ConfigDict()
    config.train.num_iterations = 300
    config.train.max_minutes = 0.0  # stop after this much wall-clock time (0: no limit)
    config.train.checkpoint_every = 10
    config.train.keep_checkpoints = 3

    config.eval = ml_collections.ConfigDict()
    config.eval.every = 10  # iterations between evaluations (0: never)
    config.eval.num_games = 64  # per opponent, half with each colour
    config.eval.num_simulations = 32  # the agent's search when evaluated
    config.eval.opponents = ("random", "mcts:200")
    return config


def load_config(path: str | None) -> ml_collections.ConfigDict:
    """Loads `get_config()` from an experiment file (a path, or a name in experiments/)."""
    if path is None:
        path = "connect_four"
    candidate = Path(path)
    if not candidate.exists() and not path.endswith(".py"):
        for root in (Path.cwd(), REPO_ROOT):
            if (root / "experiments" / f"{path}.py").exists():
                candidate = root / "experiments" / f"{path}.py"
                break
    if not candidate.exists() and not candidate.is_absolute():
        if (REPO_ROOT / candidate).exists():
            candidate = REPO_ROOT / candidate
    if not candidate.is_file():
        raise UserError(f"experiment config {path!r} not found")
    spec = importlib.util.spec_from_file_location(f"azjax_experiment_{candidate.stem}", candidate)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # a broken experiment file is the user's to fix
        raise UserError(f"cannot load experiment {candidate}: {error}") from None
    if not hasattr(module, "get_config"):
        raise UserError(f"experiment {candidate} has no get_config() function")
    config = module.get_config()
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
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = text
    if isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if isinstance(current, tuple) and isinstance(value, list | tuple | str | int | float):
        value = tuple(value) if isinstance(value, list | tuple) else (value,)
    if type(value) is not type(current):
        raise UserError(f"config key {key!r} expects {type(current).__name__}, got {text!r}")
    return value


def apply_overrides(config: ml_collections.ConfigDict, overrides: dict[str, str]):
    """Sets `config.a.b = value` for each `a.b=value`, typed like the existing value.

    Raises:
      UserError: a key that does not exist (with a suggestion) or a value of the wrong type.
    """
    for key, text in overrides.items():
        node, parts = config, key.split(".")
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


def validate(config: ml_collections.ConfigDict) -> None:
    """Checks values that would otherwise fail deep inside a run."""
    from azjax import games  # noqa: PLC0415  (config is importable without the games)

    if config.game not in games.names():
        raise UserError(f"unknown game {config.game!r}; known games: {', '.join(games.names())}")
    positive = [
        "search.num_simulations",
        "selfplay.batch_size",
        "selfplay.num_steps",
        "replay.capacity",
        "learner.batch_size",
        "network.channels",
        "train.checkpoint_every",
        "eval.num_games",
        "eval.num_simulations",
    ]
    for key in positive:
        group, field = key.split(".")
        if config[group][field] <= 0:
            raise UserError(f"config key {key!r} must be positive, got {config[group][field]}")
    if config.search.algorithm not in ("puct", "gumbel"):
        raise UserError(
            f"search.algorithm must be 'puct' or 'gumbel', got {config.search.algorithm!r}"
        )
    if config.learner.optimizer not in ("adam", "sgd"):
        raise UserError(
            f"learner.optimizer must be 'adam' or 'sgd', got {config.learner.optimizer!r}"
        )
    if config.learner.schedule not in ("constant", "cosine", "piecewise"):
        raise UserError("learner.schedule must be constant, cosine or piecewise")
    if config.network.num_blocks < 0:
        raise UserError("network.num_blocks must be >= 0")
    for opponent in config.eval.opponents:
        parse_opponent_spec(opponent)


def parse_opponent_spec(spec: str) -> tuple[str, object]:
    """Parses 'random', 'mcts:N' or 'workdir:PATH' (or a bare existing path) into (kind, arg)."""
    if spec == "random":
        return "random", None
    if spec.startswith("mcts:"):
        count = spec.split(":", 1)[1]
        if not count.isdigit() or int(count) <= 0:
            raise UserError(f"bad opponent {spec!r}: mcts:N needs a positive number of simulations")
        return "mcts", int(count)
    if spec.startswith("workdir:"):
        return "workdir", spec.split(":", 1)[1]
    if Path(spec).is_dir():
        return "workdir", spec
    raise UserError(f"bad opponent {spec!r}; use random, mcts:N or workdir:PATH")


def to_json(config: ml_collections.ConfigDict) -> str:
    """The resolved config as stable JSON (saved in the workdir)."""
    return json.dumps(config.to_dict(), indent=2, sort_keys=True, default=list)


def flatten(tree: dict, prefix: str = "") -> dict[str, object]:
    """Flattens a nested dict into {'a.b': value}, with lists and tuples normalised to lists."""
    items = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            items.update(flatten(value, name + "."))
        else:
            items[name] = list(value) if isinstance(value, list | tuple) else value
    return items


# Keys that may change when resuming without changing what the run computes.
RESUMABLE_KEYS = (
    "train.num_iterations",
    "train.max_minutes",
    "train.checkpoint_every",
    "train.keep_checkpoints",
    "eval.every",
    "eval.num_games",
    "eval.opponents",
    "eval.num_simulations",
)


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
