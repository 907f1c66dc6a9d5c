"""A GTP (Go Text Protocol, version 2) engine around a trained Go agent.

    azjax gtp --workdir runs/go_9x9 --simulations 200

speaks GTP on stdin/stdout so that Go GUIs (Sabaki, GoGui, Lizzie) and other engines
(GNU Go through a referee) can play it. Every command gets a response; illegal or malformed
commands get a GTP error (`? message`), never a crash: input is read as bytes (what is not
UTF-8 is replaced), lines are at most `gtp_io.MAX_LINE` bytes long, numbers and command ids
are ASCII digits, and komi is a finite number of at most the number of points either way.

Commands: the GTP 2 core (protocol_version, name, version, known_command, list_commands,
quit, boardsize, clear_board, komi, play, genmove), undo, showboard, final_score, the time
commands (accepted, the search is fixed by `--simulations`), the GNU Go extensions
list_stones, reg_genmove and printsgf, and those of `gtp_extensions`: handicap, loadsgf,
final_status_list, kgs-genmove_cleanup and the streamed analysis of Leela Zero and KataGo.
Records (printsgf, `sgf_dir`) hold the date and the searched value of the engine's moves.

Our games alternate strictly (see `games.base`), while GTP lets a controller play two moves of
one colour in a row: the engine then inserts a pass for the other colour (refused where that
pass would be the second in a row and so end the game). The engine's game has the run's
rules and komi but a move limit of 8 x the number of points instead of the self-play limit,
so that controllers decide when a game ends. The `komi` command sets the komi field of the
positions (`GoState.komi`), so one compiled search serves every komi.
"""

import datetime
import functools
import json
import logging
import re
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO, TextIO

import jax
import jax.numpy as jnp
import numpy as np

from azjax import __version__, games
from azjax.apps.protocols import gtp_analysis, gtp_extensions, gtp_io
from azjax.apps.protocols.gtp_io import COLORS, FLOAT, GtpError, Streaming, integer, integers
from azjax.games import State, notation
from azjax.games.records import sgf
from azjax.matches.agent import Agent, TreeMemory
from azjax.types import UserError

_log = logging.getLogger(__name__)

COMMANDS = (
    *("protocol_version", "name", "version", "known_command", "list_commands", "quit"),
    *("boardsize", "clear_board", "komi", "play", "genmove", "reg_genmove", "undo"),
    *("showboard", "final_score", "list_stones", "printsgf"),
    *("time_settings", "time_left"),
    *gtp_extensions.COMMANDS,
)
_ID = re.compile(r"[0-9]+")  # a command id: ASCII digits
# Games under GTP end when the controller says so (two passes, resignation); the move limit
# that bounds self-play is raised to this many times the number of points.
_MAX_MOVES_FACTOR = 8


