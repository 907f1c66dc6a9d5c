"""The web board's API (`azjax serve`) over real HTTP: complete games of every game family,
turns, take-backs, records, analysis, watching two agents, bounded sessions, a fuzz of
hostile requests that must all get a 4xx or a valid answer, the Host, Origin and body-type
checks against other sites' pages, and half-sent or abandoned requests over raw sockets."""

import contextlib
import json
import logging
import random
import signal
import socket
import subprocess
import time

import pytest

pytest.importorskip(
    "starlette", reason="the serve extra is not installed: pip install -e '.[serve]'"
)

from conftest import PYTHON, free_port, marked, subprocess_env  # noqa: E402
from web import GAMES, Client  # noqa: E402

from azjax.apps import serve  # noqa: E402
from azjax.apps.serve.session import Sessions  # noqa: E402


def _play_out(client, game, *, rng, human_side, max_plies):
    """Plays random legal moves for the human and lets the agent reply, up to `max_plies`."""
    view = client.ok("POST", "/api/games", {"side": human_side})
    for _ in range(max_plies):
        if view["over"]:
            break
        if view["your_turn"]:
            move = rng.choice(view["moves"])
            view = client.ok("POST", f"/api/games/{view['id']}/move", {"action": move["action"]})
        else:
            view = client.ok("POST", f"/api/games/{view['id']}/advance")
    return view


# Tic-tac-toe and Connect Four in the default suite, the other families in the slow set (CI):
# each game's server compiles its agent's search (docs/testing.md).
@pytest.mark.parametrize(
    "game",
    marked(
        GAMES,
        slow=[g for g in GAMES if g not in ("tic_tac_toe", "connect_four")],
        deep=["xiangqi", "othello_6x6"],  # CI: the other games, and Xiangqi's start FEN above
    ),
)
def test_a_game_is_played_through_the_api(served, game):
    client = Client(served(game))
    info = client.ok("GET", "/api/info")
    assert info["game"] == game and info["simulations"] in info["choices"]
    offered = {"go_9x9": ["komi"], "xiangqi": ["fen", "piece_letters"]}.get(game, [])
    assert info["options"] == offered and ("komi" in info) == ("komi" in offered)
    start = client.ok("POST", "/api/games", {"side": "first"})
    # Every legal move is clicks on targets the picture has (a pass is a button).
    for move in start["moves"]:
        assert all(f'data-point="{point}"' in start["svg"] for point in move["clicks"]), move
    buttons = [m["name"] for m in start["moves"] if not m["clicks"]]
    assert buttons == (["pass"] if game == "go_9x9" else [])
    rng = random.Random(0)
    long_game = game in ("go_9x9", "xiangqi")
    view = _play_out(client, game, rng=rng, human_side="second", max_plies=12 if long_game else 200)
    assert view["history"] and len(view["values"]) == len(view["history"])
    assert view["values"][0] is not None  # the agent played first and said its value
    assert view["svg"].startswith("<svg") and 'class="target"' in view["svg"]
    if long_game:  # ended by resignation
        view = client.ok("POST", f"/api/games/{view['id']}/resign")
        assert view["result"].endswith("wins by resignation")
    assert view["over"] and view["result"] and view["moves"] == []
    # A move after the end is refused and changes nothing.
    status, body = client.call("POST", f"/api/games/{view['id']}/move", {"action": 0})
    assert status == 409 and "over" in body["error"]
    status, record = client.call("GET", f"/api/games/{view['id']}/record")
    assert status == 200
    if game == "go_9x9":  # SGF, read back by sgfmill (independent of azjax)
        from sgfmill import sgf as sgfmill  # noqa: PLC0415

        parsed = sgfmill.Sgf_game.from_bytes(record.encode())
        assert parsed.get_size() == 9 and parsed.get_winner() in ("b", "w")
        assert len(parsed.get_main_sequence()) - 1 == len(view["history"])
    else:
        assert f"moves: {' '.join(view['history'])}" in record
        assert f"result: {view['result']}" in record
        if game == "xiangqi":
            assert "fen: rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w" in record
        if game == "hex_5x5":
            assert "rules: 5x5, Black joins top and bottom, White left and right, no swap" in record


