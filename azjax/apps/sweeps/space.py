"""Search spaces: which config keys a sweep varies, over what ranges, judged by which metric.

A space file is a Python file whose `get_space()` returns a `Space`::

    from azjax.apps.sweeps import Choice, Int, LogUniform, Space, Uniform

    def get_space():
        return Space(
            params={
                "learner.learning_rate": LogUniform(1e-4, 1e-2),
                "search.dirichlet_alpha": Uniform(0.1, 1.0),
                "selfplay.temperature_moves": Int(4, 16, step=4),
                "network.num_blocks": Choice([2, 4]),
            },
            sampler="tpe",          # "tpe" (default), "random" or "grid"
            objective=None,         # a metric the runs log; None: eval/elo when rated, else
                                    # the score against the last fixed opponent
            direction="maximize",   # or "minimize"
            pruner=None,            # None (no pruning), "median", "hyperband" or an optuna pruner
        )

Keys are dotted config keys, as `--config.KEY=VALUE` takes them (`game_kwargs.komi` too).
`check` validates a space against an experiment's config before any trial starts: each key
exists, each range suits the key's type and every value it can take passes the config's own
validation (`config.apply_overrides`), and the objective is a metric the runs log.
"""

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

import ml_collections
import optuna

from azjax import config as config_lib
from azjax.apps.sweeps import objective as objective_lib
from azjax.config.schema import _game_parameters
from azjax.types import UserError

SAMPLERS = ("tpe", "random", "grid")
PRUNERS = ("median", "hyperband")
# The packaged sweep space files (one get_space() each).
SPACES_DIR = Path(__file__).resolve().parents[1] / "spaces"
DIRECTIONS = ("maximize", "minimize")


@dataclasses.dataclass(frozen=True)
class LogUniform:
    """A float drawn uniformly in log space from [low, high] (0 < low < high)."""

    low: float
    high: float

    def distribution(self) -> optuna.distributions.BaseDistribution:
        return optuna.distributions.FloatDistribution(self.low, self.high, log=True)

    def samples(self) -> list:
        return [self.low, self.high]

    def check(self, key: str) -> None:
        _check_bounds(key, self, numbers=(int, float))
        if self.low <= 0:
            raise UserError(f"space: {key}: LogUniform needs low > 0, got {self.low}")


@dataclasses.dataclass(frozen=True)
class Uniform:
    """A float drawn uniformly from [low, high]; with `step`, from low, low + step, ..."""

    low: float
    high: float
    step: float | None = None

    def distribution(self) -> optuna.distributions.BaseDistribution:
        return optuna.distributions.FloatDistribution(self.low, self.high, step=self.step)

    def samples(self) -> list:
        return [self.low, self.high]

    def check(self, key: str) -> None:
        _check_bounds(key, self, numbers=(int, float))
        if self.step is not None and not (_is_number(self.step, (int, float)) and self.step > 0):
            raise UserError(f"space: {key}: Uniform's step must be a positive number")
        if self.step is not None:
            count = (self.high - self.low) / self.step
            if abs(count - round(count)) > 1e-8:
                raise UserError(f"space: {key}: high - low must be a multiple of step")

    def grid(self) -> list:
        count = round((self.high - self.low) / self.step)
        return [self.low + index * self.step for index in range(count + 1)]


@dataclasses.dataclass(frozen=True)
class Int:
    """An integer from [low, high] in steps of `step`; `log`: uniform in log space (step 1)."""

    low: int
    high: int
    step: int = 1
    log: bool = False

    def distribution(self) -> optuna.distributions.BaseDistribution:
        return optuna.distributions.IntDistribution(
            self.low, self.high, log=self.log, step=self.step
        )

    def samples(self) -> list:
        return [self.low, self.high]

    def check(self, key: str) -> None:
        _check_bounds(key, self, numbers=(int,))
        if not _is_number(self.step, (int,)) or self.step < 1:
            raise UserError(f"space: {key}: Int's step must be a positive integer")
        if (self.high - self.low) % self.step:
            raise UserError(
                f"space: {key}: Int({self.low}, {self.high}, step={self.step}): high - low "
                "must be a multiple of step"
            )
        if self.log and (self.low <= 0 or self.step != 1):
            raise UserError(f"space: {key}: Int with log=True needs low > 0 and step 1")

    def grid(self) -> list:
        return list(range(self.low, self.high + 1, self.step))