class Engine(gtp_extensions.ExtensionCommands):
    """Answers GTP commands for one Go agent; one game at a time, with undo.

    Args:
      agent: a Go agent (`agent.load_agent`).
      sgf_dir: when set, each game is written there as SGF when the board is cleared or
        the engine quits.
      seed: seeds the search.
      resign_below: resign when the searched value of the position drops below this
        (None: never resign).
      analysis_simulations: the simulation counts of the searches of an analysis (default:
        `gtp_analysis.default_analysis_simulations`).
    """

    def __init__(
        self,
        agent: Agent,
        *,
        sgf_dir: str | Path | None = None,
        seed: int = 0,
        resign_below: float | None = None,
        analysis_simulations: Sequence[int] | None = None,
    ):
        if games.family_of(agent.game) != "go":
            raise UserError(f"the GTP engine plays go; this run plays {agent.game.name}")
        self.agent = agent
        self.size = agent.game.size
        self.sgf_dir = None if sgf_dir is None else Path(sgf_dir)
        self.resign_below = resign_below
        self._key = jax.random.PRNGKey(seed)
        self._games_saved = 0
        self.finished = False
        run = agent.settings.run
        max_moves = _MAX_MOVES_FACTOR * self.size * self.size
        # Komi is a field of the state (`GoState.komi`), so these compile once for every komi.
        self.game = games.make(run.game, **{**dict(run.game_kwargs), "max_moves": max_moves})
        self.komi = self.game.komi
        self._step = jax.jit(self.game.step)
        self._score_of = jax.jit(self.game.score)
        self._act = TreeMemory(  # (variables, states [1], key) -> SearchOutput, tree reused
            agent.settings.agent.searcher(
                self.game, agent.network, num_simulations=agent.num_simulations
            )
        )
        self._analyzer = gtp_analysis.Analyzer(agent, self.game, analysis_simulations)
        self._vertices = {
            notation.action_to_string(self.game, a).lower(): a for a in range(self.game.num_actions)
        }
        self._new_game()

    @property
    def state(self) -> State:
        return self._states[-1]

    def _set_komi(self, komi: float) -> None:
        """Sets the komi of the current game (every position, so undo keeps it) and of the
        games after it."""
        self.komi = komi
        value = jnp.float32(komi)
        self._states = [state.replace(komi=value) for state in self._states]

    def _new_game(
        self, setup: np.ndarray | None = None, first_player: int = 0, date: str | None = None
    ) -> None:
        """Starts a game from `setup` stones ([N] int8, +1 black, -1 white; None: an empty
        board) with `first_player` to move, played on `date` (default: today)."""
        board = np.zeros(self.size * self.size, np.int8) if setup is None else setup
        start = self.game.setup(board, first_player).replace(komi=jnp.float32(self.komi))
        self._states: list[State] = [start]
        self._moves: list[int] = []
        self._comments: list[str | None] = []  # per move: the search's, for the engine's moves
        self._setup = setup
        self._date = date or datetime.date.today().isoformat()

    def _push(self, action: int, comment: str | None = None) -> None:
        self._states.append(self._step(self.state, jnp.int32(action)))
        self._moves.append(action)
        self._comments.append(comment)

    def _truncate(self, num_moves: int) -> None:
        """Takes back the moves after the first `num_moves`."""
        del self._states[num_moves + 1 :], self._moves[num_moves:], self._comments[num_moves:]

    def _align(self, color: int) -> None:
        """Makes `color` the player to move, inserting a pass for the other colour."""
        if int(self.state.current_player) == color:
            return
        if self._moves and self._moves[-1] == self.size * self.size:
            raise GtpError("cannot play two moves of one colour after a pass")
        self._push(self.size * self.size)

    def _score(self) -> float:
        return float(self._score_of(self.state))

    def save_game(self) -> Path | None:
        """Writes the current game to `sgf_dir` (if set and the game has moves); a failed
        write is reported on stderr and the engine goes on."""
        if self.sgf_dir is None or not self._moves:
            return None
        self._games_saved += 1
        path = self.sgf_dir / f"gtp-{self._games_saved:04d}.sgf"
        try:
            self.sgf_dir.mkdir(parents=True, exist_ok=True)
            self._write_record(path)
        except (GtpError, OSError) as error:
            _log.warning("azjax gtp: the game is not saved: %s", error)
            return None
        return path

    def _write_record(self, path: Path) -> None:
        text = self.record()
        try:
            path.write_text(text, encoding="utf-8")
        except (OSError, ValueError) as error:  # ValueError: a name the file system can't encode
            reason = getattr(error, "strerror", None) or str(error)
            raise GtpError(f"cannot write SGF to {path}: {reason}") from None

    def record(self) -> str:
        """The current game as SGF (result: the Tromp-Taylor score once it has ended)."""
        over = bool(self.state.terminated)
        return sgf.game_record(
            self.game,
            self._moves,
            result=sgf.result_string(self._score()) if over else None,
            komi=self.komi,
            setup=self._setup,
            first_player=int(self._states[0].current_player),
            comments=self._comments,
            date=self._date,
        )

    @staticmethod
    def _color(text: str) -> int:
        color = COLORS.get(text.lower())
        if color is None:
            raise GtpError("invalid color")
        return color

    def _vertex(self, text: str) -> int:
        action = self._vertices.get(text.lower())
        if action is None:
            raise GtpError("invalid coordinate")
        return action

    def _name(self, action: int) -> str:
        return notation.action_to_string(self.game, action).upper().replace("PASS", "pass")

    def handle(self, command: str, args: list[str]) -> str | Streaming:
        """Runs one command; returns the response text (or a `Streaming` one) or raises
        GtpError."""
        if command not in COMMANDS:
            raise GtpError("unknown command")
        handler = getattr(self, "_cmd_" + command.replace("-", "_"))
        return handler(*args) if _accepts(handler, len(args)) else _syntax_error()

    def _cmd_protocol_version(self):
        return "2"

    def _cmd_name(self):
        return "azjax"

    def _cmd_version(self):
        name = json.loads(self.agent.settings.config_json)["name"]
        return f"{__version__} ({name}, iteration {self.agent.iteration})"

    def _cmd_known_command(self, name):
        return "true" if name in COMMANDS else "false"

    def _cmd_list_commands(self):
        return "\n".join(COMMANDS)

    def _cmd_quit(self):
        self.save_game()
        self.finished = True
        return ""

    def _cmd_boardsize(self, size):
        if integer(size, "boardsize not an integer") != self.size:
            raise GtpError("unacceptable size")
        self.save_game()
        self._new_game()
        return ""

    def _cmd_clear_board(self):
        self.save_game()
        self._new_game()
        return ""

    def _cmd_komi(self, value):
        if not FLOAT.fullmatch(value):  # float() would take "nan", "inf", "1_0" and "٣"
            raise GtpError("komi not a float")
        komi, limit = float(value), self.size * self.size
        if not abs(komi) <= limit:  # also catches "1e999" (inf)
            raise GtpError(f"komi must be a finite number from -{limit} to {limit}")
        self._set_komi(komi)
        return ""

    def _cmd_play(self, color, vertex):
        color, action = self._color(color), self._vertex(vertex)
        if bool(self.state.terminated):
            raise GtpError("illegal move (the game is over)")
        played = len(self._moves)
        self._align(color)
        if not bool(self.state.legal_action_mask[action]):
            self._truncate(played)  # drop an inserted pass
            raise GtpError("illegal move")
        self._push(action)
        return ""

    def _generate(self, color, *, play: bool, cleanup: bool = False) -> str:
        """Searches a move for `color` in the current position; plays it if `play`; with
        `cleanup`, plays on instead of passing (`gtp_extensions.cleanup_action`)."""
        color = self._color(color)
        if bool(self.state.terminated):
            return "pass"
        played = len(self._moves)
        self._align(color)
        self._key, key = jax.random.split(self._key)
        batched = jax.tree.map(lambda x: x[None], self.state)
        output = jax.device_get(self._act(self.agent.variables, batched, key))
        action, value = int(output.action[0]), float(output.value[0])
        if cleanup:
            weights = output.action_weights[0]
            action = gtp_extensions.cleanup_action(self.state, action, weights, self.size)
        return self._finish_move(played, action, value, play=play)

    def _finish_move(self, played: int, action: int, value: float, *, play: bool = True) -> str:
        """Resigns, takes back (unless `play`) or plays the searched `action` (the position's
        searched `value` goes into the record); returns the GTP response."""
        resign = self.resign_below is not None and value < self.resign_below
        if resign or not play:
            self._truncate(played)
            return "resign" if resign else self._name(action)
        self._push(action, sgf.search_comment(value, self.agent.num_simulations))
        return self._name(action)

    def _cmd_genmove(self, color):
        return self._generate(color, play=True)

    def _cmd_reg_genmove(self, color):
        return self._generate(color, play=False)

    def _cmd_undo(self):
        if not self._moves:
            raise GtpError("cannot undo")
        self._truncate(len(self._moves) - 1)
        return ""

    def _cmd_showboard(self):
        return "\n" + notation.render(self.game, self.state)

    def _cmd_final_score(self):
        return sgf.result_string(self._score())

    def _cmd_list_stones(self, color):
        stone = 1 if self._color(color) == 0 else -1
        board = jax.device_get(self.state.board)
        return " ".join(self._name(point) for point in range(board.size) if board[point] == stone)

    def _cmd_printsgf(self, *path):
        if len(path) > 1:
            raise GtpError("syntax error")
        if path:
            self._write_record(Path(path[0]))
            return ""
        return self.record().strip()

    def _cmd_time_settings(self, main_time, byo_yomi_time, byo_yomi_stones):
        integers(main_time, byo_yomi_time, byo_yomi_stones)
        return ""

    def _cmd_time_left(self, color, time, stones):
        self._color(color)
        integers(time, stones)
        return ""