def test_turns_illegal_moves_and_take_backs(served):
    client = Client(served("tic_tac_toe"))
    view = client.ok("POST", "/api/games", {"side": "first"})
    game = f"/api/games/{view['id']}"
    assert view["your_turn"] and len(view["moves"]) == 9 and not view["can_undo"]
    status, body = client.call("POST", f"{game}/advance")
    assert status == 409 and "your turn" in body["error"]
    view = client.ok("POST", f"{game}/move", {"action": 4})
    status, body = client.call("POST", f"{game}/move", {"action": 0})
    assert status == 409 and "not your turn" in body["error"]
    view = client.ok("POST", f"{game}/advance")
    reply = view["history"][1]
    assert view["your_turn"] and len(view["history"]) == 2
    status, body = client.call("POST", f"{game}/move", {"action": 4})  # taken
    assert status == 400 and "illegal" in body["error"]
    assert client.ok("GET", game)["history"] == view["history"]
    view = client.ok("POST", f"{game}/undo")  # the reply and the human's move
    assert view["history"] == [] and view["your_turn"] and not view["can_undo"]
    status, _ = client.call("POST", f"{game}/undo")
    assert status == 409
    view = client.ok("POST", f"{game}/move", {"action": 4})
    view = client.ok("POST", f"{game}/advance")
    assert view["history"][1] == reply  # no noise: the agent replies the same


def test_the_human_second_takes_back_to_the_agents_first_move(served):
    client = Client(served("connect_four"))
    view = client.ok("POST", "/api/games", {"side": "second"})
    game = f"/api/games/{view['id']}"
    view = client.ok("POST", f"{game}/advance")
    first = view["history"]
    view = client.ok("POST", f"{game}/move", {"action": view["moves"][0]["action"]})
    view = client.ok("POST", f"{game}/advance")
    view = client.ok("POST", f"{game}/undo")
    assert view["history"] == first and view["your_turn"]
    view = client.ok("POST", f"{game}/resign")
    assert view["result"] == "Red wins by resignation"
    view = client.ok("POST", f"{game}/undo")  # takes back the resignation
    assert not view["over"] and view["history"] == first


def test_analysis_shows_the_agents_value_and_search_policy(served):
    client = Client(served("tic_tac_toe"))
    view = client.ok("POST", "/api/games", {"side": "first"})
    assert view["value"] is None and "policy-shade" not in view["svg"]
    view = client.ok("POST", f"/api/games/{view['id']}/options", {"analysis": True})
    assert isinstance(view["value"], float) and "policy-shade" in view["svg"]
    assert "value" in view["svg"]  # the caption
    status, body = client.call("POST", f"/api/games/{view['id']}/options", {"simulations": 12345})
    assert status == 400 and "simulations must be one of" in body["error"]


def test_go_komi_pass_and_xiangqi_start_fen(served):
    client = Client(served("go_9x9"))
    view = client.ok("POST", "/api/games", {"side": "first", "komi": 0.5})
    game = f"/api/games/{view['id']}"
    (passing,) = [m for m in view["moves"] if m["clicks"] == []]
    assert passing["name"] == "pass" and passing["action"] == 81
    view = client.ok("POST", f"{game}/move", {"action": 81})
    assert view["history"] == ["pass"]
    status, record = client.call("GET", f"{game}/record")
    assert "KM[0.5]" in record and ";B[]" in record
    status, body = client.call("POST", "/api/games", {"komi": 1e6})
    assert status == 400 and "komi" in body["error"]

    client = Client(served("xiangqi"))
    fen = "4k4/9/9/9/9/9/9/9/R8/3K5 w"  # a lone chariot against a bare general
    view = client.ok("POST", "/api/games", {"side": "first", "fen": fen})
    # Moves are clicked as origin then target, points as Red sees the board (row 0 = rank 9).
    chariot = 8 * 9  # a1
    assert {m["clicks"][0] for m in view["moves"]} == {chariot, 9 * 9 + 3}
    assert ["a1a9", [chariot, 0]] in [[m["name"], m["clicks"]] for m in view["moves"]]
    status, body = client.call("POST", "/api/games", {"fen": "not a fen"})
    assert status == 400 and "FEN" in body["error"]


