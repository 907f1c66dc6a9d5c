"""Game registry: `make(name, **kwargs)` returns a game object following `base.Game`.

Game modules are imported when first made, so importing azjax stays fast and a game's
constant tables are built only when it is used.
"""

import importlib

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


def make(name: str, **kwargs) -> Game:
    """Builds the game registered as `name`, with its preset options updated by `kwargs`.

    Raises:
      UserError: `name` is not a registered game or an option is not accepted.
    """
    cls = game_class(name)
    preset = _REGISTRY[name][2]
    try:
        return cls(**{**preset, **kwargs})
    except (TypeError, ValueError) as error:
        raise UserError(f"bad options for game {name!r}: {error}") from None


__all__ = ["Game", "State", "game_class", "make", "names"]
