"""Outside engines: a guarded subprocess and the host-side player interface.

`EngineProcess` runs another program (GNU Go, Fairy-Stockfish, Pikafish) and exchanges
lines with it. A reader thread feeds its output into a queue, so every read has a deadline
and a hung engine never hangs the host; its stderr is drained into a bounded buffer whose
tail appears in error messages. Whatever goes wrong (the program exits, answers too late,
breaks the protocol, plays an illegal move) is an `EngineError` with a one-line message
naming the engine.

`HostPlayer` is what a tournament drives: one game at a time, told every move of either
side, asked for its moves. `engines.open_player(spec)` starts the player that an engine spec
(`azjax.config.opponents.parse_engine_spec`: `gtp:"gnugo --mode gtp"`) names.
"""

import abc
import collections
import os
import queue
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

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