def test_two_agents_play_each_other_move_by_move(served):
    client = Client(served("connect_four", opponent=True))
    info = client.ok("GET", "/api/info")
    assert info["watch"] and len(info["agents"]) == 2
    view = client.ok("POST", "/api/games", {"side": "second"})
    assert view["human"] is None and not view["your_turn"]
    status, _ = client.call("POST", f"/api/games/{view['id']}/move", {"action": 0})
    assert status == 409
    for _ in range(60):
        if view["over"]:
            break
        view = client.ok("POST", f"/api/games/{view['id']}/advance")
    assert view["over"] and view["result"]
    assert all(v is not None for v in view["values"])  # both sides are agents


def test_tabs_are_independent_games(served):
    client = Client(served("tic_tac_toe"))
    a = client.ok("POST", "/api/games", {"side": "first"})
    b = client.ok("POST", "/api/games", {"side": "first"})
    assert a["id"] != b["id"]
    client.ok("POST", f"/api/games/{a['id']}/move", {"action": 0})
    assert client.ok("GET", f"/api/games/{b['id']}")["history"] == []
    assert client.ok("GET", f"/api/games/{a['id']}")["history"] == ["1"]


def test_sessions_are_bounded_and_expire():
    sessions = Sessions(max_games=3, ttl=0.2)
    first = sessions.add(states=[], actions=[], agents={}, simulations=1)
    kept = [sessions.add(states=[], actions=[], agents={}, simulations=1) for _ in range(3)]
    assert len(sessions) == 3
    with pytest.raises(KeyError):
        sessions.get(first.id)  # the least recently used went first
    sessions.get(kept[0].id)
    time.sleep(0.3)
    with pytest.raises(KeyError):
        sessions.get(kept[1].id)
    assert len(sessions) == 0


def _hostile_requests(rng: random.Random, game_id: str):
    """(method, path, body bytes, headers) for malformed and hostile requests."""
    paths = [
        "/api/games",
        f"/api/games/{game_id}",
        f"/api/games/{game_id}/move",
        f"/api/games/{game_id}/advance",
        f"/api/games/{game_id}/undo",
        f"/api/games/{game_id}/options",
        f"/api/games/{game_id}/record",
        "/api/games/nope/move",
        "/api/games/" + "x" * 3000,
        "/api/games/%00%ff/move",
        "/api/info",
        "/static/../../etc/passwd",
        "/static/app.js",
        "/nothing",
    ]
    values = [
        None, True, False, -1, 0, 9, 10, 2**63, -(2**70), 1.5, 1e308, "4", "", "x" * 500,
        [], {}, [1, 2], {"a": 1}, "NaN",
    ]  # fmt: skip
    keys = ["action", "side", "simulations", "komi", "fen", "analysis", "", "x"]
    for _ in range(2100):
        method = rng.choice(["GET", "POST", "POST", "POST", "PUT", "DELETE", "PATCH"])
        path = rng.choice(paths)
        kind = rng.randrange(8)
        headers = {"Content-Type": "application/json"}
        if kind == 0:
            body = bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
        elif kind == 1:
            body = json.dumps({rng.choice(keys): rng.choice(values) for _ in range(3)}).encode()
        elif kind == 2:
            body = json.dumps(rng.choice(values)).encode()
        elif kind == 3:
            body = b"[" * 5000 + b"]" * 5000  # deep nesting
        elif kind == 4:
            body = b'{"action": ' + b"9" * 5000 + b"}"  # a huge integer
        elif kind == 5:
            body = b'{"a": "' + b"x" * 40_000 + b'"}'  # past the size limit
        elif kind == 6:
            body = b'{"komi": NaN, "action": Infinity}'
        else:
            body, headers = b"{}", {"Content-Length": rng.choice(["-5", "abc", "99999999"])}
        yield method, path, body, headers


