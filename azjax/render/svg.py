"""SVG pictures of the games' boards, built as text (no drawing library).

Every piece on the board is one element whose class names "stone" and its colour
(`class="stone black"`, `"stone red"`, `"stone x"`), so a test or a stylesheet can find
it. Overlays carry their own classes: "last-move", "policy-shade", "policy-label",
"move-number"; coordinate labels are "coord" and the status line is "caption".
"""

import numpy as np

from azjax.render.shapes import (
    _FELT,
    _GO_LETTERS,
    _GO_WOOD,
    _LOWER,
    _UNIT,
    _WOOD,
    _Canvas,
    _caption,
    _circle,
    _line,
    _numbers,
    _pass_label,
    _policy_label,
    _rect,
    _target,
    _text,
)
from azjax.render.xiangqi import _xiangqi


def _grid_game(
    game, state, *, policy, value, last_action, move_numbers, size, style, targets
) -> str:
    """Go and Gomoku: stones on the intersections of a grid, coordinates on the sides."""
    board = np.asarray(state.board)
    if style == "go":
        rows = cols = game.size
        col_names, background = _GO_LETTERS[:cols], _GO_WOOD
        colours = ("Black", "White")
    else:
        rows, cols = game.height, game.width
        col_names, background = _LOWER[:cols], _WOOD
        colours = ("Black", "White")
    margin = 1.25 * _UNIT
    canvas = _Canvas(2 * margin + (cols - 1) * _UNIT, 2 * margin + (rows - 1) * _UNIT)

    def at(point):
        row, col = divmod(int(point), cols)
        return margin + col * _UNIT, margin + row * _UNIT

    for row in range(rows):
        y = margin + row * _UNIT
        canvas.add(_line(margin, y, canvas.width - margin, y))
        canvas.add(_text(margin * 0.35, y, rows - row, cls="coord", size=12))
        canvas.add(_text(canvas.width - margin * 0.35, y, rows - row, cls="coord", size=12))
    for col in range(cols):
        x = margin + col * _UNIT
        canvas.add(_line(x, margin, x, canvas.height - margin))
        canvas.add(_text(x, margin * 0.35, col_names[col], cls="coord", size=12))
        canvas.add(_text(x, canvas.height - margin * 0.35, col_names[col], cls="coord", size=12))
    for row, col in _star_points(rows, cols):
        canvas.add(_circle(*at(row * cols + col), 3.5, fill="#000"))

    num_points = rows * cols
    if policy is not None:
        for point in np.flatnonzero(policy[:num_points] >= 0.01):
            x, y = at(point)
            p = float(policy[point])
            canvas.add(
                _circle(
                    x, y, 0.45 * _UNIT, cls="policy-shade", fill="#1e90ff", opacity=0.2 + 0.6 * p
                )
            )
    for point in np.flatnonzero(board[:num_points]):
        x, y = at(point)
        black = board[point] > 0
        canvas.add(
            _circle(
                x,
                y,
                0.47 * _UNIT,
                cls=f"stone {'black' if black else 'white'}",
                fill="#111" if black else "#f8f8f8",
                stroke="#000",
                width=1.0,
            )
        )
    for point, number in _numbers(move_numbers, num_points).items():
        x, y = at(point)
        fill = "#fff" if board[point] > 0 else "#000"
        canvas.add(_text(x, y, number, cls="move-number", size=14, fill=fill))
    if policy is not None:
        for point in np.flatnonzero(policy[:num_points] >= 0.01):
            x, y = at(point)
            fill = "#ff0" if board[point] > 0 else "#00008b"
            canvas.add(_policy_label(x, y, policy[point], fill=fill))
    extra = _pass_label(policy, num_points)
    if last_action is not None:
        if int(last_action) >= num_points:
            extra += " · last: pass"
            canvas.add(f'<g class="last-move" data-action="{int(last_action)}"/>')
        else:
            x, y = at(last_action)
            ring = "#fff" if board[int(last_action)] > 0 else "#d00"
            canvas.add(_circle(x, y, 0.22 * _UNIT, cls="last-move", stroke=ring, width=2.5))
    if targets:
        for point in range(num_points):
            x, y = at(point)
            canvas.add(_target(x - _UNIT / 2, y - _UNIT / 2, _UNIT, _UNIT, point))
    return canvas.finish(_caption(colours, state, value, extra), size, background)