@dataclasses.dataclass(frozen=True)
class Choice:
    """One of `values` (bools, numbers, strings or None), each equally likely a priori."""

    values: Sequence

    def __post_init__(self):
        values = self.values
        if isinstance(values, list | tuple | range):
            object.__setattr__(self, "values", tuple(values))

    def distribution(self) -> optuna.distributions.BaseDistribution:
        return optuna.distributions.CategoricalDistribution(self.values)

    def samples(self) -> list:
        return list(self.values)

    def check(self, key: str) -> None:
        if not isinstance(self.values, tuple) or not self.values:
            raise UserError(f"space: {key}: Choice takes a non-empty list of values")
        for value in self.values:
            if value is not None and not isinstance(value, bool | int | float | str):
                raise UserError(
                    f"space: {key}: Choice values must be bools, numbers, strings or None, "
                    f"got {value!r}"
                )
        if len(set(self.values)) != len(self.values):
            raise UserError(f"space: {key}: Choice has repeated values {list(self.values)}")

    def grid(self) -> list:
        return list(self.values)


Param = LogUniform | Uniform | Int | Choice


@dataclasses.dataclass(frozen=True)
class Space:
    """What a sweep searches.

    Attributes:
      params: config key -> its range (`LogUniform`, `Uniform`, `Int`, `Choice`).
      sampler: "tpe" (Optuna's tree-structured Parzen estimator), "random" or "grid" (every
        combination once; every parameter a `Choice`, an `Int` or a stepped `Uniform`).
      objective: the metric a trial is judged by, its last logged value (`eval/elo`,
        `eval/mcts:200/score`, `loss`, ...); None: `default_objective` of the config.
      direction: "maximize" or "minimize" the objective.
      pruner: None (every trial runs to its budget), "median" (stop a trial whose
        intermediate objective is worse than the median of earlier trials at that
        iteration), "hyperband", or an `optuna.pruners.BasePruner`.
    """

    params: dict
    sampler: str = "tpe"
    objective: str | None = None
    direction: str = "maximize"
    pruner: object = None

    def distributions(self) -> dict[str, optuna.distributions.BaseDistribution]:
        return {key: param.distribution() for key, param in self.params.items()}

    def describe(self) -> dict:
        """The space as JSON-able data, to tell two spaces apart."""
        pruner = self.pruner
        if pruner is not None and not isinstance(pruner, str):
            pruner = type(pruner).__name__
        return {
            "params": {key: repr(param) for key, param in sorted(self.params.items())},
            "sampler": self.sampler,
            "objective": self.objective,
            "direction": self.direction,
            "pruner": pruner,
        }

    def grid(self) -> dict[str, list]:
        """The grid sampler's search space: each parameter's values."""
        return {key: param.grid() for key, param in self.params.items()}


def space_names() -> list[str]:
    """The search spaces shipped with azjax (`azjax/apps/spaces/NAME.py`), sorted."""
    return config_lib.file_names(SPACES_DIR)


def find_space(path: str | Path) -> Path:
    """The space file that `path` names: a file, or the name of one of azjax's
    (`tic_tac_toe`: `azjax/apps/spaces/tic_tac_toe.py`; the old `sweeps/tic_tac_toe.py` too).

    Raises:
      UserError: nothing found.
    """
    return config_lib.find_file(str(path), SPACES_DIR, "sweeps", "space file")


def load_space(path: str | Path) -> Space:
    """The `Space` that `get_space()` of a space file returns.

    Args:
      path: a Python file with `get_space()`, or the name of one of azjax's (`find_space`).

    Raises:
      UserError: a missing file, one that fails to load, no `get_space`, or one that does not
        return a `Space`.
    """
    path = find_space(path)
    module = config_lib.load_module(path, "space file")
    if not callable(getattr(module, "get_space", None)):
        raise UserError(f"space file {path} has no get_space() function")
    try:
        space = module.get_space()
    except Exception as error:
        raise UserError(f"get_space() of {path} failed: {error}") from None
    if not isinstance(space, Space):
        raise UserError(
            f"get_space() of {path} must return an azjax.apps.sweeps.Space, "
            f"not {type(space).__name__}"
        )
    return space


