"""SVG pictures and HTML pages of every game (`azjax.games.render`)."""

import base64
import io
import xml.etree.ElementTree as ET

import jax
import numpy as np
import pytest
from PIL import Image

from azjax import games
from azjax.games import render
from azjax.games.tic_tac_toe import TicTacToe
from azjax.types import UserError

_SVG = "{http://www.w3.org/2000/svg}"


def _random_states(game, plies: int, seed: int = 0):
    """The start and the states after `plies` random legal moves, with the actions."""
    state = game.init(jax.random.key(seed))
    step = jax.jit(game.step)
    rng = np.random.default_rng(seed)
    states, actions = [state], []
    for _ in range(plies):
        legal = np.flatnonzero(np.asarray(state.legal_action_mask))
        if len(legal) == 0:
            break
        action = int(rng.choice(legal))
        state = step(state, action)
        states.append(state)
        actions.append(action)
    return states, actions


def _classes(root, name: str) -> list:
    return [e for e in root.iter() if name in e.get("class", "").split()]


def _texts(root, name: str) -> list[str]:
    return [e.text for e in _classes(root, name)]


@pytest.fixture(scope="module", params=games.names())
def played(request):
    game = games.make(request.param)
    states, actions = _random_states(game, 6)
    return game, states, actions


def test_pieces_match_board(played):
    game, states, _ = played
    for state in (states[0], states[-1]):
        root = ET.fromstring(render.svg(game, state))
        assert root.tag == f"{_SVG}svg"
        board = np.asarray(state.board)
        stones = _classes(root, "stone")
        assert len(stones) == np.count_nonzero(board)
        first = {"xiangqi": "red", "connect_four": "red", "tic_tac_toe": "x"}.get(
            game.name, "black"
        )
        assert len(_classes(root, first)) == np.sum(board > 0)
        assert _texts(root, "caption")


def test_coordinates(played):
    game, states, _ = played
    labels = set(_texts(ET.fromstring(render.svg(game, states[0])), "coord"))
    if game.name.startswith("go_"):
        assert "I" not in labels
        assert {"A", "H", "J", "1", str(game.size)} <= labels
    elif game.name == "xiangqi":
        assert set("abcdefghi") | {str(rank) for rank in range(10)} <= labels
    elif game.name.startswith(("gomoku", "othello", "hex")):
        assert {"a", "1"} <= labels


def test_one_hot_policy_and_value(played):
    game, states, _ = played
    state = states[-1]
    action = int(np.flatnonzero(np.asarray(state.legal_action_mask))[0])
    policy = np.zeros(game.num_actions)
    policy[action] = 1.0
    root = ET.fromstring(render.svg(game, state, policy=policy, value=0.42))
    assert _texts(root, "policy-label") == ["100%"]
    if not bool(state.terminated):
        assert "value +0.42" in _texts(root, "caption")[0]


def test_policy_labels_match_probabilities(played):
    game, states, _ = played
    state = states[0]
    legal = np.flatnonzero(np.asarray(state.legal_action_mask))[:3]
    policy = np.zeros(game.num_actions)
    policy[legal] = np.asarray([0.5, 0.3, 0.2])[: len(legal)]
    policy[legal] /= policy[legal].sum()
    root = ET.fromstring(render.svg(game, state, policy=policy))
    expected = sorted(f"{round(100 * p)}%" for p in policy[legal])
    assert sorted(_texts(root, "policy-label")) == expected


def test_last_action_marked(played):
    game, states, actions = played
    plain = ET.fromstring(render.svg(game, states[-1]))
    marked = ET.fromstring(render.svg(game, states[-1], last_action=actions[-1]))
    assert not _classes(plain, "last-move")
    assert _classes(marked, "last-move")


def test_html_game(played):
    game, states, actions = played
    page = render.html_game(game, states, actions=actions, title="a game")
    assert page.count("<svg") == len(states)
    assert 'type="range"' in page
    assert "<script>" in page and "http" not in page.replace("http://www.w3.org/2000/svg", "")