def _star_points(rows: int, cols: int) -> list[tuple[int, int]]:
    if rows != cols:
        return []
    edge = 2 if rows < 13 else 3
    if rows in (9, 13):
        lines = (edge, rows - 1 - edge)
        return [(r, c) for r in lines for c in lines] + [(rows // 2, rows // 2)]
    if rows in (15, 19):
        lines = (edge, rows // 2, rows - 1 - edge)
        points = [(r, c) for r in lines for c in lines]
        return (
            points
            if rows == 19
            else [p for p in points if 1 not in map(lines.index, p)] + [(rows // 2, rows // 2)]
        )
    return []


def _cell_game(
    game, state, *, policy, value, last_action, move_numbers, size, style, targets
) -> str:
    """Tic-tac-toe, Othello and Connect Four: pieces in the cells of a rectangle."""
    board = np.asarray(state.board)
    if style == "tic_tac_toe":
        rows = cols = 3
    elif style == "othello":
        rows = cols = int(round(len(board) ** 0.5))
    else:
        rows, cols = 6, 7
    margin = 0.7 * _UNIT
    canvas = _Canvas(2 * margin + cols * _UNIT, 2 * margin + rows * _UNIT)
    background = {"tic_tac_toe": "#fff", "othello": "#fff", "connect_four": "#fff"}[style]

    def at(point):
        row, col = divmod(int(point), cols)
        return margin + (col + 0.5) * _UNIT, margin + (row + 0.5) * _UNIT

    num_points = rows * cols
    if style == "othello":
        canvas.add(_rect(margin, margin, cols * _UNIT, rows * _UNIT, fill=_FELT))
        for i in range(rows + 1):
            canvas.add(_line(margin, margin + i * _UNIT, margin + cols * _UNIT, margin + i * _UNIT))
            canvas.add(_line(margin + i * _UNIT, margin, margin + i * _UNIT, margin + rows * _UNIT))
        for col in range(cols):
            canvas.add(_text(margin + (col + 0.5) * _UNIT, margin / 2, _LOWER[col], cls="coord"))
        for row in range(rows):
            canvas.add(_text(margin / 2, margin + (row + 0.5) * _UNIT, row + 1, cls="coord"))
        colours = ("Black", "White")
    elif style == "connect_four":
        canvas.add(_rect(margin, margin, cols * _UNIT, rows * _UNIT, fill="#1f4fbf", rx=8))
        for point in range(num_points):
            canvas.add(_circle(*at(point), 0.4 * _UNIT, fill="#fff"))
        for col in range(cols):
            x = margin + (col + 0.5) * _UNIT
            canvas.add(_text(x, canvas.height - margin / 2, col + 1, cls="coord"))
        colours = ("Red", "Yellow")
    else:
        for i in (1, 2):
            canvas.add(
                _line(margin, margin + i * _UNIT, margin + 3 * _UNIT, margin + i * _UNIT, width=2)
            )
            canvas.add(
                _line(margin + i * _UNIT, margin, margin + i * _UNIT, margin + 3 * _UNIT, width=2)
            )
        for point in range(num_points):
            x, y = at(point)
            canvas.add(
                _text(
                    x - 0.38 * _UNIT, y - 0.36 * _UNIT, point + 1, cls="coord", size=8, fill="#999"
                )
            )
        colours = ("X", "O")

    if policy is not None:
        for action in np.flatnonzero(
            policy[: cols if style == "connect_four" else num_points] >= 0.01
        ):
            p = float(policy[action])
            if style == "connect_four":
                x0, y0, w, h = margin + action * _UNIT, margin, _UNIT, rows * _UNIT
            else:
                x, y = at(action)
                x0, y0, w, h = x - _UNIT / 2, y - _UNIT / 2, _UNIT, _UNIT
            canvas.add(
                _rect(x0, y0, w, h, fill="#1e90ff", cls="policy-shade", opacity=0.15 + 0.5 * p)
            )
    for point in np.flatnonzero(board[:num_points]):
        x, y = at(point)
        first = board[point] > 0
        if style == "tic_tac_toe":
            colour = "x" if first else "o"
            d = 0.28 * _UNIT
            shape = (
                _line(x - d, y - d, x + d, y + d, stroke="#c00", width=4)
                + _line(x - d, y + d, x + d, y - d, stroke="#c00", width=4)
                if first
                else _circle(x, y, d, stroke="#00c", width=4)
            )
            canvas.add(f'<g class="stone {colour}">{shape}</g>')
        elif style == "othello":
            colour = "black" if first else "white"
            canvas.add(
                _circle(
                    x,
                    y,
                    0.42 * _UNIT,
                    cls=f"stone {colour}",
                    fill="#111" if first else "#f8f8f8",
                    stroke="#000",
                )
            )
        else:
            colour = "red" if first else "yellow"
            canvas.add(
                _circle(
                    x,
                    y,
                    0.4 * _UNIT,
                    cls=f"stone {colour}",
                    fill="#d62728" if first else "#f5d000",
                    stroke="#333",
                )
            )
    if policy is not None:
        for action in np.flatnonzero(
            policy[: cols if style == "connect_four" else num_points] >= 0.01
        ):
            if style == "connect_four":
                x, y = margin + (action + 0.5) * _UNIT, margin / 2
                fill = "#000"
            else:
                x, y = at(action)
                fill = "#ff0" if style == "othello" else "#00008b"
            canvas.add(_policy_label(x, y, policy[action], fill=fill))
    extra = _pass_label(policy, num_points) if style == "othello" else ""
    if last_action is not None:
        action = int(last_action)
        if style == "connect_four":
            filled = np.flatnonzero(board.reshape(rows, cols)[:, action])
            point = int(filled[0]) * cols + action if len(filled) else None
        else:
            point = action if action < num_points else None
        if point is None:
            extra += " · last: pass"
            canvas.add(f'<g class="last-move" data-action="{action}"/>')
        else:
            x, y = at(point)
            canvas.add(_circle(x, y, 0.12 * _UNIT, cls="last-move", fill="#ff8c00", stroke="#000"))
    if targets and style == "connect_four":  # a click anywhere in a column drops a piece
        for col in range(cols):
            canvas.add(_target(margin + col * _UNIT, margin, _UNIT, rows * _UNIT, col))
    elif targets:
        for point in range(num_points):
            x, y = at(point)
            canvas.add(_target(x - _UNIT / 2, y - _UNIT / 2, _UNIT, _UNIT, point))
    return canvas.finish(_caption(colours, state, value, extra), size, background)


_PLAYER_NAMES = {
    "Go": ("Black", "White"),
    "Gomoku": ("Black", "White"),
    "Othello": ("Black", "White"),
    "TicTacToe": ("X", "O"),
    "ConnectFour": ("Red", "Yellow"),
    "Xiangqi": ("Red", "Black"),
}


def player_names(game) -> tuple[str, str]:
    """The names the pictures give the first and the second player ("Black", "White")."""
    return _PLAYER_NAMES.get(type(game).__name__, ("first player", "second player"))


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

    Returns:
      The SVG document as a string.
    """
    kind = type(game).__name__
    policy = None if policy is None else np.asarray(policy, np.float64).reshape(-1)
    overlays = dict(
        policy=policy,
        value=value,
        last_action=last_action,
        move_numbers=move_numbers,
        size=size,
        targets=targets,
    )
    if kind == "Go":
        return _grid_game(game, state, style="go", **overlays)
    if kind == "Gomoku":
        return _grid_game(game, state, style="gomoku", **overlays)
    if kind == "Xiangqi":
        return _xiangqi(game, state, piece_letters=piece_letters, **overlays)
    styles = {"TicTacToe": "tic_tac_toe", "Othello": "othello", "ConnectFour": "connect_four"}
    if kind in styles:
        return _cell_game(game, state, style=styles[kind], **overlays)
    raise ValueError(f"no SVG picture for games of type {kind}")
