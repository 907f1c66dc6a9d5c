"""Text for the games: boards drawn as text, action names, moves typed by humans.

`of(game)` returns the `Notation` of a game (`azjax.games.make(...)`); the functions below
are shortcuts for one call. A game's notation is the `NOTATION` class of the module named
after its family (`azjax/games/notation/go.py` for `azjax.games.go`; `games.companion`), imported
on first use so importing azjax stays fast; games without a module of their own get the
default `Notation` (stones from the observation planes, actions named by their ids).

    from azjax import games
    from azjax.games import notation

    game = games.make("go_9x9")
    state = game.init(jax.random.PRNGKey(0))
    state = game.step(state, notation.parse_action(game, "E5", state))
    print(notation.render(game, state))

Xiangqi positions are read and written as FEN by `azjax.games.notation.xiangqi.from_fen` and
`to_fen`.
"""

from azjax import games
from azjax.games.base import Game, State
from azjax.games.notation.base import Notation


def notation_class(game_class: type) -> type[Notation]:
    """The notation class of a game class: the `NOTATION` of its family's module
    (`azjax/games/notation/<family>.py`, found by `games.companion` along the MRO, so subclasses
    of a game share its notation), else `Notation`."""
    module = games.companion(game_class, __name__)
    return Notation if module is None else module.NOTATION


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
