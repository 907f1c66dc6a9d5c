"""Game registry: `make(name, **kwargs)` returns a game object following `base.Game`."""

from collections.abc import Callable

from azjax.games.base import Game, State
from azjax.games.connect_four import ConnectFour
from azjax.games.tic_tac_toe import TicTacToe
from azjax.types import UserError

_REGISTRY: dict[str, Callable[..., Game]] = {
    "connect_four": ConnectFour,
    "tic_tac_toe": TicTacToe,
}


def names() -> list[str]:
    """Returns the registered game names, sorted."""
    return sorted(_REGISTRY)


def make(name: str, **kwargs) -> Game:
    """Builds the game registered as `name` with its keyword options.

    Raises:
      UserError: `name` is not a registered game or an option is not accepted.
    """
    if name not in _REGISTRY:
        raise UserError(f"unknown game {name!r}; known games: {', '.join(names())}")
    try:
        return _REGISTRY[name](**kwargs)
    except TypeError as error:
        raise UserError(f"bad options for game {name!r}: {error}") from None


__all__ = ["Game", "State", "make", "names"]
