"""Outside engines: a guarded subprocess, the host-side player interface and engine specs.

`EngineProcess` runs another program (GNU Go, Fairy-Stockfish, Pikafish) and exchanges
lines with it. A reader thread feeds its output into a queue, so every read has a deadline
and a hung engine never hangs the host; its stderr is drained into a bounded buffer whose
tail appears in error messages. Whatever goes wrong (the program exits, answers too late,
breaks the protocol, plays an illegal move) is an `EngineError` with a one-line message
naming the engine.

`HostPlayer` is what a tournament drives: one game at a time, told every move of either
side, asked for its moves. `parse_engine_spec` reads the engine specs of the command line:

    gtp:"gnugo --mode gtp --level 5"          Go over GTP (`gtp_client.GtpPlayer`)
    uci:fairy-stockfish depth=1               Xiangqi over UCI (`uci_client.UciPlayer`)
    uci:pikafish movetime=200 timeout=30

The command is quoted when it holds spaces; options follow as key=value: for both
`timeout=SECONDS` (per answer, default 30); for GTP `cleanup=true|false` (default true: moves
by `kgs-genmove_cleanup` where the engine has it, so that it captures dead stones before
passing, see `gtp_client`); for UCI one of `depth=N`, `nodes=N`, `movetime=MS` (default
movetime=1000), `ranks=auto|0-9|1-10` (see `uci_client`) and `skill=N` (the engine's
`Skill Level`, -20 to 20: Fairy-Stockfish at its weakest is `skill=-20`).
`engines.open_player(spec)` starts the player a spec names.
"""

import abc
import collections
import dataclasses
import os
import queue
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

from azjax import games
from azjax.games import Game, State
from azjax.types import UserError

RESIGN = -1  # the action `HostPlayer.choose` returns to resign
DEFAULT_TIMEOUT = 30.0  # seconds an engine may take for one answer (beyond a move's time)
_STDERR_LINES = 20  # stderr lines kept for error messages
_STDERR_CHARS = 300  # characters of that tail shown in one message
_QUIT_GRACE = 2.0  # seconds an engine gets to exit after the quit command


class EngineError(Exception):
    """An outside engine failed: it exited, did not answer in time, broke its protocol or
    played an illegal move. The message is one line naming the engine."""


