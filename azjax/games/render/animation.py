"""Raster pictures of the games: a PNG of one position and an animated GIF of a game.

The SVG pictures of `azjax.games.render.svg` are rasterised with cairosvg (which needs the
system's cairo library) and a game's frames are put together with Pillow.
"""

import base64
import io
import pathlib

import jax
import numpy as np

from azjax.games.render.svg import drawing, svg
from azjax.types import UserError

_PALETTE_COLOURS = 128  # one palette for every frame (a GIF holds at most 256)
_EXACT_COLOURS = 32  # of them the most frequent colours, kept exactly


class Animation:
    """An animated GIF; Jupyter displays it inline (`_repr_html_`).

    Attributes:
      data: the GIF file's bytes.
    """

    def __init__(self, data: bytes):
        self.data = data

    def _repr_html_(self) -> str:
        encoded = base64.b64encode(self.data).decode("ascii")
        return f'<img src="data:image/gif;base64,{encoded}">'

    def __repr__(self) -> str:
        return f"Animation({len(self.data)} bytes of GIF)"

    def save(self, path) -> None:
        """Writes the GIF file to `path`."""
        pathlib.Path(path).write_bytes(self.data)


def _cairosvg():
    """The cairosvg module.

    Raises:
      UserError: the system's cairo library is missing.
    """
    try:
        import cairosvg
    except OSError as error:  # cairocffi found no libcairo
        raise UserError(
            "PNG and GIF pictures need the cairo library: install libcairo2 "
            "(Debian: apt-get install libcairo2)"
        ) from error
    return cairosvg


def _rasterise(text: str) -> bytes:
    """The PNG bytes of an SVG document."""
    return _cairosvg().svg2png(bytestring=text.encode("utf-8"))


def png(game, state, **overlays) -> bytes:
    """The `svg` picture of an unbatched `state` rasterised as a PNG.

    Args:
      game: the game the state belongs to.
      state: an unbatched state of that game.
      **overlays: the keyword arguments of `svg` (policy, value, last_action, move_numbers,
        size, piece_letters); `size` is the width in pixels.

    Returns:
      The PNG file's bytes.

    Raises:
      UserError: the system's cairo library is missing.
    """
    return _rasterise(svg(game, state, **overlays))


def _unstack(states) -> list:
    """A list of unbatched states from a sequence of them or from states stacked on axis 0
    (the output of a `lax.scan`, with `step_count` of shape [T])."""
    step_count = getattr(states, "step_count", None)
    if step_count is None:
        return list(states)
    if np.ndim(step_count) == 0:
        raise ValueError("gif needs a sequence of states, or states stacked on a leading axis")
    states = jax.device_get(states)  # slicing host arrays is cheap
    return [jax.tree.map(lambda leaf, i=i: leaf[i], states) for i in range(len(step_count))]


def _aligned(name: str, values, count: int) -> list:
    """Per-frame `values` (None: none on any frame), checked to have `count` entries."""
    if values is None:
        return [None] * count
    values = list(values)
    if len(values) != count:
        raise ValueError(f"{name} has {len(values)} entries; gif needs one per state ({count})")
    return values


def _last_actions(actions, count: int) -> list:
    """The action leading to each of `count` states (None for the first, or without actions)."""
    if actions is None:
        return [None] * count
    actions = [int(action) for action in np.asarray(actions).reshape(-1)]
    if len(actions) < count - 1:
        raise ValueError(
            f"actions has {len(actions)} entries; gif needs one per move ({count - 1})"
        )
    return [None, *actions[: count - 1]]


def _played(states: list) -> int:
    """How many of `states` are up to and including the first terminated one."""
    for i, state in enumerate(states):
        if bool(np.asarray(state.terminated)):
            return i + 1
    return len(states)


def _move_numbers(state, played: list) -> dict[int, int]:
    """{point: ply number} of the latest move on each occupied point, from `played` actions."""
    board = np.asarray(state.board)
    numbers = {}
    for ply, action in enumerate(played, start=1):
        if action < len(board):
            numbers[action] = ply
    return {point: ply for point, ply in numbers.items() if board[point] != 0}


def _frames(game, states, last, policies, values, **style) -> list:
    """The RGB Pillow images of each state, with its overlays (`style`: `svg`'s size and
    piece_letters)."""
    from PIL import Image

    numbered = drawing(game).MOVE_NUMBERS and last[-1] is not None
    images = []
    for i, state in enumerate(states):
        numbers = _move_numbers(state, last[1 : i + 1]) if numbered else None
        text = svg(
            game,
            state,
            policy=policies[i],
            value=values[i],
            last_action=last[i],
            move_numbers=numbers,
            **style,
        )
        images.append(Image.open(io.BytesIO(_rasterise(text))).convert("RGB"))
    return images


