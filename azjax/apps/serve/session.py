"""The games behind the web board, without the web: a game record per browser tab, the
moves a human can click, the agents' replies, records to download.

Everything here runs on the host with unbatched states; the only device work is the
agents' search (batch 1, compiled once per simulation count) and the game's jitted step.
"""

import dataclasses
import secrets
import threading
import time
from collections import OrderedDict
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import notation, render
from azjax.types import UserError


class Ply(NamedTuple):
    """What the page shows of one move, kept as it is played (not recomputed per request)."""

    mover: int  # the player who made it
    name: str  # in the game's notation
    value: float | None  # the agent's searched value for itself; None for the human's moves


@dataclasses.dataclass
class Session:
    """One game in one browser tab.

    Attributes:
      id: the game id the browser names it by.
      states: the positions, `states[0]` the start, one more than `actions`.
      actions: the action ids played.
      agents: {player index: the name of the agent playing that side}; the other side (if
        any) is the human's.
      simulations: the agents' search simulations per move.
      analysis: whether the page shows the agent's value and search policy.
      resigned: the player index who resigned, or None.
      plies: one `Ply` per action: who played it, its name, the agent's value.
      touched: `time.monotonic()` of the last request.
    """

    id: str
    states: list
    actions: list[int]
    agents: dict[int, str]
    simulations: int
    analysis: bool = False
    piece_letters: bool = False  # Xiangqi pieces as FEN letters, for fonts without Chinese
    resigned: int | None = None
    plies: list[Ply] = dataclasses.field(default_factory=list)
    touched: float = dataclasses.field(default_factory=time.monotonic)
    # Held while a request changes the game, so that a double click cannot move twice.
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)
    _analysed: tuple | None = None  # (ply, policy, value) of the last analysis

    @property
    def state(self):
        return self.states[-1]

    @property
    def over(self) -> bool:
        return self.resigned is not None or bool(self.state.terminated)

    @property
    def to_move(self) -> int:
        return int(self.state.current_player)

    @property
    def last_mover(self) -> int | None:
        """The player who made the last move, or None at the start."""
        return self.plies[-1].mover if self.plies else None

    @property
    def human_moves(self) -> int:
        """How many moves the human has made."""
        human = self.human
        return sum(ply.mover == human for ply in self.plies)

    def push(self, state, action: int, ply: Ply) -> None:
        """Records `action`, described by `ply`, and the position `state` it led to."""
        self.states.append(state)
        self.actions.append(action)
        self.plies.append(ply)
        self._analysed = None

    def pop(self) -> None:
        """Takes the last move back."""
        self.states.pop()
        self.actions.pop()
        self.plies.pop()
        self._analysed = None

    @property
    def human(self) -> int | None:
        """The human's player index, or None when two agents play (watching)."""
        free = [p for p in (0, 1) if p not in self.agents]
        return free[0] if free else None


