"""Several board pictures side by side in one SVG (a single image on GitHub and in Jupyter)."""

import re
from xml.sax.saxutils import escape

_SIZE = re.compile(r'<svg\b[^>]*?\bwidth="([\d.]+)"[^>]*?\bheight="([\d.]+)"')


def _size(svg: str) -> tuple[float, float]:
    match = _SIZE.match(svg.lstrip())
    if match is None:
        raise ValueError("not an SVG document with width and height")
    return float(match.group(1)), float(match.group(2))


def row_svg(svgs, captions=None, *, gap: float = 16, caption_size: float = 14) -> str:
    """SVG documents (`render.svg` output) laid side by side, each with an optional caption.

    Args:
      svgs: the SVG texts (or `Picture`s: anything whose str() is an SVG document).
      captions: one text per picture, shown under it (None: no captions).
      gap: space between pictures, in pixels.
      caption_size: caption font size, in pixels.

    Raises:
      ValueError: no pictures, captions that do not match them, or a text that is not SVG.
    """
    svgs = [str(s) for s in svgs]
    if not svgs:
        raise ValueError("row_svg needs at least one picture")
    if captions is not None and len(captions) != len(svgs):
        raise ValueError(f"{len(captions)} captions for {len(svgs)} pictures")
    sizes = [_size(s) for s in svgs]
    caption_height = 1.6 * caption_size if captions is not None else 0
    height = max(h for _, h in sizes) + caption_height
    parts, x = [], 0.0
    for index, (svg, (w, h)) in enumerate(zip(svgs, sizes, strict=True)):
        parts.append(svg.lstrip().replace("<svg", f'<svg x="{x:g}" y="0"', 1))
        if captions is not None:
            parts.append(
                f'<text x="{x + w / 2:g}" y="{h + 1.2 * caption_size:g}" text-anchor="middle" '
                f'font-family="sans-serif" font-size="{caption_size:g}">'
                f"{escape(str(captions[index]))}</text>"
            )
        x += w + gap
    width = x - gap
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:g}" height="{height:g}" '
        f'viewBox="0 0 {width:g} {height:g}">' + "".join(parts) + "</svg>"
    )
