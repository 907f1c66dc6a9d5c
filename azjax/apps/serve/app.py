"""The web board's HTTP API (Starlette): one JSON resource per game, pages from the package.

    GET  /                          the page (static/index.html, app.js, style.css)
    GET  /api/info                  the game, the agents, the simulation choices, the
                                    game's options (`Board.info`: komi, fen)
    POST /api/games                 {"side": "first"|"second", "simulations", "komi", "fen"}
    GET  /api/games/ID              the game: picture, legal moves as clicks, history, result
    POST /api/games/ID/move         {"action": A}: the human's move
    POST /api/games/ID/advance      the agent to move plays (its reply, or the next move
                                    of a game between two agents)
    POST /api/games/ID/undo         takes back the human's last move (and the reply)
    POST /api/games/ID/resign       the human resigns
    POST /api/games/ID/options      {"analysis": bool, "simulations": N, "piece_letters": bool}
    GET  /api/games/ID/record       the record to download (SGF, FEN + ICCS, move list)

Every bad request gets a 4xx with {"error": message}: malformed or oversized bodies, unknown
game ids, moves out of turn, illegal or after the end. In a game between two agents
(`--opponent-workdir`) `side` is the first agent's side and there are no human moves.

Before any route, `RequestGuard` (guard.py) refuses what a web page elsewhere or a stuck
client could send: a Host header naming another server than this one (DNS rebinding: 421), a
request that changes state from another Origin (cross-site requests: 403), a body that is not
`application/json` (415) or larger than MAX_BODY (413), and a body that has not arrived
REQUEST_TIMEOUT seconds after the request's head (408, connection closed). A client that
leaves in the middle of its body costs one log line.
"""

import json
import math
from pathlib import Path

import jax
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from azjax.apps.serve import boards
from azjax.apps.serve.guard import MAX_BODY, RequestGuard
from azjax.apps.serve.limits import REQUEST_TIMEOUT
from azjax.apps.serve.session import Agents, Session, Sessions
from azjax.types import UserError

STATIC = Path(__file__).parent / "static"
_MAX_FEN = 200