def _accepts(handler, count: int) -> bool:
    code = handler.__code__
    positional = code.co_argcount - 1  # without self
    varargs = bool(code.co_flags & 0x04)
    return count == positional or (varargs and count >= positional)


def _syntax_error():
    raise GtpError("syntax error")


def _clean(line: str) -> str:
    """GTP preprocessing: drop control characters and comments, tabs become spaces."""
    line = line.split("#", 1)[0].replace("\t", " ")
    return "".join(c for c in line if c >= " " or c == "\n").strip()


def respond(engine: Engine, line: str, *, emit=None, wait=None) -> str | None:
    """The full response (with its id and the closing blank line) to one input line, or
    None for a line holding no command (empty or a comment).

    A streaming response (an analysis) writes its `=` line and its lines with `emit` as they
    come and runs until `wait(timeout)` reports the next input line (`Streaming`); the rest
    of it is returned. Without `emit` and `wait` it stops after its first search and all of
    it is returned.
    """
    words = _clean(line).split()
    if isinstance(line, gtp_io.LongLine):  # its start: an id that a word follows is whole
        command_id = words[0] if len(words) > 1 and _ID.fullmatch(words[0]) else ""
        return f"?{command_id} input line longer than {gtp_io.MAX_LINE} bytes\n\n"
    if not words:
        return None
    command_id = ""
    if _ID.fullmatch(words[0]):
        command_id, words = words[0], words[1:]
        if not words:
            return f"?{command_id} syntax error\n\n"
    try:
        text = engine.handle(words[0].lower(), words[1:])
        status = "="
    except GtpError as error:
        text, status = str(error), "?"
    except Exception as error:  # a bug must not kill a running game: report it and go on
        traceback.print_exc(file=sys.stderr)
        text, status = f"internal error: {type(error).__name__}: {error}", "?"
    if isinstance(text, Streaming):
        return text.finish(command_id, emit, wait)
    separator = "" if not text or text.startswith("\n") else " "
    return f"{status}{command_id}{separator}{text}\n\n"


def serve(engine: Engine, stdin: BinaryIO | TextIO, stdout: TextIO) -> int:
    """Answers commands from `stdin` until `quit` or the end of input; returns 0.

    Lines are read as bytes (from `stdin.buffer` where there is one) and decoded as UTF-8
    with undecodable bytes replaced, so that no input stops the engine; a line longer than
    `gtp_io.MAX_LINE` gets an error response. An analysis streams until the next line
    arrives (`gtp_io.LineReader`).
    """
    lines = gtp_io.LineReader(stdin)
    write = functools.partial(gtp_io.write, stdout)
    while (line := lines.readline()) is not None:
        response = respond(engine, line, emit=write, wait=lines.wait)
        if response is not None:
            write(response)
        if engine.finished:
            break
    else:
        engine.save_game()
    return 0
