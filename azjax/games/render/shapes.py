"""The drawing primitives of the SVG pictures, public: what a game's picture module
(`azjax/games/render/<family>.py`) and the fallback picture (`render/fallback.py`) draw with.

Each shape is a function returning one SVG element as text, in drawing units (`UNIT` per
cell or grid step); a `Canvas` collects them and `finish`es the document under a caption,
scaled to a width in pixels:

    canvas = Canvas(3 * UNIT, 3 * UNIT)
    canvas.add(rect(0, 0, 3 * UNIT, 3 * UNIT, fill=WOOD))
    canvas.add(circle(1.5 * UNIT, 1.5 * UNIT, 0.4 * UNIT, cls="stone black", fill="#111"))
    document = canvas.finish("White to move", size=240, background="#fff")

`cls` names the element's class: the tests and the web board find pieces by "stone" and
their colour, coordinates by "coord", click targets by "target" (`render/svg.py` lists
them). `cells.CellBoard` and `grid.draw` are whole boards built of these.
"""

from xml.sax.saxutils import escape

import numpy as np

UNIT = 40.0  # drawing units per cell or per grid step; the SVG is scaled to `size` pixels
GO_LETTERS = "ABCDEFGHJKLMNOPQRST"  # GTP skips the letter I
LOWER = "abcdefghijklmnopqrstuvwxyz"
XIANGQI_FILES = "abcdefghi"
# Piece codes 1-7: general, advisor, elephant, horse, chariot, cannon, soldier.
XIANGQI_RED = "帥仕相傌俥炮兵"
XIANGQI_BLACK = "將士象馬車砲卒"
XIANGQI_LETTERS = "kabnrcp"  # FEN letters, uppercase for Red
WOOD, GO_WOOD, FELT = "#e3b873", "#dcb35c", "#2e8b57"


def fmt(x: float) -> str:
    """A coordinate as SVG text: one decimal at most (12.5, 40)."""
    return f"{x:.1f}".rstrip("0").rstrip(".")


def text(x, y, label, *, cls, size=12.0, fill="#000", anchor="middle", weight=None) -> str:
    """`label` centred vertically at (x, y), anchored "middle", "start" or "end"."""
    bold = f' font-weight="{weight}"' if weight else ""
    return (
        f'<text class="{cls}" x="{fmt(x)}" y="{fmt(y)}" font-size="{fmt(size)}" fill="{fill}" '
        f'text-anchor="{anchor}" dominant-baseline="central" '
        f'font-family="sans-serif"{bold}>{escape(str(label))}</text>'
    )


def circle(x, y, r, *, cls=None, fill="none", stroke=None, width=1.0, opacity=None) -> str:
    """A circle of radius `r` centred on (x, y); `opacity` is its fill's."""
    attrs = f' class="{cls}"' if cls else ""
    attrs += f' stroke="{stroke}" stroke-width="{fmt(width)}"' if stroke else ""
    attrs += f' fill-opacity="{opacity:.2f}"' if opacity is not None else ""
    return f'<circle{attrs} cx="{fmt(x)}" cy="{fmt(y)}" r="{fmt(r)}" fill="{fill}"/>'


def line(x1, y1, x2, y2, *, stroke="#000", width=1.0, cls=None) -> str:
    """A line from (x1, y1) to (x2, y2)."""
    attrs = f' class="{cls}"' if cls else ""
    return (
        f'<line{attrs} x1="{fmt(x1)}" y1="{fmt(y1)}" x2="{fmt(x2)}" y2="{fmt(y2)}" '
        f'stroke="{stroke}" stroke-width="{fmt(width)}"/>'
    )


def rect(x, y, w, h, *, fill, cls=None, opacity=None, rx=0.0, stroke=None) -> str:
    """A rectangle with its top-left corner at (x, y), corners rounded by `rx`."""
    attrs = f' class="{cls}"' if cls else ""
    attrs += f' fill-opacity="{opacity:.2f}"' if opacity is not None else ""
    attrs += f' stroke="{stroke}" stroke-width="3"' if stroke else ""
    return (
        f'<rect{attrs} x="{fmt(x)}" y="{fmt(y)}" width="{fmt(w)}" height="{fmt(h)}" '
        f'rx="{fmt(rx)}" fill="{fill}"/>'
    )