class Server:
    """The state of one web board: the game, its agents and the games being played.

    Args:
      agents: {name: `Agent`}, one (the human plays it) or two (they play each other), all
        of one game.
      simulations: the default search simulations per move.
      choices: other simulation counts a player may pick.
      max_games, ttl: how many games are kept at most, and for how long unused (seconds).
      seed: seeds the agents' searches.
    """

    def __init__(self, agents: dict, *, simulations: int, choices=(), max_games=64, ttl=3600.0):
        first = next(iter(agents.values()))
        self.board = boards.of(first.game, name=first.settings.run.game)
        self.agents = Agents(agents, simulations=simulations, choices=choices)
        self.names = list(agents)
        self.watch = len(agents) == 2
        self.sessions = Sessions(max_games=max_games, ttl=ttl)
        self._key = jax.random.PRNGKey(0)
        self._searches = 0

    # -- requests, each run in a worker thread (searches are slow) --

    def info(self) -> dict:
        return {
            "game": self.board.name,
            "kind": self.board.kind,
            "names": self.board.names,
            "agents": self.names,
            "watch": self.watch,
            "simulations": self.agents.default,
            "choices": self.agents.choices,
            **self.board.info(),
        }

    def new_game(self, body: dict) -> dict:
        side = _field(body, "side", str, "first")
        if side not in ("first", "second"):
            raise UserError('side must be "first" or "second"')
        simulations = self.agents.check(_field(body, "simulations", int, self.agents.default))
        komi = _field(body, "komi", float, None)
        fen = _field(body, "fen", str, None)
        if fen is not None and len(fen) > _MAX_FEN:
            raise UserError(f"the FEN is longer than {_MAX_FEN} characters")
        start = self.board.start(self._next_key(), komi=komi, fen=fen)
        mine = 0 if side == "first" else 1
        if self.watch:
            agents = {mine: self.names[0], 1 - mine: self.names[1]}
        else:
            agents = {1 - mine: self.names[0]}
        session = self.sessions.add(
            states=[start], actions=[], agents=agents, simulations=simulations
        )
        return self.view(session)

    def move(self, session: Session, body: dict) -> dict:
        action = _field(body, "action", int, None)
        if action is None:
            raise UserError('the body must name the move: {"action": A}')
        if session.over:
            raise Conflict("the game is over")
        if session.human != session.to_move:
            raise Conflict("it is not your turn")
        if not self.board.is_legal(session.state, action):
            raise UserError(f"illegal move: {action} is not a legal action now")
        self.board.play(session, action, None)
        return self.view(session)

    def advance(self, session: Session) -> dict:
        if session.over:
            raise Conflict("the game is over")
        name = session.agents.get(session.to_move)
        if name is None:
            raise Conflict("it is your turn: the agent waits for your move")
        action, _, value = self.agents.search(
            name, session.state, session.simulations, self._next_key()
        )
        self.board.play(session, action, value)
        return self.view(session)

    def undo(self, session: Session) -> dict:
        human = session.human
        if human is None:  # two agents: one move back
            if not session.actions:
                raise Conflict("there is no move to take back")
            session.pop()
            return self.view(session)
        if session.resigned is not None:  # taking back a resignation
            session.resigned = None
            return self.view(session)
        if session.human_moves == 0:
            raise Conflict("you have no move to take back")
        while session.last_mover != human:  # the agent's replies
            session.pop()
        session.pop()  # the human's move
        return self.view(session)

    def resign(self, session: Session) -> dict:
        if session.human is None:
            raise Conflict("no human plays this game")
        if session.over:
            raise Conflict("the game is over")
        session.resigned = session.human
        return self.view(session)

    def options(self, session: Session, body: dict) -> dict:
        analysis = _field(body, "analysis", bool, None)
        letters = _field(body, "piece_letters", bool, None)
        simulations = _field(body, "simulations", int, None)
        if simulations is not None:
            session.simulations = self.agents.check(simulations)
            session._analysed = None  # searched with the old count
        if analysis is not None:
            session.analysis = analysis
        if letters is not None:
            session.piece_letters = letters
        return self.view(session)

    def record(self, session: Session) -> tuple[str, str]:
        names = tuple(
            f"azjax {session.agents[p]} ({session.simulations} simulations)"
            if p in session.agents
            else "human"
            for p in (0, 1)
        )
        return self.board.record(session, names)

    def view(self, session: Session) -> dict:
        """The game as the page shows it."""
        policy = value = None
        if session.analysis and not session.over:
            policy, value = self._analysis(session)
        human = session.human
        return {
            "id": session.id,
            "game": self.board.name,
            "to_move": session.to_move,
            "human": human,
            "agents": {str(p): name for p, name in session.agents.items()},
            "simulations": session.simulations,
            "analysis": session.analysis,
            "piece_letters": session.piece_letters,
            "value": value,
            # [A] the search's policy (visit shares) of the position, with analysis on
            "policy": None if policy is None else [round(float(p), 4) for p in policy],
            "over": session.over,
            "result": self.board.result(session),
            "your_turn": human is not None and human == session.to_move and not session.over,
            "svg": self.board.svg(session, policy=policy, value=value),
            "moves": self.board.moves(session.state) if not session.over else [],
            "history": [ply.name for ply in session.plies],
            "values": [ply.value for ply in session.plies],
            "can_undo": session.human_moves > 0 if human is not None else bool(session.actions),
        }

    # -- helpers --

    def _analysis(self, session: Session):
        """The search policy and value of the agent that would move (or the human's
        opponent, for the human's positions), cached per position."""
        ply = len(session.plies)
        if session._analysed is None or session._analysed[0] != ply:
            name = session.agents.get(session.to_move) or next(iter(session.agents.values()))
            _, policy, value = self.agents.search(
                name, session.state, session.simulations, self._next_key()
            )
            session._analysed = (ply, policy, value)
        return session._analysed[1], session._analysed[2]

    def _next_key(self):
        self._searches += 1
        return jax.random.fold_in(self._key, self._searches)


