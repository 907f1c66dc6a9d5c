"""The Xiangqi board as Red sees it: river, palaces, labelled pieces, move arrows."""

import numpy as np

from azjax.games.render.shapes import (
    UNIT,
    XIANGQI_BLACK,
    XIANGQI_FILES,
    XIANGQI_LETTERS,
    XIANGQI_RED,
    Canvas,
    caption,
    circle,
    fmt,
    line,
    policy_label,
    rect,
    target,
    text,
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
    rows, cols, margin = 10, 9, 1.0 * UNIT
    canvas = Canvas(2 * margin + (cols - 1) * UNIT, 2 * margin + (rows - 1) * UNIT)

    def at(point):
        row, col = divmod(int(point), cols)
        return margin + col * UNIT, margin + row * UNIT

    right, bottom = canvas.width - margin, canvas.height - margin
    river_top, river_bottom = margin + 4 * UNIT, margin + 5 * UNIT
    for row in range(rows):
        y = margin + row * UNIT
        canvas.add(line(margin, y, right, y))
        canvas.add(text(margin * 0.35, y, rows - 1 - row, cls="coord"))
    for col in range(cols):
        x = margin + col * UNIT
        if col in (0, cols - 1):
            canvas.add(line(x, margin, x, bottom))
        else:
            canvas.add(line(x, margin, x, river_top), line(x, river_bottom, x, bottom))
        canvas.add(text(x, canvas.height - margin * 0.35, XIANGQI_FILES[col], cls="coord"))
    for top in (0, 7):
        x1, x2 = margin + 3 * UNIT, margin + 5 * UNIT
        y1, y2 = margin + top * UNIT, margin + (top + 2) * UNIT
        canvas.add(line(x1, y1, x2, y2), line(x1, y2, x2, y1))
    canvas.add(
        text(
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
        origin, destination = _MOVE_POINTS[1 - player, int(last_action)]
        for point in (origin, destination):
            x, y = at(point)
            canvas.add(
                rect(
                    x - 0.45 * UNIT,
                    y - 0.45 * UNIT,
                    0.9 * UNIT,
                    0.9 * UNIT,
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
            label = XIANGQI_LETTERS[abs(code) - 1]
            label = label.upper() if red else label
        else:
            label = (XIANGQI_RED if red else XIANGQI_BLACK)[abs(code) - 1]
        canvas.add(
            f'<g class="stone {"red" if red else "black"}">'
            + circle(x, y, 0.44 * UNIT, fill="#f5deb3", stroke=colour, width=2)
            + text(x, y, label, cls="piece-label", size=20, fill=colour)
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
            origin, destination = _MOVE_POINTS[player, int(action)]
            (x1, y1), (x2, y2) = at(origin), at(destination)
            p = float(policy[action])
            canvas.add(
                f'<line class="policy-shade" x1="{fmt(x1)}" y1="{fmt(y1)}" x2="{fmt(x2)}" '
                f'y2="{fmt(y2)}" stroke="#1e90ff" stroke-opacity="{0.4 + 0.5 * p:.2f}" '
                f'stroke-width="5" marker-end="url(#arrowhead)"/>'
            )
            label_x, label_y = (x1 + 2 * x2) / 3, (y1 + 2 * y2) / 3 - 8
            canvas.add(policy_label(label_x, label_y, p, fill="#00008b", size=12))
    if targets:
        for point in range(rows * cols):
            x, y = at(point)
            canvas.add(target(x - UNIT / 2, y - UNIT / 2, UNIT, UNIT, point))
    return canvas.finish(caption(PLAYERS, state, value), size, "#f0d9a0")


def clicks(game, action: int, state) -> list[int]:
    """The web board's clicks for `action`: the piece's point, then its target's (points as
    Red sees the board, row 0 = rank 9)."""
    del game
    origin, destination = _MOVE_POINTS[int(state.current_player), action]
    return [int(origin), int(destination)]