def test_move_numbers_on_stones():
    game = games.make("go_9x9")
    states, actions = _random_states(game, 4)
    numbers = {action: i + 1 for i, action in enumerate(actions)}
    root = ET.fromstring(render.svg(game, states[-1], move_numbers=numbers))
    assert sorted(_texts(root, "move-number")) == sorted(str(n) for n in numbers.values())


def test_picture(tmp_path):
    game = games.make("tic_tac_toe")
    picture = render.picture(game, game.init(jax.random.key(0)), value=0.1)
    assert picture._repr_svg_().startswith("<svg")
    picture.save(tmp_path / "board.svg")
    ET.parse(tmp_path / "board.svg")


def test_xiangqi_pieces_as_red_sees_them():
    game = games.make("xiangqi")
    state = game.init(jax.random.key(0))
    root = ET.fromstring(render.svg(game, state))
    labels = _texts(root, "piece-label")
    assert labels.count("帥") == 1 and labels.count("將") == 1
    red_general = next(e for e in _classes(root, "red") if e.find(f"{_SVG}text").text == "帥")
    black_general = next(e for e in _classes(root, "black") if e.find(f"{_SVG}text").text == "將")
    y = [float(g.find(f"{_SVG}circle").get("cy")) for g in (red_general, black_general)]
    assert y[0] > y[1]  # Red at the bottom
    lettered = ET.fromstring(render.svg(game, state, piece_letters=True))
    assert _texts(lettered, "piece-label").count("K") == 1


def _pixels(image, frame: int) -> np.ndarray:
    """[H, W, 3] RGB pixels of one frame of an open (animated) image."""
    image.seek(frame)
    return np.asarray(image.convert("RGB")).astype(int)


def _cell_centre(action: int, size: int) -> tuple[int, int]:
    """(row, column) pixel of a Tic-tac-toe cell's centre in a picture `size` pixels wide."""
    row, col = divmod(action, 3)
    scale = size / (2 * 28 + 3 * 40)  # drawing units: margins of 28, cells of 40
    return round((28 + 40 * (row + 0.5)) * scale), round((28 + 40 * (col + 0.5)) * scale)


@pytest.fixture(scope="module")
def tic_tac_toe_game():
    game = games.make("tic_tac_toe")
    states, actions = _random_states(game, 4, seed=1)
    return game, states, actions


def test_png(tic_tac_toe_game):
    game, states, actions = tic_tac_toe_game
    data = render.png(game, states[1], last_action=actions[0], size=150)
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    height = float(ET.fromstring(render.svg(game, states[1], size=150)).get("height"))
    width, pixels_high = Image.open(io.BytesIO(data)).size
    assert width == 150 and abs(pixels_high - height) <= 1


def test_png_without_cairo(tic_tac_toe_game, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_cairo(name, *args, **kwargs):
        if name == "cairosvg":
            raise OSError("no library called 'cairo-2' was found")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cairo)
    game, states, _ = tic_tac_toe_game
    with pytest.raises(UserError, match="libcairo2"):
        render.png(game, states[0])


