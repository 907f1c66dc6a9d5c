"""The Xiangqi board as Red sees it: river, palaces, labelled pieces, move arrows."""

import numpy as np

from azjax.games.render.shapes import (
    _UNIT,
    _XIANGQI_BLACK,
    _XIANGQI_FILES,
    _XIANGQI_LETTERS,
    _XIANGQI_RED,
    _Canvas,
    _caption,
    _circle,
    _line,
    _n,
    _policy_label,
    _rect,
    _target,
    _text,
)
from azjax.games.xiangqi_tables import _MOVE_POINTS

PLAYERS = ("Red", "Black")  # the first and the second player, as pictures name them
MOVE_NUMBERS = False  # pieces move: an animation marks the last move only


def svg(
    game, state, *, policy, value, last_action, move_numbers, size, piece_letters, targets
) -> str:
    """Xiangqi as Red sees it: 9 files by 10 ranks, the river, the palaces' diagonals
    (`render.svg`'s overlays; the policy as arrows, no move numbers)."""
    del game, move_numbers
    board = np.asarray(state.board)  # Red's view, row 0 = rank 9
    rows, cols, margin = 10, 9, 1.0 * _UNIT
    canvas = _Canvas(2 * margin + (cols - 1) * _UNIT, 2 * margin + (rows - 1) * _UNIT)

    def at(point):
        row, col = divmod(int(point), cols)
        return margin + col * _UNIT, margin + row * _UNIT

    right, bottom = canvas.width - margin, canvas.height - margin
    river_top, river_bottom = margin + 4 * _UNIT, margin + 5 * _UNIT
    for row in range(rows):
        y = margin + row * _UNIT
        canvas.add(_line(margin, y, right, y))
        canvas.add(_text(margin * 0.35, y, rows - 1 - row, cls="coord"))
    for col in range(cols):
        x = margin + col * _UNIT
        if col in (0, cols - 1):
            canvas.add(_line(x, margin, x, bottom))
        else:
            canvas.add(_line(x, margin, x, river_top), _line(x, river_bottom, x, bottom))
        canvas.add(_text(x, canvas.height - margin * 0.35, _XIANGQI_FILES[col], cls="coord"))
    for top in (0, 7):
        x1, x2 = margin + 3 * _UNIT, margin + 5 * _UNIT
        y1, y2 = margin + top * _UNIT, margin + (top + 2) * _UNIT
        canvas.add(_line(x1, y1, x2, y2), _line(x1, y2, x2, y1))
    canvas.add(
        _text(
            canvas.width / 2,
            (river_top + river_bottom) / 2,
            "river" if piece_letters else "楚 河        漢 界",
            cls="river",
            size=18,
            fill="#7a4a1a",
        )
    )

    player = int(np.asarray(state.current_player))
    if last_action is not None:
        origin, target = _MOVE_POINTS[1 - player, int(last_action)]
        for point in (origin, target):
            x, y = at(point)
            canvas.add(
                _rect(
                    x - 0.45 * _UNIT,
                    y - 0.45 * _UNIT,
                    0.9 * _UNIT,
                    0.9 * _UNIT,
                    fill="#7fd37f",
                    cls="last-move",
                    opacity=0.7,
                )
            )
    for point in np.flatnonzero(board):
        x, y = at(point)
        code = int(board[point])
        red = code > 0
        colour = "#c00" if red else "#111"
        if piece_letters:
            label = _XIANGQI_LETTERS[abs(code) - 1]
            label = label.upper() if red else label
        else:
            label = (_XIANGQI_RED if red else _XIANGQI_BLACK)[abs(code) - 1]
        canvas.add(
            f'<g class="stone {"red" if red else "black"}">'
            + _circle(x, y, 0.44 * _UNIT, fill="#f5deb3", stroke=colour, width=2)
            + _text(x, y, label, cls="piece-label", size=20, fill=colour)
            + "</g>"
        )
    if policy is not None:
        top = [a for a in np.argsort(-policy, kind="stable")[:5] if policy[a] >= 0.01]
        canvas.add(
            '<defs><marker id="arrowhead" markerWidth="3" markerHeight="3" refX="2" refY="3" '
            'viewBox="0 0 6 6" '
            'orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#1e90ff"/></marker></defs>'
        )
        for action in top:
            origin, target = _MOVE_POINTS[player, int(action)]
            (x1, y1), (x2, y2) = at(origin), at(target)
            p = float(policy[action])
            canvas.add(
                f'<line class="policy-shade" x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" '
                f'y2="{_n(y2)}" stroke="#1e90ff" stroke-opacity="{0.4 + 0.5 * p:.2f}" '
                f'stroke-width="5" marker-end="url(#arrowhead)"/>'
            )
            label_x, label_y = (x1 + 2 * x2) / 3, (y1 + 2 * y2) / 3 - 8
            canvas.add(_policy_label(label_x, label_y, p, fill="#00008b", size=12))
    if targets:
        for point in range(rows * cols):
            x, y = at(point)
            canvas.add(_target(x - _UNIT / 2, y - _UNIT / 2, _UNIT, _UNIT, point))
    return canvas.finish(_caption(PLAYERS, state, value), size, "#f0d9a0")


def clicks(game, action: int, state) -> list[int]:
    """The web board's clicks for `action`: the piece's point, then its target's (points as
    Red sees the board, row 0 = rank 9)."""
    del game
    origin, target = _MOVE_POINTS[int(state.current_player), action]
    return [int(origin), int(target)]