class Conflict(Exception):
    """A request that is well formed but not possible now (409): out of turn, game over."""


def _field(body: dict, name: str, kind: type, default):
    """`body[name]` checked to be of `kind` (int accepts no bool, float accepts int), or
    `default` where absent or null."""
    value = body.get(name)
    if value is None:
        return default
    ok = (
        isinstance(value, bool)
        if kind is bool
        else isinstance(value, int | float) and not isinstance(value, bool)
        if kind is float
        else isinstance(value, int) and not isinstance(value, bool)
        if kind is int
        else isinstance(value, kind)
    )
    if not ok or (kind is float and not math.isfinite(value)):
        raise UserError(f"{name} must be {'a number' if kind is float else kind.__name__}")
    return float(value) if kind is float else value


async def _json_body(request: Request) -> dict:
    """The request's JSON object body ({} when empty); 413 past MAX_BODY, 400 if not JSON
    (`RequestGuard` has read the body in time and checked its type and size)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise HTTPException(413, f"the body is larger than {MAX_BODY} bytes")
    if not body.strip():
        return {}
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise HTTPException(400, "the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise HTTPException(400, "the body must be a JSON object")
    return data


def make_app(
    server: Server, *, host: str = "127.0.0.1", request_timeout: float = REQUEST_TIMEOUT
) -> Starlette:
    """The Starlette application serving `server`'s page and API behind a `RequestGuard`.

    Args:
      server: the games and agents.
      host: the address served (`azjax serve --host`): Host headers may name it.
      request_timeout: seconds a request's body may take to arrive after its head.
    """

    async def call(function, *args):
        try:
            return JSONResponse(await run_in_threadpool(function, *args))
        except UserError as error:
            return JSONResponse({"error": str(error)}, status_code=400)
        except Conflict as error:
            return JSONResponse({"error": str(error)}, status_code=409)

    def session_of(request: Request) -> Session:
        try:
            return server.sessions.get(request.path_params["game_id"])
        except KeyError:
            raise HTTPException(404, "no such game (it may have expired)") from None

    async def index(request: Request):
        return FileResponse(STATIC / "index.html")

    async def info(request: Request):
        return await call(server.info)

    async def new_game(request: Request):
        response = await call(server.new_game, await _json_body(request))
        if response.status_code == 200:
            response.status_code = 201
        return response

    async def show(request: Request):
        session = session_of(request)
        return await call(_locked(session, server.view), session)

    def action(method, with_body: bool):
        async def endpoint(request: Request):
            body = await _json_body(request) if with_body else None
            session = session_of(request)
            args = (session, body) if with_body else (session,)
            return await call(_locked(session, method), *args)

        return endpoint

    async def record(request: Request):
        session = session_of(request)
        name, text = await run_in_threadpool(_locked(session, server.record), session)
        return Response(
            text,
            media_type="application/x-go-sgf" if name.endswith(".sgf") else "text/plain",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    async def http_error(request: Request, error: HTTPException):
        return JSONResponse({"error": error.detail}, status_code=error.status_code)

    routes = [
        Route("/", index),
        Route("/api/info", info),
        Route("/api/games", new_game, methods=["POST"]),
        Route("/api/games/{game_id}", show),
        Route("/api/games/{game_id}/move", action(server.move, True), methods=["POST"]),
        Route("/api/games/{game_id}/advance", action(server.advance, False), methods=["POST"]),
        Route("/api/games/{game_id}/undo", action(server.undo, False), methods=["POST"]),
        Route("/api/games/{game_id}/resign", action(server.resign, False), methods=["POST"]),
        Route("/api/games/{game_id}/options", action(server.options, True), methods=["POST"]),
        Route("/api/games/{game_id}/record", record),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    guard = Middleware(RequestGuard, host=host, timeout=request_timeout)
    return Starlette(
        routes=routes, middleware=[guard], exception_handlers={HTTPException: http_error}
    )


def _locked(session: Session, function):
    def run(*args):
        with session.lock:
            return function(*args)

    return run
