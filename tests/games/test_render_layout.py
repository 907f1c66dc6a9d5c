"""Pictures side by side (`render.row`): one SVG document holding each picture and caption."""

import xml.etree.ElementTree as ET

import jax
import pytest

from azjax import games
from azjax.games import render

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def pictures():
    game = games.make("tic_tac_toe")
    state = game.init(jax.random.PRNGKey(0))
    return [render.picture(game, state), render.picture(game, state, size=200, value=0.5)]


def test_row_places_pictures_left_to_right_with_captions(pictures):
    row = render.row(pictures, ["prior", "search <32>"], gap=10)
    root = ET.fromstring(str(row))
    children = root.findall(f"{SVG}svg")
    assert [float(c.get("x")) for c in children] == [0.0, 360.0 + 10]
    widths = [float(c.get("width")) for c in children]
    assert widths == [360.0, 200.0]
    assert float(root.get("width")) == pytest.approx(360 + 10 + 200)
    assert [t.text for t in root.findall(f"{SVG}text")] == ["prior", "search <32>"]
    assert float(root.get("height")) > max(float(c.get("height")) for c in children)


def test_row_checks_its_arguments(pictures):
    with pytest.raises(ValueError, match="at least one"):
        render.row([])
    with pytest.raises(ValueError, match="1 captions for 2 pictures"):
        render.row(pictures, ["one"])
    with pytest.raises(ValueError, match="not an SVG"):
        render.row(["<p>no</p>"])