def test_gif_frames(tic_tac_toe_game, tmp_path):
    game, states, actions = tic_tac_toe_game
    animation = render.gif(
        game, states, actions=actions, size=120, frame_seconds=0.5, last_frame_seconds=1.5
    )
    image = Image.open(io.BytesIO(animation.data))
    assert image.format == "GIF" and image.n_frames == len(states)
    assert image.info["loop"] == 0
    image.seek(0)
    assert image.info["duration"] == 500
    image.seek(len(states) - 1)
    assert image.info["duration"] == 1500
    changed = np.any(_pixels(image, 0) != _pixels(image, 1), axis=-1)
    row, col = _cell_centre(actions[0], 120)
    assert changed[row - 2 : row + 3, col - 2 : col + 3].any()
    assert not changed[:, : changed.shape[1] // 10].any()  # the left margin stays as it was
    animation.save(tmp_path / "game.gif")
    assert (tmp_path / "game.gif").read_bytes() == animation.data


def test_gif_overlays_and_stacked_states(tic_tac_toe_game):
    game, states, actions = tic_tac_toe_game
    policy = np.full(game.num_actions, 1 / game.num_actions)
    policies = [policy] + [None] * (len(states) - 1)
    values = [0.5] + [None] * (len(states) - 1)
    shown = render.gif(game, states[:2], actions=actions, policies=policies[:2], values=values[:2])
    plain = render.gif(game, states[:2], actions=actions)
    first = [_pixels(Image.open(io.BytesIO(a.data)), 0) for a in (shown, plain)]
    assert np.any(first[0] != first[1])
    stacked = jax.tree.map(lambda *leaves: np.stack(leaves), *states)
    assert render.gif(game, stacked, size=100).data == render.gif(game, states, size=100).data


def test_gif_stops_at_the_end():
    game = games.make("tic_tac_toe")
    states, actions = _random_states(game, 9)
    assert bool(states[-1].terminated)
    padded = states + [states[-1]] * 3
    animation = render.gif(game, padded, actions=actions + [0] * 3, size=100)
    assert Image.open(io.BytesIO(animation.data)).n_frames == len(states)


def test_animation_html(tic_tac_toe_game):
    game, states, _ = tic_tac_toe_game
    animation = render.gif(game, states[:2], size=100, loop=False)
    html = animation._repr_html_()
    prefix = '<img src="data:image/gif;base64,'
    assert html.startswith(prefix) and html.endswith('">')
    assert base64.b64decode(html[len(prefix) : -2]) == animation.data
    assert animation.data.startswith(b"GIF89a")
    assert "loop" not in Image.open(io.BytesIO(animation.data)).info


def test_gif_errors(tic_tac_toe_game):
    game, states, actions = tic_tac_toe_game
    with pytest.raises(ValueError, match="at least one state"):
        render.gif(game, [])
    with pytest.raises(ValueError, match="policies has 1 entries"):
        render.gif(game, states, policies=[None])
    with pytest.raises(ValueError, match="actions has 1 entries"):
        render.gif(game, states, actions=actions[:1])


class Plain(TicTacToe):
    """Tic-tac-toe as a family of its own (this module's name), which has no picture module:
    the fallback picture (`render/fallback.py`) draws it."""


class Wide(Plain):
    """A game whose actions are not its cells (20 of them on 9 cells), as far as the
    fallback picture reads it."""

    num_actions = 20


@pytest.fixture
def plain(monkeypatch):
    monkeypatch.setitem(games._REGISTRY, "plain", (__name__, "Plain", {}))
    monkeypatch.setitem(games._REGISTRY, "wide", (__name__, "Wide", {}))
    return games.make("plain")


def test_fallback_picture_draws_the_cells_and_pieces(plain):
    assert games.companion(Plain, "azjax.games.render") is None
    states, actions = _random_states(plain, 5)
    state = states[-1]
    legal = np.flatnonzero(np.asarray(state.legal_action_mask))
    policy = np.zeros(plain.num_actions)
    policy[legal[0]] = 1.0
    root = ET.fromstring(
        render.svg(plain, state, policy=policy, value=0.25, last_action=actions[-1], targets=True)
    )
    board = np.asarray(state.board)
    assert len(_classes(root, "black")) == np.sum(board > 0)  # from the observation's planes
    assert len(_classes(root, "white")) == np.sum(board < 0)
    assert len(_classes(root, "stone")) == np.count_nonzero(board)
    assert sorted(_texts(root, "coord"), key=int) == [str(a) for a in range(9)]  # action ids
    assert _texts(root, "policy-label") == ["100%"]
    assert _classes(root, "last-move")
    assert [e.get("data-point") for e in _classes(root, "target")] == [str(a) for a in range(9)]
    assert _texts(root, "caption") == ["White to move · value +0.25"]
    assert render.player_names(plain) == ("Black", "White")
    assert render.clicks(plain, 4, state) == [4]


def test_fallback_picture_of_moves_that_are_not_cells(plain):
    game = games.make("wide")
    states, actions = _random_states(game, 2)
    root = ET.fromstring(render.svg(game, states[-1], last_action=actions[-1], targets=True))
    assert len(_classes(root, "stone")) == 2
    assert not _classes(root, "target") and not _texts(root, "coord")
    assert _texts(root, "caption")[0].endswith(f"last: {actions[-1]}")
    assert render.clicks(game, 4, states[-1]) == []
