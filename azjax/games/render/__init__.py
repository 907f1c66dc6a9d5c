"""Pictures of the games: SVG boards for notebooks, PNG images, animated GIFs of a game and
HTML pages to step through one.

from azjax.games import render
render.picture(game, state, policy=probabilities, value=0.3)   # shown inline in Jupyter
open("board.png", "wb").write(render.png(game, state, size=480))
render.gif(game, states, actions=actions)                     # shown inline; .save("game.gif")
open("game.html", "w").write(render.html_game(game, states))
render.search_tree(output.tree, action_names=notation.of(game).action_to_string)  # matplotlib

Each game is drawn by its own module, `azjax/games/render/<family>.py` (`render/go.py` for
`azjax.games.go`; `svg.py` says what it holds), which also names the players
(`player_names`) and the points a web board's click plays (`clicks`).

PNG and GIF pictures are rasterised with cairosvg, which needs the system's cairo library
(Debian: apt-get install libcairo2).
"""

import json
import pathlib
from xml.sax.saxutils import escape

from azjax.games import notation
from azjax.games.render.animation import Animation, gif, png
from azjax.games.render.layout import row_svg
from azjax.games.render.svg import clicks, player_names, svg
from azjax.games.render.tree import search_tree


class Picture:
    """An SVG picture; Jupyter displays it inline (`_repr_svg_`)."""

    def __init__(self, text: str):
        self.svg = text

    def _repr_svg_(self) -> str:
        return self.svg

    def __str__(self) -> str:
        return self.svg

    def save(self, path) -> None:
        """Writes the SVG document to `path`."""
        pathlib.Path(path).write_text(self.svg, encoding="utf-8")


def picture(game, state, **overlays) -> Picture:
    """The `svg` of an unbatched `state` (same keyword overlays) as a `Picture`."""
    return Picture(svg(game, state, **overlays))


_SCRIPT = """
const frames = document.querySelectorAll('.frame');
const slider = document.getElementById('ply');
const label = document.getElementById('label');
const names = %s;
function show(i) {
  i = Math.max(0, Math.min(frames.length - 1, i));
  frames.forEach((f, j) => { f.style.display = j === i ? 'block' : 'none'; });
  slider.value = i;
  label.textContent = 'ply ' + i + ' / ' + (frames.length - 1) + (names[i] ? ' · ' + names[i] : '');
}
slider.addEventListener('input', () => show(+slider.value));
document.getElementById('prev').onclick = () => show(+slider.value - 1);
document.getElementById('next').onclick = () => show(+slider.value + 1);
document.addEventListener('keydown', (e) => {
  if (e.key === 'ArrowLeft') show(+slider.value - 1);
  if (e.key === 'ArrowRight') show(+slider.value + 1);
});
show(0);
"""


def html_game(game, states, *, title: str | None = None, actions=None, size: int = 420) -> str:
    """A self-contained HTML page stepping through unbatched `states` with a slider.

    Args:
      game: the game the states belong to.
      states: a sequence of unbatched states, the first the start.
      title: the page's heading (the game's name if None).
      actions: the actions played, `actions[i]` leading from `states[i]` to `states[i + 1]`;
        when given, each picture marks its last move and the label names it.
      size: width of each picture in pixels.

    Returns:
      The HTML document as a string (inline SVG and JavaScript, nothing fetched).
    """
    states = list(states)
    title = title or getattr(game, "name", type(game).__name__)
    names, frames = [""], []
    for i, state in enumerate(states):
        last = None if actions is None or i == 0 else int(actions[i - 1])
        if last is not None:
            names.append(notation.action_to_string(game, last, states[i - 1]))
        frames.append(
            f'<div class="frame" style="display:{"block" if i == 0 else "none"}">'
            f"{svg(game, state, last_action=last, size=size)}</div>"
        )
    names += [""] * (len(states) - len(names))
    last_index = max(len(states) - 1, 0)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title></head>"
        '<body style="font-family:sans-serif">'
        f"<h3>{escape(title)}</h3>"
        '<div><button id="prev">&#9664;</button> '
        f'<input id="ply" type="range" min="0" max="{last_index}" value="0" step="1"> '
        '<button id="next">&#9654;</button> <span id="label"></span></div>'
        + "".join(frames)
        + f"<script>{_SCRIPT % json.dumps(names)}</script></body></html>\n"
    )


__all__ = [
    "Animation",
    "Picture",
    "clicks",
    "gif",
    "html_game",
    "picture",
    "player_names",
    "png",
    "search_tree",
    "svg",
]


def row(pictures, captions=None, **layout) -> Picture:
    """Pictures (or SVG texts) side by side as one `Picture`, with optional captions
    (`layout.row_svg` arguments)."""
    return Picture(row_svg(pictures, captions, **layout))