def _palette(pixels: np.ndarray, colours: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The GIF's one palette [K, 3]: the most frequent colours exactly (background, board,
    pieces), then an octree's colours of all frames for the antialiased edges.

    Args:
      pixels: [F, H, W, 3] uint8 the frames.
      colours: [U, 3] the distinct colours in them.
      counts: [U] how many pixels have each colour.
    """
    from PIL import Image

    exact = colours[np.argsort(-counts, kind="stable")[:_EXACT_COLOURS]]
    frames, height, width, _ = pixels.shape
    sheet = Image.fromarray(pixels.reshape(frames * height, width, 3), "RGB")
    octree = sheet.quantize(_PALETTE_COLOURS - len(exact), method=Image.Quantize.FASTOCTREE)
    blend = np.asarray(octree.getpalette(), np.int64).reshape(-1, 3)
    return np.concatenate([exact, blend])[:256]


def _quantize(images: list) -> list:
    """The images in one shared palette, each pixel its nearest palette colour (no dithering):
    flat colours stay exact and unchanged pixels stay equal from frame to frame, so the GIF
    stores only what changed."""
    from PIL import Image

    pixels = np.stack([np.asarray(image) for image in images])  # [F, H, W, 3] uint8
    packed = pixels.astype(np.int64) @ np.asarray([1 << 16, 1 << 8, 1])  # [F, H, W]
    unique, inverse, counts = np.unique(packed, return_inverse=True, return_counts=True)
    colours = np.stack([unique >> 16, (unique >> 8) & 255, unique & 255], axis=-1)  # [U, 3]
    palette = _palette(pixels, colours, counts)
    distance = np.sum((colours[:, None, :] - palette[None, :, :]) ** 2, axis=-1)  # [U, K]
    indices = np.argmin(distance, axis=1).astype(np.uint8)[inverse].reshape(packed.shape)
    flat_palette = palette.astype(np.uint8).reshape(-1).tolist()
    frames = []
    for index in indices:
        frame = Image.fromarray(index, "P")
        frame.putpalette(flat_palette)
        frames.append(frame)
    return frames


def gif(
    game,
    states,
    *,
    actions=None,
    policies=None,
    values=None,
    size: int = 360,
    frame_seconds: float = 0.7,
    last_frame_seconds: float = 2.0,
    loop: bool = True,
    piece_letters: bool = False,
) -> Animation:
    """An animated GIF of a game: one frame per state, the last move marked.

    States after the first terminated one are left out (a `lax.scan` that ran past the end of
    the game repeats it).

    Args:
      game: the game the states belong to.
      states: the unbatched states, the first the start: a sequence, or states stacked on a
        leading axis (a `lax.scan`'s output).
      actions: the actions played, `actions[i]` leading from `states[i]` to `states[i + 1]`;
        when given, each frame marks its last move (and Go and Gomoku number the stones).
      policies: per-state [A] probabilities drawn over the board (entries may be None).
      values: per-state values for the player to move, in the caption (entries may be None).
      size: width of each frame in pixels.
      frame_seconds: how long each frame is shown.
      last_frame_seconds: how long the final position is shown.
      loop: whether the animation repeats forever (else it plays once).
      piece_letters: Xiangqi pieces labelled with FEN letters, for systems whose fonts lack
        the Chinese characters (the frames are drawn with the system's fonts).

    Returns:
      The `Animation`, shown inline in Jupyter.

    Raises:
      ValueError: no states, or `actions`, `policies` or `values` do not match them.
      UserError: the system's cairo library is missing.
    """
    states = _unstack(states)
    if not states:
        raise ValueError("gif needs at least one state")
    last = _last_actions(actions, len(states))
    policies = _aligned("policies", policies, len(states))
    values = _aligned("values", values, len(states))
    count = _played(states)
    states, last, policies, values = (x[:count] for x in (states, last, policies, values))
    frames = _frames(game, states, last, policies, values, size=size, piece_letters=piece_letters)
    images = _quantize(frames)
    durations = [round(1000 * frame_seconds)] * (count - 1) + [round(1000 * last_frame_seconds)]
    buffer = io.BytesIO()
    extra = {"loop": 0} if loop else {}
    images[0].save(
        buffer,
        format="GIF",
        save_all=True,
        append_images=images[1:],
        duration=durations,
        disposal=1,
        optimize=True,
        **extra,
    )
    return Animation(buffer.getvalue())