def check(space: Space, config: ml_collections.ConfigDict) -> Space:
    """`space` validated against the base `config`, its objective filled in.

    Raises:
      UserError: (one line) an unknown key (with the closest one), a range of the wrong type
        for its key or with low >= high, a value the config refuses, a grid over a continuous
        range, or an objective the runs do not log.
    """
    if not isinstance(space.params, dict):
        raise UserError("space: params must be a dict {config key: range}")
    if space.sampler not in SAMPLERS:
        raise UserError(
            f"space: sampler must be one of {', '.join(SAMPLERS)}, not {space.sampler!r}"
        )
    if space.direction not in DIRECTIONS:
        raise UserError(f"space: direction must be maximize or minimize, not {space.direction!r}")
    pruner = space.pruner
    if not (pruner is None or pruner in PRUNERS or isinstance(pruner, optuna.pruners.BasePruner)):
        raise UserError(
            f"space: pruner must be None, {', '.join(map(repr, PRUNERS))} or an optuna pruner, "
            f"not {pruner!r}"
        )
    for key, param in space.params.items():
        _check_param(config, key, param)
        if space.sampler == "grid" and not (
            isinstance(param, Choice)
            or (isinstance(param, Int) and not param.log)
            or (isinstance(param, Uniform) and param.step is not None)
        ):
            raise UserError(
                f"space: the grid sampler needs every parameter to be a Choice, an Int or a "
                f"Uniform with a step; {key} is {param!r}"
            )
    objective = space.objective or objective_lib.default_objective(config)
    objective_lib.check_objective(config, objective)
    return dataclasses.replace(space, objective=objective)


def override_text(value) -> str:
    """A parameter value as `apply_overrides` reads it (typed by the key's current value)."""
    return value if isinstance(value, str) else repr(value)


def apply(config: ml_collections.ConfigDict, params: dict) -> ml_collections.ConfigDict:
    """A copy of `config` with the trial's `params` set (and validated)."""
    config = ml_collections.ConfigDict(config.to_dict())
    return config_lib.apply_overrides(config, {k: override_text(v) for k, v in params.items()})


def _check_param(config, key: str, param) -> None:
    if not isinstance(param, LogUniform | Uniform | Int | Choice):
        raise UserError(f"space: {key}: expected LogUniform, Uniform, Int or Choice, got {param!r}")
    if key in ("name",):
        raise UserError("space: `name` is set per trial (trial_NNNN) and cannot be swept")
    current = _current_value(config, key)
    param.check(key)
    kind = _kind(current)
    wrong = None
    if isinstance(param, LogUniform | Uniform) and kind not in ("float", "any"):
        wrong = f"{type(param).__name__} draws floats"
    elif isinstance(param, Int) and kind not in ("int", "any"):
        wrong = "Int draws integers"
    elif isinstance(param, Choice):
        for value in param.values:
            if not _fits(kind, value):
                wrong = f"Choice value {value!r} is a {type(value).__name__}"
                break
    if wrong:
        raise UserError(f"space: {key} holds a {kind} ({current!r}), but {wrong}")
    for value in param.samples():
        try:
            apply(config, {key: value})
        except UserError as error:
            raise UserError(f"space: {key}={value!r}: {error}") from None


def _current_value(config, key: str):
    """The value of `key` in `config` (a game option's default if unset)."""
    parts = key.split(".")
    if parts[0] == "game_kwargs" and len(parts) == 2:
        parameters = _game_parameters(config)
        if parts[1] in config.game_kwargs:
            return config.game_kwargs[parts[1]]
        if parts[1] in parameters:
            default = parameters[parts[1]].default
            return None if default is parameters[parts[1]].empty else default
    else:
        node = config
        for part in parts:
            if not isinstance(node, ml_collections.ConfigDict) or part not in node:
                break
            node = node[part]
        else:
            if isinstance(node, ml_collections.ConfigDict):
                raise UserError(f"space: config key {key!r} is a group; set one of its fields")
            return node
    # Not a key: `apply_overrides` words the error (with the closest key).
    config_lib.apply_overrides(ml_collections.ConfigDict(config.to_dict()), {key: "0"})
    raise UserError(f"space: unknown config key {key!r}")  # not reached


def _kind(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, tuple | list):
        return "tuple"
    return "any"  # a game option without a default: the game's constructor checks it


def _fits(kind: str, value) -> bool:
    if kind == "any":
        return True
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, str)  # str keys; tuples written as text: "('random', 'mcts:200')"


def _is_number(value, types) -> bool:
    return isinstance(value, types) and not isinstance(value, bool) and math.isfinite(value)


def _check_bounds(key: str, param, *, numbers) -> None:
    name = type(param).__name__
    if not (_is_number(param.low, numbers) and _is_number(param.high, numbers)):
        kinds = "integers" if numbers == (int,) else "numbers"
        raise UserError(f"space: {key}: {name}'s low and high must be {kinds}")
    if param.low >= param.high:
        raise UserError(f"space: {key}: {name} needs low < high, got {param.low} >= {param.high}")
