"""Text for the games: boards drawn as text, action names, moves typed by humans.

`of(game)` returns the `Notation` of a game (`azjax.games.make(...)`); the functions below
are shortcuts for one call. Notation modules are imported on first use, keyed on the
game's class, so importing azjax stays fast; games without a module of their own get the
default `Notation` (stones from the observation planes, actions named by their ids).

    from azjax import games, notation

    game = games.make("go_9x9")
    state = game.init(jax.random.PRNGKey(0))
    state = game.step(state, notation.parse_action(game, "E5", state))
    print(notation.render(game, state))

Xiangqi positions are read and written as FEN by `azjax.notation.xiangqi.from_fen` and
`to_fen`.
"""

import importlib

from azjax.games.base import Game, State
from azjax.notation.base import Notation

# (game module, game class) -> (notation module, notation class)
_REGISTRY: dict[tuple[str, str], tuple[str, str]] = {
    ("azjax.games.connect_four", "ConnectFour"): (
        "azjax.notation.connect_four",
        "ConnectFourNotation",
    ),
    ("azjax.games.go", "Go"): ("azjax.notation.go", "GoNotation"),
    ("azjax.games.gomoku", "Gomoku"): ("azjax.notation.gomoku", "GomokuNotation"),
    ("azjax.games.othello", "Othello"): ("azjax.notation.othello", "OthelloNotation"),
    ("azjax.games.tic_tac_toe", "TicTacToe"): (
        "azjax.notation.tic_tac_toe",
        "TicTacToeNotation",
    ),
    ("azjax.games.xiangqi", "Xiangqi"): ("azjax.notation.xiangqi", "XiangqiNotation"),
}


def notation_class(game_class: type) -> type[Notation]:
    """The notation class of a game class: that of the nearest registered class in its
    MRO (so subclasses of a game share its notation), else `Notation` (imports its module)."""
    for cls in game_class.__mro__:
        entry = _REGISTRY.get((cls.__module__, cls.__qualname__))
        if entry is not None:
            module_name, class_name = entry
            return getattr(importlib.import_module(module_name), class_name)
    return Notation


def of(game: Game) -> Notation:
    """The notation of `game`."""
    return notation_class(type(game))(game)


def render(game: Game, state: State) -> str:
    """Draws an unbatched `state` of `game` as text, with a status line (`Notation.render`)."""
    return of(game).render(state)


def action_to_string(game: Game, action: int, state: State | None = None) -> str:
    """The name of an action id, played in `state` (`Notation.action_to_string`)."""
    return of(game).action_to_string(action, state)


def parse_action(game: Game, text: str, state: State) -> int:
    """The legal action id a human's `text` names in `state` (`Notation.parse_action`).

    Raises:
      UserError: `text` names no action, or the action is not legal in `state`.
    """
    return of(game).parse_action(text, state)


__all__ = ["Notation", "action_to_string", "notation_class", "of", "parse_action", "render"]