def test_fuzz_hostile_requests_get_4xx_and_the_server_keeps_serving(served):
    client = Client(served("tic_tac_toe"))
    game_id = client.ok("POST", "/api/games", {"side": "first"})["id"]
    rng = random.Random(1)
    statuses = {}
    for method, path, body, headers in _hostile_requests(rng, game_id):
        try:
            status, data, reply_headers = client.raw(method, path, body, headers)
        except (ConnectionError, OSError):  # the server may close a lying Content-Length
            status = "closed"
        else:
            assert status < 500, (method, path, body[:80], status, data[:200])
            # The app answers JSON errors; uvicorn itself answers requests HTTP cannot parse
            # (a Content-Length that is no number) with a plain 400.
            if status >= 400 and "json" in reply_headers.get("content-type", ""):
                assert "error" in json.loads(data), data
            else:
                assert status < 400 or status == 400 and b"Invalid HTTP" in data, data
        statuses[status] = statuses.get(status, 0) + 1
    assert sum(statuses.values()) >= 2000
    assert {400, 404, 405, 409, 413} <= set(statuses), statuses
    # A normal game still works.
    view = _play_out(client, "tic_tac_toe", rng=random.Random(2), human_side="first", max_plies=9)
    assert view["over"] and view["result"]


def test_serve_cli_errors_are_one_line(tmp_path, web_runs):
    env = subprocess_env()
    missing = subprocess.run(
        [PYTHON, "-m", "azjax.apps.cli", "serve", "--workdir", str(tmp_path / "none")],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    mixed = subprocess.run(
        [PYTHON, "-m", "azjax.apps.cli", "serve", "--workdir", str(web_runs("tic_tac_toe")),
         "--opponent-workdir", str(web_runs("connect_four"))],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert mixed.returncode == 2 and "different games" in mixed.stderr


def test_a_xiangqi_fen_with_bad_counts_gets_a_400(served):
    """Counts that str.isdigit takes and int() refuses, or past int32: one line, no 500."""
    client = Client(served("xiangqi"))
    start = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - -"
    for counts in ("² 1", "0 ²", "\u0663 1", "99999999999 1", "2147483648 1", "120 1"):
        status, body = client.call("POST", "/api/games", {"fen": f"{start} {counts}"})
        assert status == 400, (counts, status, body)
        assert body["error"].startswith("bad FEN") and "\n" not in body["error"]
    assert client.ok("POST", "/api/games", {"fen": f"{start} 7 1"})["moves"]


def test_the_host_header_must_name_this_server(served):
    """A page of another site that resolves its name to 127.0.0.1 (DNS rebinding) sends its
    own name as Host: refused, as are other ports; the local names are served."""
    client = Client(served("tic_tac_toe"))
    port = client.port
    for host, expected in [
        (f"127.0.0.1:{port}", 200),
        (f"localhost:{port}", 200),
        (f"LOCALHOST:{port}", 200),
        (f"[::1]:{port}", 200),
        (f"evil.example:{port}", 421),
        ("evil.example", 421),
        (f"127.0.0.1:{port + 1}", 421),
        ("127.0.0.1", 421),  # port 80
        (f"127.0.0.1.evil.example:{port}", 421),
        (f"evil.example@127.0.0.1:{port}", 421),
        (f"127.0.0.1:{port}/x", 421),
    ]:
        status, data, headers = client.raw("GET", "/api/info", headers={"Host": host})
        assert status == expected, (host, status, data)
        if status != 200:
            assert json.loads(data)["error"].startswith("this server does not answer for")
            assert headers.get("content-type") == "application/json"
    # HTTP/1.0 lets a client leave Host out.
    status_line, data = _raw_exchange(client, b"GET /api/info HTTP/1.0\r\n\r\n")
    assert status_line.startswith(b"HTTP/1.1 400") and b"no Host header" in data


@pytest.mark.parametrize(
    "head",
    [
        b"GARBAGE\r\n\r\n",
        "GET /\u00e9 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode(),  # a raw non-ASCII path
        b"GET / HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n",  # a header without its colon
    ],
)
def test_a_malformed_request_head_gets_a_400(served, head):
    """As stock uvicorn answers: every request gets an answer (these got none)."""
    client = Client(served("tic_tac_toe"))
    status_line, _ = _raw_exchange(client, head)
    assert status_line.startswith(b"HTTP/1.1 400"), status_line
    assert client.ok("GET", "/api/info")


def test_requests_that_change_state_must_come_from_this_page(served):
    client = Client(served("tic_tac_toe"))
    here = f"http://127.0.0.1:{client.port}"
    body = json.dumps({"side": "first"}).encode()
    for origin, expected in [
        (None, 201),  # not a browser (curl, these tests)
        (here, 201),  # the page itself: browsers send Origin with every POST
        (f"http://localhost:{client.port}", 201),
        ("http://evil.example", 403),
        (f"http://evil.example:{client.port}", 403),
        (f"https://127.0.0.1:{client.port}", 403),
        (f"http://127.0.0.1:{client.port + 1}", 403),
        ("null", 403),  # sandboxed frames, file:// pages
    ]:
        headers = {"Content-Type": "application/json"}
        if origin is not None:
            headers["Origin"] = origin
        status, data, _ = client.raw("POST", "/api/games", body, headers)
        assert status == expected, (origin, status, data)
        if status == 403:
            assert "requests from other sites are refused" in json.loads(data)["error"]
    game = client.ok("POST", "/api/games", {"side": "first"})["id"]
    for method in ("POST", "PUT", "DELETE"):
        status, _, _ = client.raw(
            method, f"/api/games/{game}/resign", headers={"Origin": "http://evil.example"}
        )
        assert status == 403, method
    assert not client.ok("GET", f"/api/games/{game}")["over"]  # the resignations were refused
    # Reading is allowed (a browser does not show another site's page the answer).
    status, _, _ = client.raw("GET", "/api/info", headers={"Origin": "http://evil.example"})
    assert status == 200


def test_bodies_must_be_json(served):
    client = Client(served("tic_tac_toe"))
    body = json.dumps({"side": "first"}).encode()
    for content_type, expected in [
        ("text/plain", 415),  # what an HTML form or a "simple" cross-site fetch can send
        ("application/x-www-form-urlencoded", 415),
        ("multipart/form-data; boundary=x", 415),
        (None, 415),
        ("application/json", 201),
        ("Application/JSON; charset=utf-8", 201),
    ]:
        headers = {} if content_type is None else {"Content-Type": content_type}
        status, data, _ = client.raw("POST", "/api/games", body, headers)
        assert status == expected, (content_type, status, data)
        if status == 415:
            assert "Content-Type: application/json" in json.loads(data)["error"]
    game = client.ok("POST", "/api/games", {"side": "second"})["id"]
    assert client.raw("POST", f"/api/games/{game}/advance")[0] == 200  # no body: no type


def _connect(client) -> socket.socket:
    return socket.create_connection((client.host, client.port), timeout=30)


def _raw_exchange(client, request: bytes) -> tuple[bytes, bytes]:
    """Sends `request` on a new connection; (status line, the rest) of what comes back."""
    with _connect(client) as connection:
        connection.sendall(request)
        data = _read_until_closed(connection)
    status_line, _, rest = data.partition(b"\r\n")
    return status_line, rest


def _read_response(connection) -> bytes:
    """One response (its head and a Content-Length body) from a kept-alive connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += connection.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += connection.recv(65536)
    return head + b"\r\n\r\n" + body


def _read_until_closed(connection) -> bytes:
    data = b""
    while chunk := connection.recv(65536):
        data += chunk
    return data


@pytest.fixture(scope="module")
def impatient(web_runs):
    """A web board that gives each request's head, then its body, one second."""
    background = serve.Background(serve.make_server(web_runs("tic_tac_toe")), request_timeout=1)
    yield Client(background.url)
    background.stop()


def test_half_sent_requests_are_timed_out(impatient):
    """Connections that send nothing, part of a head, or part of a body are closed after
    the timeout (a partial body with a 408); the server serves on meanwhile."""
    head = f"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1:{impatient.port}\r\n"
    body_head = head + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    partial = [b"", head.encode()[:20], head.encode(), (body_head + '{"side": ').encode()]
    connections = []
    for index in range(40):
        connection = _connect(impatient)
        connection.sendall(partial[index % len(partial)])
        connections.append((index % len(partial), connection))
    assert impatient.ok("GET", "/api/info")["game"] == "tic_tac_toe"
    for kind, connection in connections:  # each read ends at the server's close (at most 30 s)
        with connection:
            data = _read_until_closed(connection)
        if kind == 3:
            assert data.startswith(b"HTTP/1.1 408"), data
            assert b"the body did not arrive within 1 s" in data
        else:
            assert data == b"", data
    # A whole request on a kept-alive connection after the first.
    with _connect(impatient) as connection:
        request = f"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1:{impatient.port}\r\n\r\n"
        connection.sendall(request.encode())
        assert _read_response(connection).startswith(b"HTTP/1.1 200")
        connection.sendall(request.encode()[:10])  # then half a head: closed
        assert _read_until_closed(connection) == b""


class _Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)

    def wait_for(self, count: int) -> None:
        """Until `count` records arrived (a bounded wait)."""
        deadline = time.monotonic() + 30
        while len(self.records) < count and time.monotonic() < deadline:
            time.sleep(0.05)


@contextlib.contextmanager
def _uvicorn_records():
    """The records uvicorn's error log writes inside the block."""
    records = _Records()
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addHandler(records)
    try:
        yield records
    finally:
        uvicorn_log.removeHandler(records)


def test_a_client_that_leaves_mid_body_is_one_log_line(served):
    client = Client(served("tic_tac_toe"))
    with _uvicorn_records() as records:
        request = (
            f"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1:{client.port}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
            '{"side": '
        )
        for _ in range(3):
            with _connect(client) as connection:
                connection.sendall(request.encode())
        records.wait_for(3)
        assert client.ok("GET", "/api/info")
    assert len(records.records) == 3, [r.getMessage() for r in records.records]
    for record in records.records:
        assert record.exc_info is None and "\n" not in record.getMessage()
        assert "left before sending the whole body of POST /api/games" in record.getMessage()


# Chunked bodies that h11 cannot read, in one packet with a head that the guard refuses
# (415: not JSON) or lets through: uvicorn answers 400 and closes before the application runs.
MALFORMED_CHUNKED = [
    ("text/plain", b"zz\r\n"),
    ("application/json", b"zz\r\n"),
    ("application/json", b'5\r\n{"a":\r\nzz\r\n'),
]


def _malformed_chunked(port: int, content_type: str, body: bytes) -> bytes:
    head = (
        f"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    return head.encode() + body


def test_malformed_chunked_bodies_get_a_400_and_log_no_traceback(served):
    client = Client(served("tic_tac_toe"))
    with _uvicorn_records() as records:
        for content_type, body in MALFORMED_CHUNKED:
            request = _malformed_chunked(client.port, content_type, body)
            status_line, _ = _raw_exchange(client, request)
            assert status_line in (b"", b"HTTP/1.1 400 Bad Request"), status_line
        # One warning for each, and one more for each body the guard was reading.
        records.wait_for(5)
        assert client.ok("GET", "/api/info")
    messages = [record.getMessage() for record in records.records]
    assert messages.count("Invalid HTTP request received.") == 3, messages
    for record in records.records:
        assert record.levelno == logging.WARNING and record.exc_info is None, messages
        assert "\n" not in record.getMessage()


@pytest.mark.timeout(300)
def test_serve_prints_its_address_once_it_listens(web_runs):
    """The address line comes once a connection can be made; a malformed request then
    leaves no traceback on stderr."""
    port = free_port()
    process = subprocess.Popen(
        [PYTHON, "-m", "azjax.apps.cli", "serve", "--workdir", str(web_runs("tic_tac_toe")),
         "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env(),
    )  # fmt: skip
    try:
        line = process.stdout.readline()
        assert line.startswith("azjax serve: ") and line.endswith(f":{port}/\n"), line
        with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:  # at once
            connection.sendall(_malformed_chunked(port, *MALFORMED_CHUNKED[0]))
            status_line = _read_until_closed(connection).partition(b"\r\n")[0]
        assert status_line in (b"", b"HTTP/1.1 400 Bad Request"), status_line
        assert Client(f"http://127.0.0.1:{port}/").ok("GET", "/api/info")
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    assert "Traceback" not in stderr and "Exception" not in stderr, stderr
    assert stderr.strip().splitlines() == ["WARNING:  Invalid HTTP request received."], stderr