class EngineProcess:
    """A line-based engine in a child process, read with deadlines.

    Args:
      argv: the program and its arguments, or a command line (split like a shell would).
      name: the engine's name in error messages.
      timeout: seconds a read waits by default.
      quit_command: the line `close` sends to ask the engine to exit.
      cwd, env: the working directory and environment of the program (default: ours).

    Raises:
      UserError: an empty command, or a program that is missing or cannot be run.
    """

    def __init__(
        self,
        argv: str | Sequence[str],
        *,
        name: str,
        timeout: float = DEFAULT_TIMEOUT,
        quit_command: str = "quit",
        cwd: str | os.PathLike | None = None,
        env: dict[str, str] | None = None,
    ):
        argv = shlex.split(argv) if isinstance(argv, str) else list(argv)
        if not argv:
            raise UserError(f"engine {name}: empty command")
        self.name, self.timeout, self.quit_command = name, timeout, quit_command
        try:
            # A session of its own: Ctrl-C at the terminal reaches the host only (which
            # closes its engines), and `kill` reaches the engine's own children too.
            self._process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                cwd=cwd,
                env=env,
            )
        except FileNotFoundError:
            raise UserError(f"engine program not found: {argv[0]}") from None
        except (PermissionError, OSError) as error:
            reason = error.strerror or str(error)
            raise UserError(f"engine program cannot be run: {argv[0]}: {reason}") from None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)
        self._ended = False  # the engine's output has closed
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _read_stdout(self) -> None:
        for line in self._process.stdout:
            self._lines.put(line.decode("utf-8", errors="replace").rstrip("\r\n"))
        self._lines.put(None)

    def _read_stderr(self) -> None:
        for line in self._process.stderr:
            text = line.decode("utf-8", errors="replace").strip()
            if text:
                self._stderr.append(text[:_STDERR_CHARS])

    @property
    def alive(self) -> bool:
        """Whether the program is running with its output open."""
        return not self._ended and self._process.poll() is None

    def error(self, message: str) -> EngineError:
        """An `EngineError` "engine NAME MESSAGE", with the tail of its stderr."""
        text = f"engine {self.name} {message}"
        tail = " | ".join(self._stderr)
        if tail:
            text += f" (stderr: {tail[-_STDERR_CHARS:]})"
        return EngineError(" ".join(text.split()))

    def _exit_error(self, doing: str) -> EngineError:
        try:
            status = self._process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return self.error(f"closed its output {doing}")
        self._threads[1].join(timeout=0.5)  # the last stderr lines
        if status < 0:
            try:
                how = f"was killed by {signal.Signals(-status).name}"
            except ValueError:
                how = f"was killed by signal {-status}"
        else:
            how = f"exited with status {status}"
        return self.error(f"{how} {doing}")

    def send(self, line: str) -> None:
        """Writes one line (newlines within it become spaces).

        Raises:
          EngineError: the engine has exited.
        """
        data = (" ".join(line.splitlines()) + "\n").encode("utf-8")
        try:
            self._process.stdin.write(data)
            self._process.stdin.flush()
        except (OSError, ValueError):  # BrokenPipeError, or a closed pipe
            raise self._exit_error(f"before {line!r}") from None

    def read_line(self, timeout: float | None = None, *, waiting_for: str = "an answer") -> str:
        """The next line of output (without its line end), waiting at most `timeout` seconds
        (default: the engine's timeout).

        Raises:
          EngineError: the engine exited or did not write a line in time.
        """
        return self.read_until(lambda _: True, timeout=timeout, waiting_for=waiting_for)[-1]

    def read_until(
        self,
        done: Callable[[str], bool],
        *,
        timeout: float | None = None,
        waiting_for: str = "an answer",
    ) -> list[str]:
        """Lines up to and including the first for which `done` is true, all within
        `timeout` seconds (default: the engine's timeout).

        Raises:
          EngineError: the engine exited or did not finish in time (`waiting_for` names
            what was awaited in the message).
        """
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        lines = []
        while True:
            if self._ended:
                raise self._exit_error(f"while the host waited for {waiting_for}")
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise self.error(f"did not send {waiting_for} within {timeout:g} s") from None
            if line is None:
                self._ended = True
                continue
            lines.append(line)
            if done(line):
                return lines

    def close(self) -> None:
        """Sends the quit command, waits briefly for the engine to exit, then kills it (and
        its process group). Safe to call more than once."""
        process = self._process
        if process.poll() is None:
            try:
                self.send(self.quit_command)
                process.stdin.close()
                process.wait(timeout=_QUIT_GRACE)
            except (EngineError, OSError, ValueError, subprocess.TimeoutExpired):
                pass
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                process.kill()
            process.wait()
        for thread in self._threads:
            thread.join(timeout=1.0)
        for pipe in (process.stdin, process.stdout, process.stderr):
            try:
                pipe.close()
            except OSError:
                pass
        self._ended = True

    def __enter__(self) -> "EngineProcess":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


class HostPlayer(abc.ABC):
    """A player that a host (a tournament, a referee) drives move by move.

    The host plays one game at a time: `start`, then `observe` for every move of either
    side (this player's own moves included), with `choose` asked whenever this player is to
    move; `close` at the end. Moves are action ids of the game.
    """

    name: str

    @abc.abstractmethod
    def start(self, game: Game, state: State) -> None:
        """Begins a new game from `state` (the start position, or a set-up position)."""

    @abc.abstractmethod
    def observe(self, state: State, action: int) -> None:
        """`action` was played in `state` (by either side)."""

    @abc.abstractmethod
    def choose(self, state: State) -> int:
        """The action this player plays in `state` (its side to move), or `RESIGN`.

        Raises:
          EngineError: the engine crashed, timed out, or sent an illegal or unreadable move.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Releases the player's resources (stops its engine)."""

    def __enter__(self) -> "HostPlayer":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


