"""SVG pictures of the games' boards, built as text (no drawing library).

A game's picture is drawn by the module named after its family (`azjax/games/render/go.py` for
`azjax.games.go`, found by `games.companion`), which holds:

    PLAYERS        the names of the first and the second player ("Black", "White")
    MOVE_NUMBERS   whether an animation numbers the stones in the order they were played
    svg(game, state, *, policy, value, last_action, move_numbers, size, piece_letters,
        targets)   the picture (`svg` below)
    clicks(game, action, state)   the points clicked to play an action (`clicks` below)

A game without such a module is drawn by `fallback` (its cells and the pieces of its
observation's first two planes). Grid games share `grid.draw`, games in cells
`cells.CellBoard`, and all the public primitives of `shapes`. Every piece on the board is
one element whose class names "stone" and its colour (`class="stone black"`, `"stone red"`,
`"stone x"`), so a test or a stylesheet can find it. Overlays carry their own classes:
"last-move", "policy-shade", "policy-label", "move-number"; coordinate labels are "coord"
and the status line is "caption".
"""

from types import ModuleType

import numpy as np

from azjax import games
from azjax.games.render import fallback


def drawing(game) -> ModuleType:
    """The module that draws `game`: `azjax/games/render/<family>.py`, else the fallback
    picture (`azjax/games/render/fallback.py`) for a game without one."""
    module = games.companion(type(game), "azjax.games.render")
    return fallback if module is None else module


def player_names(game) -> tuple[str, str]:
    """The names the pictures give the first and the second player ("Black", "White")."""
    return drawing(game).PLAYERS


def clicks(game, action: int, state) -> list[int]:
    """The points a human clicks in turn on the picture to play `action` in `state`: the
    `data-point`s of its targets (`svg(..., targets=True)`). One point in Go, Gomoku,
    Othello and Tic-tac-toe, a column in Connect Four, origin then target in Xiangqi; none
    for a move with no place on the board (a pass), which the web board makes a button.
    """
    return drawing(game).clicks(game, int(action), state)


def svg(
    game,
    state,
    *,
    policy=None,
    value: float | None = None,
    last_action: int | None = None,
    move_numbers=None,
    size: int = 360,
    piece_letters: bool = False,
    targets: bool = False,
) -> str:
    """An SVG picture of an unbatched `state` of `game`, in the game's own look.

    Args:
      game: a game from `azjax.games.make`.
      state: an unbatched state of that game.
      policy: [A] probabilities; a shade and a percentage on each action of at least 1%
        (Xiangqi: arrows for the five likeliest moves).
      value: the value for the player to move, shown in the caption.
      last_action: the action that led to `state` (played by the player not to move); marked.
      move_numbers: {action: number} or an [A] int array (0 = none), drawn on the points
        (Go and Gomoku).
      size: width of the picture in pixels.
      piece_letters: Xiangqi pieces labelled with FEN letters (K A B N R C P, lowercase for
        Black) instead of Chinese characters, for fonts without them.
      targets: an invisible box of class "target" over each place a move is clicked on,
        its `data-point` the point `clicks` names (the web board).

    Returns:
      The SVG document as a string.
    """
    return drawing(game).svg(
        game,
        state,
        policy=None if policy is None else np.asarray(policy, np.float64).reshape(-1),
        value=value,
        last_action=last_action,
        move_numbers=move_numbers,
        size=size,
        piece_letters=piece_letters,
        targets=targets,
    )
