"""Experiment configs: loading `get_config()` files and saved configs, command-line overrides,
cache keys. The defaults and recipes are in `azjax.config.recipes`, re-exported here.

Configs are `ml_collections.ConfigDict`s. They never enter jitted code: factories read the
Python numbers they need and close over them.
"""

import ast
import difflib
import inspect
import json
from pathlib import Path

import ml_collections

# Finding and loading the files, re-exported (`config.find_experiment` and the rest).
from azjax.config.files import (  # noqa: F401
    EXPERIMENTS_DIR,
    experiment_names,
    file_names,
    find_experiment,
    find_file,
    load_module,
    split_variant,
)

# The key tables (resumable, gating, added, tunable), re-exported.
from azjax.config.keys import (  # noqa: F401
    ADDED_KEYS,
    GATING_KEYS,
    KEYS,
    OLD_VALUES,
    RESUMABLE_KEYS,
    TUNABLE_KEYS,
    config_text,
    flatten,
)
from azjax.config.opponents import parse_opponent_spec

# The defaults and the CPU and accelerator recipes, re-exported (`config.base_config`).
from azjax.config.recipes import accelerator_config, base_config, cpu_config
from azjax.config.schema import _game_parameters, validate
from azjax.paths import read_json, workdir_path
from azjax.types import UserError

__all__ = [
    "accelerator_config",
    "apply_overrides",
    "base_config",
    "cpu_config",
    "config_differences",
    "experiment_names",
    "file_names",
    "find_experiment",
    "find_file",
    "flatten",
    "from_dict",
    "load_config",
    "load_run_config",
    "parse_opponent_spec",
    "pipeline_key",
    "read_config_file",
    "to_json",
    "validate",
]


def load_config(path: str | None) -> ml_collections.ConfigDict:
    """Loads an experiment's config, validated.

    Args:
      path: an experiment file with `get_config()`, or the name of one of azjax's
        (`connect_four`; `experiments/`, see `find_file`), or a run's resolved config
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


def _set_game_option(config: ml_collections.ConfigDict, key: str, text: str) -> None:
    """`game_kwargs.NAME=VALUE` or `selfplay.game_kwargs.NAME=VALUE`, checked against the
    game constructor's signature."""
    group, _, name = key.rpartition(".")
    options = config.selfplay.game_kwargs if group == "selfplay.game_kwargs" else config.game_kwargs
    parameters = _game_parameters(config)
    if name not in parameters:
        close = difflib.get_close_matches(name, list(parameters), n=1)
        hint = f"; did you mean '{group}.{close[0]}'?" if close else ""
        known = ", ".join(parameters) or "none"
        raise UserError(
            f"unknown config key {key!r}: game {config.game!r} takes the options {known}{hint}"
        )
    current = options.get(name, config.game_kwargs.get(name, parameters[name].default))
    if current is None or current is inspect.Parameter.empty or text == "None":
        # No default to type it by, or None (a rule turned off): the game's constructor checks it.
        value = _literal(text)
    else:
        value = _parse_value(key, text, current)
    with options.unlocked():
        options[name] = value


def apply_overrides(config: ml_collections.ConfigDict, overrides: dict[str, str]):
    """Sets `config.a.b = value` for each `a.b=value`, typed like the existing value.

    Keys under `game_kwargs` and `selfplay.game_kwargs` are the game constructor's options
    (`komi`, `superko`, `k`...), checked against its signature.

    Raises:
      UserError: a key that does not exist (with a suggestion) or a bad value.
    """
    for key, text in overrides.items():
        parts = key.split(".")
        if parts[:-1] in (["game_kwargs"], ["selfplay", "game_kwargs"]):
            _set_game_option(config, key, text)
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


def load_run_config(workdir: str | Path) -> ml_collections.ConfigDict:
    """The resolved config a run saved (`config.json`) as a ConfigDict.

    Raises:
      UserError: no readable config there.
    """
    path = workdir_path(workdir) / "config.json"
    if not path.is_file():
        raise UserError(f"{workdir} is not a run directory (no config.json)")
    return read_config_file(path)


def read_config_file(path: str | Path) -> ml_collections.ConfigDict:
    """Reads and validates a resolved config saved as JSON (a run's config.json).

    Raises:
      UserError: the file is missing, not JSON, not a config object, or holds bad values.
    """
    path = path if hasattr(path, "read_text") else Path(path)  # keeps a gs:// epath.Path
    try:
        data = read_json(path)  # a damaged file (deep nesting, huge numbers): one line
    except FileNotFoundError:
        raise UserError(f"{path} does not exist") from None
    except OSError as error:  # a cloud object that cannot be read
        raise UserError(f"{path} is corrupt: {error}") from None
    return from_dict(data, source=str(path))


# The groups whose every key was added after runs were saved (`records`).
_ADDED_GROUPS = {k.split(".")[0] for k in ADDED_KEYS} - {
    k.split(".")[0] for k in KEYS if k not in ADDED_KEYS
}


def from_dict(data, *, source: str) -> ml_collections.ConfigDict:
    """A validated config from its JSON form (`to_json`), tuples restored and `ADDED_KEYS`
    that a config saved before them lacks set to their defaults.

    Raises:
      UserError: `data` is not a complete, valid config.
    """
    if not isinstance(data, dict) or not data:
        raise UserError(f"{source} is corrupt: not an azjax config (a JSON object of settings)")
    defaults = flatten(base_config().to_dict(), keep_tuples=True)
    try:
        for key in ADDED_KEYS:
            group, field = key.split(".")
            if group in _ADDED_GROUPS and group not in data:  # a group added whole
                data[group] = {}
            if isinstance(data.get(group), dict):
                old = OLD_VALUES[key] if key in OLD_VALUES else defaults[key]
                data[group].setdefault(field, old)
        for key, value in flatten(data).items():
            if isinstance(defaults.get(key), tuple) and isinstance(value, list):
                group, _, field = key.rpartition(".")
                node = data
                for part in group.split(".") if group else []:
                    node = node[part]
                node[field] = tuple(value)
        config = ml_collections.ConfigDict(data)
        validate(config)
    except UserError as error:
        raise UserError(f"{source} is not a valid azjax config: {error}") from None
    except RecursionError:  # nested deeper than Python's stack, yet read as JSON
        raise UserError(f"{source} is corrupt: nested too deeply") from None
    except Exception as error:
        reason = (str(error).splitlines() or [type(error).__name__])[0]
        raise UserError(f"{source} is corrupt: {reason}") from None
    return config


def to_json(config: ml_collections.ConfigDict) -> str:
    """The resolved config as stable JSON (saved in the workdir)."""
    return config_text(config.to_dict())


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
