"""Stones on the intersections of a grid, coordinates on all four sides: Go and Gomoku."""

import numpy as np

from azjax.games.render.shapes import (
    UNIT,
    Canvas,
    caption,
    circle,
    line,
    numbered_points,
    pass_label,
    policy_label,
    target,
    text,
)


def draw(
    state,
    *,
    rows: int,
    cols: int,
    col_names: str,
    background: str,
    players: tuple[str, str],
    policy,
    value,
    last_action,
    move_numbers,
    size,
    targets,
) -> str:
    """The SVG picture of a grid game's unbatched `state` (the overlays are `render.svg`'s).

    Args:
      state: a state whose `board` holds [rows * cols] stones, > 0 for the first player.
      rows, cols: the grid's lines; a point is row-major from the top-left, and any action
        past the last point is a pass.
      col_names: the label of each column, left to right.
      background: the board's colour.
      players: the names of the first and the second player, for the caption.
    """
    board = np.asarray(state.board)
    margin = 1.25 * UNIT
    canvas = Canvas(2 * margin + (cols - 1) * UNIT, 2 * margin + (rows - 1) * UNIT)

    def at(point):
        row, col = divmod(int(point), cols)
        return margin + col * UNIT, margin + row * UNIT

    for row in range(rows):
        y = margin + row * UNIT
        canvas.add(line(margin, y, canvas.width - margin, y))
        canvas.add(text(margin * 0.35, y, rows - row, cls="coord", size=12))
        canvas.add(text(canvas.width - margin * 0.35, y, rows - row, cls="coord", size=12))
    for col in range(cols):
        x = margin + col * UNIT
        canvas.add(line(x, margin, x, canvas.height - margin))
        canvas.add(text(x, margin * 0.35, col_names[col], cls="coord", size=12))
        canvas.add(text(x, canvas.height - margin * 0.35, col_names[col], cls="coord", size=12))
    for row, col in _star_points(rows, cols):
        canvas.add(circle(*at(row * cols + col), 3.5, fill="#000"))

    num_points = rows * cols
    if policy is not None:
        for point in np.flatnonzero(policy[:num_points] >= 0.01):
            x, y = at(point)
            p = float(policy[point])
            canvas.add(
                circle(x, y, 0.45 * UNIT, cls="policy-shade", fill="#1e90ff", opacity=0.2 + 0.6 * p)
            )
    for point in np.flatnonzero(board[:num_points]):
        x, y = at(point)
        black = board[point] > 0
        canvas.add(
            circle(
                x,
                y,
                0.47 * UNIT,
                cls=f"stone {'black' if black else 'white'}",
                fill="#111" if black else "#f8f8f8",
                stroke="#000",
                width=1.0,
            )
        )
    for point, number in numbered_points(move_numbers, num_points).items():
        x, y = at(point)
        fill = "#fff" if board[point] > 0 else "#000"
        canvas.add(text(x, y, number, cls="move-number", size=14, fill=fill))
    if policy is not None:
        for point in np.flatnonzero(policy[:num_points] >= 0.01):
            x, y = at(point)
            fill = "#ff0" if board[point] > 0 else "#00008b"
            canvas.add(policy_label(x, y, policy[point], fill=fill))
    extra = pass_label(policy, num_points)
    if last_action is not None:
        if int(last_action) >= num_points:
            extra += " · last: pass"
            canvas.add(f'<g class="last-move" data-action="{int(last_action)}"/>')
        else:
            x, y = at(last_action)
            ring = "#fff" if board[int(last_action)] > 0 else "#d00"
            canvas.add(circle(x, y, 0.22 * UNIT, cls="last-move", stroke=ring, width=2.5))
    if targets:
        for point in range(num_points):
            x, y = at(point)
            canvas.add(target(x - UNIT / 2, y - UNIT / 2, UNIT, UNIT, point))
    return canvas.finish(caption(players, state, value, extra), size, background)


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
