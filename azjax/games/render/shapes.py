"""Drawing primitives of the SVG pictures: shapes, text, the canvas, captions."""

from xml.sax.saxutils import escape

import numpy as np

_UNIT = 40.0  # drawing units per cell or per grid step; the SVG is scaled to `size` pixels
_GO_LETTERS = "ABCDEFGHJKLMNOPQRST"  # GTP skips the letter I
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_XIANGQI_FILES = "abcdefghi"
# Piece codes 1-7: general, advisor, elephant, horse, chariot, cannon, soldier.
_XIANGQI_RED = "帥仕相傌俥炮兵"
_XIANGQI_BLACK = "將士象馬車砲卒"
_XIANGQI_LETTERS = "kabnrcp"  # FEN letters, uppercase for Red
_WOOD, _GO_WOOD, _FELT = "#e3b873", "#dcb35c", "#2e8b57"


def _n(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _text(x, y, label, *, cls, size=12.0, fill="#000", anchor="middle", weight=None) -> str:
    bold = f' font-weight="{weight}"' if weight else ""
    return (
        f'<text class="{cls}" x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}" fill="{fill}" '
        f'text-anchor="{anchor}" dominant-baseline="central" '
        f'font-family="sans-serif"{bold}>{escape(str(label))}</text>'
    )


def _circle(x, y, r, *, cls=None, fill="none", stroke=None, width=1.0, opacity=None) -> str:
    attrs = f' class="{cls}"' if cls else ""
    attrs += f' stroke="{stroke}" stroke-width="{_n(width)}"' if stroke else ""
    attrs += f' fill-opacity="{opacity:.2f}"' if opacity is not None else ""
    return f'<circle{attrs} cx="{_n(x)}" cy="{_n(y)}" r="{_n(r)}" fill="{fill}"/>'


def _line(x1, y1, x2, y2, *, stroke="#000", width=1.0, cls=None) -> str:
    attrs = f' class="{cls}"' if cls else ""
    return (
        f'<line{attrs} x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" '
        f'stroke="{stroke}" stroke-width="{_n(width)}"/>'
    )


def _rect(x, y, w, h, *, fill, cls=None, opacity=None, rx=0.0, stroke=None) -> str:
    attrs = f' class="{cls}"' if cls else ""
    attrs += f' fill-opacity="{opacity:.2f}"' if opacity is not None else ""
    attrs += f' stroke="{stroke}" stroke-width="3"' if stroke else ""
    return (
        f'<rect{attrs} x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" '
        f'rx="{_n(rx)}" fill="{fill}"/>'
    )


def _target(x, y, w, h, point: int) -> str:
    """An invisible clickable box over a board point (or a Connect Four column): the web
    board finds it by class "target" and reads the point from `data-point`."""
    return (
        f'<rect class="target" data-point="{int(point)}" x="{_n(x)}" y="{_n(y)}" '
        f'width="{_n(w)}" height="{_n(h)}" fill="#1e90ff" fill-opacity="0"/>'
    )


def _point_clicks(action: int, state) -> list[int]:
    """The clicks (`data-point`s of targets) of an action of a game played on the points of
    its board: the point, or none (a button) for an action past the last point (a pass)."""
    return [] if action >= np.asarray(state.board).size else [action]


def _percent(p: float) -> str:
    return f"{round(100 * p)}%"


def _policy_label(x, y, p: float, *, fill: str, size: float = 11.0) -> str:
    """The percentage of a policy overlay at (x, y)."""
    return _text(x, y, _percent(p), cls="policy-label", size=size, fill=fill, weight="bold")


def _numbers(move_numbers, num_points: int) -> dict[int, int]:
    """{point: number} from a dict or an [A] int array (0 = no number)."""
    if move_numbers is None:
        return {}
    if isinstance(move_numbers, dict):
        return {int(a): int(n) for a, n in move_numbers.items() if 0 <= int(a) < num_points}
    numbers = np.asarray(move_numbers)[:num_points]
    return {int(a): int(numbers[a]) for a in np.flatnonzero(numbers > 0)}


class _Canvas:
    """Elements in drawing units, a width and height, then the caption below the board."""

    def __init__(self, width: float, height: float):
        self.width, self.height, self.parts = width, height, []

    def add(self, *parts: str) -> None:
        self.parts.extend(parts)

    def finish(self, caption: str, size: int, background: str) -> str:
        height = self.height + 0.8 * _UNIT
        # Shrunk to fit narrow boards (Tic-tac-toe): a sans-serif character is ~0.6 em wide.
        font = min(15.0, 0.95 * self.width / (0.6 * max(1, len(caption))))
        caption_svg = _text(
            self.width / 2, self.height + 0.4 * _UNIT, caption, cls="caption", size=font
        )
        pixels_high = size * height / self.width
        body = "".join([_rect(0, 0, self.width, height, fill=background), *self.parts])
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" '
            f'height="{_n(pixels_high)}" viewBox="0 0 {_n(self.width)} {_n(height)}">'
            f"{body}{caption_svg}</svg>"
        )


def _caption(colours: tuple[str, str], state, value, extra: str = "") -> str:
    """ "X to move · value +0.42", or the result once the game is over."""
    if bool(np.asarray(state.terminated)):
        rewards = np.asarray(state.rewards)
        line = f"{colours[int(np.argmax(rewards))]} wins" if rewards.any() else "game over"
    else:
        line = f"{colours[int(np.asarray(state.current_player))]} to move"
        if value is not None:
            line += f" · value {float(value):+.2f}"
    return line + extra


def _pass_label(policy, pass_action: int) -> str:
    if policy is None or len(policy) <= pass_action or policy[pass_action] < 0.01:
        return ""
    return f" · pass {_percent(policy[pass_action])}"