class Board:
    """What the web board needs of one game: legal moves as clicks, pictures, records.

    A move's `clicks` are the board points (the `data-point` of the picture's targets) the
    human clicks in order (`render.clicks`); moves with no click (Go's and Othello's pass)
    are buttons. This is every game's board; a game with options of its own (Go's komi,
    Xiangqi's start FEN) subclasses it in `azjax/apps/serve/boards/<family>.py` (`boards.of`).

    Attributes:
      game: the game.
      name: the registry's name of the game ("gomoku_6x6_k4").
      notation: the game's `Notation`.
      kind: the game's class name, for the page to show (never compared).
      names: the names of the first and the second player ("Black", "White").
    """

    def __init__(self, game, *, name: str | None = None):
        self.game = game
        self.name = name or game.name
        self.notation = notation.of(game)
        self.kind = type(game).__name__
        self.names = render.player_names(game)
        self._step = jax.jit(game.step)

    def info(self) -> dict:
        """What `/api/info` adds for this game: its options, as the page first shows them
        ({"komi": 7.5}, {"fen": start FEN}), and "options", the names of the options that
        it offers (a new game's "komi" and "fen", a view's "piece_letters")."""
        return {"options": []}

    def start(self, key, *, komi: float | None = None, fen: str | None = None):
        """The start position: the game's; games with a komi or a start FEN override it.

        Raises:
          UserError: a `komi` or a `fen` for a game that takes none.
        """
        if fen is not None:
            raise UserError(f"a start FEN cannot be given for {self.name}")
        if komi is not None:
            raise UserError(f"komi cannot be given for {self.name}")
        return self.game.init(key)

    def is_legal(self, state, action: int) -> bool:
        mask = np.asarray(state.legal_action_mask)
        return 0 <= action < mask.size and bool(mask[action]) and not bool(state.terminated)

    def play(self, session: Session, action: int, value: float | None) -> None:
        """Plays `action` in `session` (legal: the caller checked), naming it as it goes."""
        state = session.state
        ply = Ply(int(state.current_player), self.notation.action_to_string(action, state), value)
        session.push(self._step(state, jnp.int32(action)), action, ply)

    def moves(self, state) -> list[dict]:
        """The legal moves: {"action", "name", "clicks"} each (none once the game is over)."""
        if bool(state.terminated):
            return []
        legal = np.flatnonzero(np.asarray(state.legal_action_mask))
        return [
            {
                "action": int(a),
                "name": self.notation.action_to_string(int(a), state),
                "clicks": render.clicks(self.game, int(a), state),
            }
            for a in legal
        ]

    def svg(self, session: Session, *, policy=None, value=None) -> str:
        last = session.actions[-1] if session.actions else None
        return render.svg(
            self.game,
            session.state,
            policy=policy,
            value=value,
            last_action=last,
            targets=True,
            piece_letters=session.piece_letters,
        )

    def result(self, session: Session) -> str | None:
        """ "Red wins", "draw", "White wins by resignation" (`score` adds to a result on the
        board); None if not over."""
        if not session.over:
            return None
        if session.resigned is not None:
            return f"{self.names[1 - session.resigned]} wins by resignation"
        rewards = np.asarray(session.state.rewards)
        line = f"{self.names[int(np.argmax(rewards))]} wins" if rewards.any() else "draw"
        return line + self.score(session)

    def score(self, session: Session) -> str:
        """What a result on the board adds (Go: " (B+3.5)"); "" by default."""
        del session
        return ""

    def record(self, session: Session, player_names: tuple[str, str]) -> tuple[str, str]:
        """The game's record as (file name, text): the game, the players, the moves in the
        game's notation, one numbered per line, and the result (Go: SGF instead)."""
        result = self.result(session) or "unfinished"
        lines = [
            f"game: {self.name}",
            f"{self.names[0]}: {player_names[0]}",
            f"{self.names[1]}: {player_names[1]}",
            *self.record_header(session),
        ]
        names = [ply.name for ply in session.plies]
        lines.append("moves: " + " ".join(names))
        lines += [f"{i + 1}. {name}" for i, name in enumerate(names)]
        lines.append(f"result: {result}")
        return f"{session.id}.txt", "\n".join(lines) + "\n"

    def record_header(self, session: Session) -> list[str]:
        """The lines a record has between its players and its moves (Xiangqi: the start
        FEN); none by default."""
        del session
        return []


class Agents:
    """The agents of a server by name, each searching at any of the offered simulation
    counts (compiled once per count, on first use). Searches run one at a time."""

    def __init__(self, agents: dict[str, Any], *, simulations: int, choices=()):
        self.agents = agents
        self.default = int(simulations)
        self.choices = sorted({self.default, *map(int, choices)})
        self._lock = threading.Lock()
        self._variants: dict[tuple[str, int], Any] = {}

    def check(self, simulations: Any) -> int:
        if isinstance(simulations, bool) or simulations not in self.choices:
            raise UserError(f"simulations must be one of {self.choices}")
        return int(simulations)

    def _agent(self, name: str, simulations: int):
        key = (name, simulations)
        if key not in self._variants:
            agent = self.agents[name]
            self._variants[key] = (
                agent
                if agent.num_simulations == simulations
                else dataclasses.replace(agent, num_simulations=simulations)
            )
        return self._variants[key]

    def search(self, name: str, state, simulations: int, key) -> tuple[int, np.ndarray, float]:
        """The agent's move, search policy [A] and searched value for the mover in `state`."""
        with self._lock:
            output = self._agent(name, simulations).act(jax.tree.map(lambda x: x[None], state), key)
            return (
                int(output.action[0]),
                np.asarray(output.action_weights[0]),
                float(output.value[0]),
            )


class Sessions:
    """The games being played, by id: at most `max_games`, each dropped after `ttl` seconds
    without a request (the least recently used goes first when full)."""

    def __init__(self, *, max_games: int = 64, ttl: float = 3600.0):
        self.max_games, self.ttl = max_games, ttl
        self._games: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, **fields) -> Session:
        with self._lock:
            self._expire()
            while len(self._games) >= self.max_games:
                self._games.popitem(last=False)
            session = Session(id=secrets.token_urlsafe(12), **fields)
            self._games[session.id] = session
            return session

    def get(self, game_id: str) -> Session:
        with self._lock:
            self._expire()
            session = self._games.get(game_id)
            if session is None:
                raise KeyError(game_id)
            session.touched = time.monotonic()
            self._games.move_to_end(game_id)
            return session

    def __len__(self) -> int:
        return len(self._games)

    def _expire(self) -> None:
        now = time.monotonic()
        for game_id in [i for i, s in self._games.items() if now - s.touched > self.ttl]:
            del self._games[game_id]