def target(x, y, w, h, point: int) -> str:
    """An invisible clickable box over a board point (or a Connect Four column): the web
    board finds it by class "target" and reads the point from `data-point`."""
    return (
        f'<rect class="target" data-point="{int(point)}" x="{fmt(x)}" y="{fmt(y)}" '
        f'width="{fmt(w)}" height="{fmt(h)}" fill="#1e90ff" fill-opacity="0"/>'
    )


def point_clicks(action: int, state) -> list[int]:
    """The clicks (`data-point`s of targets) of an action of a game played on the points of
    its board: the point, or none (a button) for an action past the last point (a pass)."""
    return [] if action >= np.asarray(state.board).size else [action]


def percent(p: float) -> str:
    """A probability as a whole percentage ("42%")."""
    return f"{round(100 * p)}%"


def policy_label(x, y, p: float, *, fill: str, size: float = 11.0) -> str:
    """The percentage of a policy overlay at (x, y)."""
    return text(x, y, percent(p), cls="policy-label", size=size, fill=fill, weight="bold")


def numbered_points(move_numbers, num_points: int) -> dict[int, int]:
    """{point: number} from a dict or an [A] int array (0 = no number)."""
    if move_numbers is None:
        return {}
    if isinstance(move_numbers, dict):
        return {int(a): int(n) for a, n in move_numbers.items() if 0 <= int(a) < num_points}
    numbers = np.asarray(move_numbers)[:num_points]
    return {int(a): int(numbers[a]) for a in np.flatnonzero(numbers > 0)}


class Canvas:
    """Elements in drawing units, a width and height, then the caption below the board."""

    def __init__(self, width: float, height: float):
        self.width, self.height, self.parts = width, height, []

    def add(self, *parts: str) -> None:
        """Draws `parts` (SVG elements) over what the canvas holds."""
        self.parts.extend(parts)

    def finish(self, status: str, size: int, background: str) -> str:
        """The SVG document: the parts on `background`, the line `status` under them
        (class "caption"), `size` pixels wide."""
        height = self.height + 0.8 * UNIT
        # Shrunk to fit narrow boards (Tic-tac-toe): a sans-serif character is ~0.6 em wide.
        font = min(15.0, 0.95 * self.width / (0.6 * max(1, len(status))))
        caption_svg = text(
            self.width / 2, self.height + 0.4 * UNIT, status, cls="caption", size=font
        )
        pixels_high = size * height / self.width
        body = "".join([rect(0, 0, self.width, height, fill=background), *self.parts])
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" '
            f'height="{fmt(pixels_high)}" viewBox="0 0 {fmt(self.width)} {fmt(height)}">'
            f"{body}{caption_svg}</svg>"
        )


def caption(colours: tuple[str, str], state, value, extra: str = "") -> str:
    """ "X to move · value +0.42", or the result once the game is over; `colours` names
    the first and the second player."""
    if bool(np.asarray(state.terminated)):
        rewards = np.asarray(state.rewards)
        status = f"{colours[int(np.argmax(rewards))]} wins" if rewards.any() else "game over"
    else:
        status = f"{colours[int(np.asarray(state.current_player))]} to move"
        if value is not None:
            status += f" · value {float(value):+.2f}"
    return status + extra


def pass_label(policy, pass_action: int) -> str:
    """What a caption adds for the policy's share on a pass (" · pass 12%"), or ""."""
    if policy is None or len(policy) <= pass_action or policy[pass_action] < 0.01:
        return ""
    return f" · pass {percent(policy[pass_action])}"


__all__ = [
    "FELT",
    "GO_LETTERS",
    "GO_WOOD",
    "LOWER",
    "UNIT",
    "WOOD",
    "XIANGQI_BLACK",
    "XIANGQI_FILES",
    "XIANGQI_LETTERS",
    "XIANGQI_RED",
    "Canvas",
    "caption",
    "circle",
    "fmt",
    "line",
    "numbered_points",
    "pass_label",
    "percent",
    "point_clicks",
    "policy_label",
    "rect",
    "target",
    "text",
]
