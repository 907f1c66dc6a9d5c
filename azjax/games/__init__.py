"""Game registry: `make(name, **kwargs)` returns a game object following `base.Game`.

Game modules are imported when first made, so importing azjax stays fast and a game's
constant tables are built only when it is used.

The registry is also the one place that finds a game's text, pictures and web board: a
registered class's module name is its family ("go" for `azjax.games.go`), and the layers
above keep one module per family under that name (`azjax/games/notation/go.py`,
`azjax/games/render/go.py`, `azjax/apps/serve/boards/go.py`), found by `companion`. Adding a game is
adding its files and its registry line.
"""

import functools
import importlib
import importlib.util
import inspect
from types import ModuleType

from azjax.games.base import Game, State
from azjax.types import UserError

# name -> (module, class, preset keyword options)
_REGISTRY: dict[str, tuple[str, str, dict]] = {
    "connect_four": ("azjax.games.connect_four", "ConnectFour", {}),
    "tic_tac_toe": ("azjax.games.tic_tac_toe", "TicTacToe", {}),
    "gomoku": ("azjax.games.gomoku", "Gomoku", {}),
    "gomoku_15x15": ("azjax.games.gomoku", "Gomoku", {"width": 15, "height": 15, "k": 5}),
    "gomoku_9x9": ("azjax.games.gomoku", "Gomoku", {"width": 9, "height": 9, "k": 5}),
    "gomoku_8x8": ("azjax.games.gomoku", "Gomoku", {"width": 8, "height": 8, "k": 5}),
    "gomoku_6x6_k4": ("azjax.games.gomoku", "Gomoku", {"width": 6, "height": 6, "k": 4}),
    "othello": ("azjax.games.othello", "Othello", {}),
    "othello_6x6": ("azjax.games.othello", "Othello", {"size": 6}),
    "go_9x9": ("azjax.games.go", "Go", {"size": 9}),
    "go_13x13": ("azjax.games.go", "Go", {"size": 13}),
    "go_19x19": ("azjax.games.go", "Go", {"size": 19}),
    "xiangqi": ("azjax.games.xiangqi", "Xiangqi", {}),
    "hex_5x5": ("azjax.games.hex", "Hex", {"size": 5}),
    "hex_7x7": ("azjax.games.hex", "Hex", {"size": 7}),
    "hex_11x11": ("azjax.games.hex", "Hex", {"size": 11}),
}


def names() -> list[str]:
    """Returns the registered game names, sorted."""
    return sorted(_REGISTRY)


def game_class(name: str) -> type:
    """The class registered as `name` (imports its module).

    Raises:
      UserError: `name` is not a registered game.
    """
    if name not in _REGISTRY:
        raise UserError(f"unknown game {name!r}; known games: {', '.join(names())}")
    module_name, class_name, _ = _REGISTRY[name]
    return getattr(importlib.import_module(module_name), class_name)


def family(game_class: type) -> str | None:
    """The family of a game class: the module name ("go" for `azjax.games.go`) of the
    nearest class along its MRO that the registry makes (so subclasses share it), or None
    for a class outside the registry."""
    registered = {(module, class_name) for module, class_name, _ in _REGISTRY.values()}
    for cls in game_class.__mro__:
        if (cls.__module__, cls.__qualname__) in registered:
            return cls.__module__.rpartition(".")[2]
    return None


def family_of(game) -> str | None:
    """The family of a game (an instance): "go" for every Go board size, "xiangqi", ...;
    what per-game behaviour keys on, never the game's name."""
    return family(type(game))


@functools.cache
def companion(game_class: type, package: str) -> ModuleType | None:
    """The module of `package` named after a game class's family, imported: its text
    (`companion(Go, "azjax.games.notation")` is `azjax.games.notation.go`), its pictures or its web
    board. None where the class has no family or `package` no module for it."""
    name = family(game_class)
    if name is None or importlib.util.find_spec(f"{package}.{name}") is None:
        return None
    return importlib.import_module(f"{package}.{name}")


def make(name: str, **kwargs) -> Game:
    """Builds the game registered as `name`, with its preset options updated by `kwargs`.

    Raises:
      UserError: `name` is not a registered game, or it does not take an option or refuses
        its value (ValueError); any other error of its constructor is a bug and keeps its
        traceback.
    """
    cls = game_class(name)
    options = {**_REGISTRY[name][2], **kwargs}
    try:
        inspect.signature(cls).bind(**options)
    except TypeError as error:  # an option the game does not take
        raise UserError(f"bad options for game {name!r}: {error}") from None
    try:
        return cls(**options)
    except ValueError as error:  # a value the game refuses; any other error is a bug
        raise UserError(f"bad options for game {name!r}: {error}") from None


def check(game, **options) -> list[str]:
    """Checks a game (a `Game`, or a registered name) against the game contract by random
    play, under jit and vmap: episode rules, legal masks, rewards, observations and their
    storage, eager against compiled, symmetries, notation and pictures; with
    `openspiel="NAME"`, every game replayed in OpenSpiel. Returns the names of the checks
    passed; raises `ContractError` at the first rule broken. (`azjax.games.conformance`,
    imported on first use: it imports the games' text and pictures, which import this
    registry.)"""
    return importlib.import_module("azjax.games.conformance").check(game, **options)


__all__ = ["Game", "State", "check", "companion", "family", "game_class", "make", "names"]
