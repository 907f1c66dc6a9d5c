"""The config schema: every key's type and range, checked in one place before anything is
built (`validate`), and the opponent specs of evaluation.
"""

import difflib
import inspect
import math

import ml_collections

from azjax import games
from azjax.config.keys import KEYS, LOGGERS, MAX_SEED, MAX_SIMULATIONS, flatten  # noqa: F401
from azjax.config.opponents import (  # noqa: F401
    is_engine_spec,
    parse_engine_spec,
    parse_opponent_spec,
    parse_simulations,
)
from azjax.paths import workdir_path
from azjax.types import UserError


def _game_parameters(config: ml_collections.ConfigDict) -> dict[str, inspect.Parameter]:
    """The keyword parameters the constructor of `config.game` takes (its rule options)."""
    if config.game not in games.names():
        raise UserError(f"unknown game {config.game!r}; known games: {', '.join(games.names())}")
    parameters = inspect.signature(games.game_class(config.game)).parameters
    return {
        name: p
        for name, p in parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


# Groups of game constructor options, their keys the game's.
_GAME_OPTIONS = ("game_kwargs.", "selfplay.game_kwargs.")


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_number(key: str, value, kind, low, high, low_open: bool) -> None:
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise UserError(f"config key {key!r} must be an integer, got {value!r}")
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise UserError(f"config key {key!r} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise UserError(f"config key {key!r} must be a finite number, got {value!r}")
    below = value <= low if low_open else value < low
    if below or (high is not None and value > high):
        interval = ("(" if low_open else "[") + f"{low}, " + (f"{high}]" if high else "inf)")
        raise UserError(f"config key {key!r} must be in {interval}, got {_shown(value)}")


def _shown(value) -> str:
    """A number as an error shows it: an integer of more than 30 digits by its length
    (Python refuses to print one of over 4300)."""
    if isinstance(value, int) and abs(value) >= 10**30:
        digits = int(abs(value).bit_length() * math.log10(2)) + 1
        return f"{'-' if value < 0 else ''}an integer of about {digits} digits"
    return repr(value)


def validate(config: ml_collections.ConfigDict) -> None:
    """Checks every value's type and range before anything is built.

    Raises:
      UserError: one line naming the key and what it accepts.
    """
    if not isinstance(config, ml_collections.ConfigDict):
        raise UserError("an experiment's get_config() must return an ml_collections.ConfigDict")
    known = set(KEYS)
    flat = flatten(config.to_dict())
    for key in sorted(flat):
        if key not in known and not key.startswith(_GAME_OPTIONS):
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UserError(f"unknown config key {key!r}{hint}")
    missing = sorted(k for k in known if k not in flat and k + "." not in _GAME_OPTIONS)
    if missing:
        raise UserError(f"config misses the key {missing[0]!r}")
    for name, key in KEYS.items():
        value = flat.get(name)
        if _is_number(key.default):
            _check_number(name, value, type(key.default), key.low, key.high, key.low_open)
        elif key.choices and value not in key.choices:
            raise UserError(
                f"config key {name!r} must be one of {', '.join(key.choices)}, got {value!r}"
            )
        elif isinstance(key.default, bool) and not isinstance(value, bool):
            raise UserError(f"config key {name!r} must be true or false, got {value!r}")
        elif isinstance(key.default, str) and not isinstance(value, str):
            raise UserError(f"config key {name!r} must be a string, got {value!r}")
    if not config.name:
        raise UserError("config key 'name' must be a non-empty string")
    boundaries = flat["learner.boundaries"]
    if not all(isinstance(b, int) and not isinstance(b, bool) and b >= 0 for b in boundaries):
        raise UserError(
            f"config key 'learner.boundaries' must be update counts >= 0, got {boundaries!r}"
        )
    if flat["search.forced_playouts"] > 0 and flat["search.algorithm"] != "puct":
        raise UserError(
            "config key 'search.forced_playouts' needs search.algorithm=puct (Gumbel search "
            "chooses its own root visits)"
        )
    if flat["selfplay.full_search_fraction"] < 1.0 and (
        flat["selfplay.cheap_simulations"] >= flat["search.num_simulations"]
    ):
        raise UserError(
            "config key 'selfplay.cheap_simulations' must be below search.num_simulations "
            f"({flat['search.num_simulations']}) when playout caps are on"
        )
    for key in ("eval.num_games", "train.gating_games"):
        if flat[key] % 2:
            raise UserError(f"config key {key!r} must be even, got {flat[key]}")
    if config.replay.min_size > config.replay.capacity:
        raise UserError(
            f"config key 'replay.min_size' ({config.replay.min_size}) must not exceed "
            f"replay.capacity ({config.replay.capacity})"
        )
    if not isinstance(config.eval.opponents, tuple | list):
        raise UserError("config key 'eval.opponents' must be a tuple of opponent specs")
    for opponent in config.eval.opponents:
        if not isinstance(opponent, str):
            raise UserError(f"config key 'eval.opponents' holds {opponent!r}, not a spec")
        parse_opponent_spec(opponent)
    loggers = config.train.loggers
    if not isinstance(loggers, tuple | list) or not set(loggers) <= set(LOGGERS):
        raise UserError(
            f"config key 'train.loggers' must be a tuple of {', '.join(LOGGERS)}, got {loggers!r}"
        )
    profile = config.train.profile
    if (
        not isinstance(profile, tuple | list)
        or len(profile) != 2
        or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in profile)
        or profile[0] > profile[1]
        or (profile[0] == 0) != (profile[1] == 0)
    ):
        raise UserError(
            "config key 'train.profile' must be (first, last) iterations, 1 <= first <= last, "
            f"or (0, 0) for none; got {profile!r}"
        )
    anchor = config.eval.elo_anchor
    if anchor and anchor not in config.eval.opponents:
        raise UserError(f"config key 'eval.elo_anchor' names {anchor!r}, not an eval opponent")
    if config.eval.elo_ratings and not workdir_path(config.eval.elo_ratings).is_file():
        raise UserError(f"config key 'eval.elo_ratings': no ratings file {config.eval.elo_ratings}")
    parameters = _game_parameters(config)
    for group in ("game_kwargs", "selfplay.game_kwargs"):
        options = config.game_kwargs if group == "game_kwargs" else config.selfplay.game_kwargs
        if not isinstance(options, ml_collections.ConfigDict):
            raise UserError(f"config key {group!r} must be a group of game options")
        for name in options:
            if name not in parameters:
                raise UserError(
                    f"unknown config key '{group}.{name}': game {config.game!r} takes "
                    f"{', '.join(parameters) or 'no options'}"
                )
    game = games.make(config.game, **dict(config.game_kwargs))  # a bad rule option: UserError
    if config.selfplay.game_kwargs:
        selfplay_game = games.make(config.game, **selfplay_game_kwargs(config))
        if selfplay_game.observation_shape != game.observation_shape:
            raise UserError(
                "config key 'selfplay.game_kwargs' changes the observation's shape: the "
                "network must read self-play and evaluation positions alike"
            )


def selfplay_game_kwargs(config: ml_collections.ConfigDict) -> dict:
    """The self-play games' rule options: `game_kwargs` with `selfplay.game_kwargs` over them."""
    return {**dict(config.game_kwargs), **dict(config.selfplay.game_kwargs)}
