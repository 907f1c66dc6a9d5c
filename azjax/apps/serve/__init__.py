"""Play the agents in a browser: `azjax serve --workdir RUN` starts a local web board.

    from azjax.apps import serve
    server = serve.make_server("runs/c4", simulations=200)   # or opponent_workdir="runs/b"
    serve.run(server, port=8000)                              # blocks; Ctrl-C stops it

The page (static/: HTML, one script, one stylesheet; nothing fetched from elsewhere) draws
the board with `azjax.games.render.svg`, turns clicks into legal moves, and asks the server for
the agent's replies; `app.py` holds the HTTP API, `session.py` the games. Needs the `serve`
extra (Starlette and uvicorn): pip install 'azjax[serve]'. uvicorn serves it over h11, with a
deadline for each request's head (`REQUEST_TIMEOUT` seconds; the app has one for the body).
"""

import socket
import threading
import time
from pathlib import Path

from azjax import extras
from azjax.apps.serve.limits import REQUEST_TIMEOUT, SIMULATION_CHOICES
from azjax.matches import agent as agent_lib
from azjax.types import UserError


def make_server(
    workdir,
    *,
    simulations: int | None = None,
    opponent_workdir=None,
    max_games: int = 64,
    ttl: float = 3600.0,
):
    """A `Server` for the run at `workdir` (and the run it plays, `opponent_workdir`).

    Args:
      workdir: the run (or one checkpoint of it) whose agent plays.
      simulations: the default search simulations per move (default: the run's eval setting).
      opponent_workdir: a second run of the same game; the page then shows the two agents
        playing each other move by move instead of a human game.
      max_games: games kept at once (the least recently used is dropped past it).
      ttl: seconds a game is kept without a request.

    Raises:
      UserError: a missing run, runs of different games.
      ModuleNotFoundError: the serve extra is not installed (its message names it).
    """
    extras.require("starlette", "uvicorn")  # one line naming the serve extra
    from azjax.apps.serve.app import Server  # noqa: PLC0415

    agents = {}
    for path in (workdir, opponent_workdir):
        if path is None:
            continue
        agent = agent_lib.load_agent(path, num_simulations=simulations)
        name = f"{_run_name(path)} #{agent.iteration}"
        agents[name if name not in agents else f"{name} (2)"] = agent
    games = {agent.settings.run.game for agent in agents.values()}
    if len(games) > 1:
        raise UserError(f"the two runs play different games: {sorted(games)}")
    first = next(iter(agents.values()))
    return Server(
        agents,
        simulations=first.num_simulations,
        choices=SIMULATION_CHOICES,
        max_games=max_games,
        ttl=ttl,
    )


def run(server, *, host: str = "127.0.0.1", port: int = 8000) -> int:
    """Serves `server` until interrupted, printing its address once it accepts connections.

    Raises:
      UserError: the address cannot be listened on (the port is taken, say).
    """

    import uvicorn  # noqa: PLC0415

    from azjax.apps.serve.app import make_app  # noqa: PLC0415

    try:  # uvicorn would log a traceback-free error but exit 1; say it as a user mistake
        with socket.create_server((host, port)):
            pass
    except OSError as error:
        raise UserError(f"cannot listen on {host}:{port}: {error.strerror}") from None
    address = f"azjax serve: {server.board.name} at http://{host}:{port}/"

    class Announced(uvicorn.Server):
        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            print(address, flush=True)  # the server listens from here on

    config = uvicorn.Config(
        make_app(server, host=host),
        host=host,
        port=port,
        log_level="warning",
        http=_protocol(REQUEST_TIMEOUT),
    )
    served = Announced(config)
    served.run()
    return 0 if served.started else 1  # not started: stopped before it listened


def _protocol(timeout: float):
    """uvicorn's h11 protocol, closing a connection whose next request's head has not all
    arrived `timeout` seconds after the connection opened or the head's first byte came
    (uvicorn waits for ever there; its keep-alive timeout covers idle connections between
    requests only)."""
    import h11  # noqa: PLC0415
    from uvicorn.protocols.http.h11_impl import H11Protocol  # noqa: PLC0415

    class Protocol(H11Protocol):
        _head_timer = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._watch_head()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._watch_head()

        def connection_lost(self, exc) -> None:
            self._stop_watching()
            super().connection_lost(exc)

        def _watch_head(self) -> None:
            if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
                self._stop_watching()  # a head arrived (or the connection ends)
            elif self._head_timer is None:
                self._head_timer = self.loop.call_later(timeout, self._head_late)

        def _stop_watching(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_late(self) -> None:
            self._head_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

        def send_400_response(self, msg: str) -> None:
            """After a malformed request (uvicorn's one warning line): a 400 where no answer
            has begun, and the request's application told that the client is gone, so that
            its answer (the guard's refusal, say) is dropped instead of failing in h11 with
            an `Exception in ASGI application` traceback."""
            # IDLE: the request line itself was malformed (h11 takes a response then too).
            if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                super().send_400_response(msg)
            else:
                self.transport.close()
            if self.cycle is not None and not self.cycle.response_complete:
                self.cycle.disconnected = True  # as uvicorn's connection_lost does, later
                self.cycle.message_event.set()

    return Protocol


class Background:
    """`server` served from a thread of this process (a notebook, a test) until `stop()`.

    Args:
      server: what to serve (`make_server`).
      host, port: where (port 0 picks a free one).
      request_timeout: seconds for a request's head, and then for its body.

    Attributes:
      url: the address, "http://127.0.0.1:PORT/".
    """

    def __init__(
        self,
        server,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        request_timeout: float = REQUEST_TIMEOUT,
    ):

        import uvicorn  # noqa: PLC0415

        from azjax.apps.serve.app import make_app  # noqa: PLC0415

        config = uvicorn.Config(
            make_app(server, host=host, request_timeout=request_timeout),
            host=host,
            port=port,
            log_level="warning",
            http=_protocol(request_timeout),
        )
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._uvicorn.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._uvicorn.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise UserError(f"the web board did not start on {host}:{port}")
            time.sleep(0.02)
        port = self._uvicorn.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://{host}:{port}/"

    def stop(self) -> None:
        self._uvicorn.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> "Background":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _run_name(path) -> str:

    path = Path(path).resolve()
    return path.parent.parent.name if path.parent.name == "checkpoints" else path.name


__all__ = ["REQUEST_TIMEOUT", "SIMULATION_CHOICES", "Background", "make_server", "run"]