@dataclasses.dataclass(frozen=True)
class EngineSpec:
    """A parsed engine spec (`engines.open_player` starts a player from it).

    Attributes:
      protocol: "gtp" (Go) or "uci" (Xiangqi).
      command: the engine's command line.
      options: the key=value options, typed (see the module docstring).
    """

    protocol: str
    command: str
    options: dict

    @property
    def name(self) -> str:
        return f"{self.protocol}:{self.command}"

    def plays(self, game: Game) -> bool:
        """Whether this engine's protocol plays `game`."""
        return games.family_of(game) == ("go" if self.protocol == "gtp" else "xiangqi")

    def require_plays(self, game: Game, spec: str | None = None) -> None:
        """Raises UserError (naming `spec`, the user's words, or the engine) unless this
        engine's protocol plays `game`."""
        if not self.plays(game):
            raise UserError(f"{spec or self.name} ({self.protocol}) cannot play {game.name}")


def _boolean(text: str) -> bool:
    """true/false (also yes/no, on/off, 1/0, any case) as a bool; ValueError otherwise."""
    words = {"true": True, "yes": True, "on": True, "1": True}
    words.update({"false": False, "no": False, "off": False, "0": False})
    try:
        return words[text.lower()]
    except KeyError:
        raise ValueError(text) from None


_OPTIONS = {  # protocol -> option -> (type, check, what it must be)
    "gtp": {
        "timeout": (float, lambda v: 0 < v < 1e6, "a positive number of seconds"),
        "cleanup": (_boolean, lambda v: True, "true or false"),
    },
    "uci": {
        "timeout": (float, lambda v: 0 < v < 1e6, "a positive number of seconds"),
        "depth": (int, lambda v: 1 <= v <= 1000, "an integer from 1 to 1000"),
        "nodes": (int, lambda v: 1 <= v <= 10**15, "a positive integer"),
        "movetime": (int, lambda v: 1 <= v <= 10**9, "a positive number of milliseconds"),
        "ranks": (str, lambda v: v in ("auto", "0-9", "1-10"), "auto, 0-9 or 1-10"),
        "skill": (int, lambda v: -20 <= v <= 20, "an integer from -20 to 20"),
    },
}


def parse_engine_spec(spec: str) -> EngineSpec:
    """Reads `gtp:COMMAND [key=value ...]` or `uci:COMMAND [key=value ...]`; COMMAND is
    quoted when it holds spaces (`gtp:"gnugo --mode gtp --level 5"`).

    Raises:
      UserError: a spec that is not of that form, or an unknown or bad option (one line).
    """
    protocol, colon, rest = spec.strip().partition(":")
    protocol = protocol.lower()

    def fail(reason: str):
        raise UserError(f"bad engine spec {spec!r}: {reason}")

    if not colon or protocol not in _OPTIONS:
        fail('expected gtp:COMMAND or uci:COMMAND, like gtp:"gnugo --mode gtp"')
    try:
        words = shlex.split(rest)
    except ValueError as error:
        fail(str(error))
    if not words or not words[0].strip():
        fail("no command")
    command, options, known = words[0], {}, _OPTIONS[protocol]
    for word in words[1:]:
        key, equals, value = word.partition("=")
        if not equals:
            fail(f"{word!r} is no key=value option (quote a command that holds spaces)")
        if key not in known:
            fail(f"unknown option {key!r}; {protocol} takes {', '.join(known)}")
        kind, check, what = known[key]
        try:
            typed = kind(value)
        except ValueError:
            typed = None
        if typed is None or not check(typed):
            fail(f"{key} must be {what}, got {value!r}")
        options[key] = typed
    if len({"depth", "nodes", "movetime"} & options.keys()) > 1:
        fail("give at most one of depth, nodes and movetime")
    return EngineSpec(protocol, command, options)
