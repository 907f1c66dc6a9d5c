"""Helpers for the web board's tests: untrained runs of every game, a server in a thread,
and a small JSON client over http.client (raw enough to send hostile requests)."""

import http.client
import json
from urllib.parse import urlsplit

from conftest import tiny_config, untrained_run

import azjax.games


def one_game_per_family() -> tuple[str, ...]:
    """The registered game of fewest actions in each family (Go 9x9, Gomoku 6x6, ...): a new
    game joins the web board's tests with its registry line."""
    smallest = {}
    for name in azjax.games.names():
        game = azjax.games.make(name)
        family = azjax.games.family_of(game)
        if family not in smallest or game.num_actions < smallest[family][0]:
            smallest[family] = (game.num_actions, name)
    return tuple(name for _, name in sorted(smallest.values()))


GAMES = one_game_per_family()


def make_run(tmp_path_factory, game: str):
    """An untrained tiny run of `game` (4 simulations; Xiangqi ends within 160 plies)."""
    config = tiny_config(game)
    if game == "xiangqi":
        config.game_kwargs.max_episode_length = 160
    return untrained_run(tmp_path_factory.mktemp(f"serve_{game}"), config)


class Client:
    """Requests to a running web board; `call` returns (status, parsed JSON or text)."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port

    def raw(self, method: str, path: str, body: bytes | None = None, headers=None):
        connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            data = response.read()
            return response.status, data, dict(response.getheaders())
        finally:
            connection.close()

    def call(self, method: str, path: str, body=None):
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        status, data, _ = self.raw(method, path, payload, headers)
        try:
            return status, json.loads(data)
        except ValueError:
            return status, data.decode("utf-8", "replace")

    def ok(self, method: str, path: str, body=None) -> dict:
        status, data = self.call(method, path, body)
        assert 200 <= status < 300, (status, data)
        return data
