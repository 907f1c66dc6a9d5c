"""SGF records of Go games: writing one (`game_record`, for self-play, arena and GTP games
and `records.dumps`), and the `Record`s of every game of an SGF file (`read_file`).

Written: board size, komi, rules, date, players, result, setup stones (handicap), the moves
and, where known, a comment per move with the searched value. Points are SGF coordinates,
column letter then row letter counted from the top-left ("aa"), which is exactly the order
of Go's action ids (row-major from the top-left); a pass is the empty value `B[]`.

Read (`sgf_parse` reads the text): the board must be the game's size; KM sets the komi, AB,
AW, AE and PL the start, RE the result ("B+..." 1.0, "W+..." -1.0, "0" or "Draw" 0.0; none,
"?" or "Void" is unknown, a bad record); the colours must alternate from the player to
move. The file's text is in its CA charset, else UTF-8.

    text = sgf.game_record(game, actions, result=sgf.result_string(score))
"""

import codecs
import datetime
import functools
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import jax
import numpy as np

from azjax import __version__, games
from azjax.games import Game
from azjax.games.records import rules
from azjax.games.records.base import (
    Record,
    RecordError,
    Unchecked,
    read_text,
    shorten,
)
from azjax.games.records.sgf_parse import LETTERS, SgfError, SgfGame, game_of, game_trees
from azjax.types import UserError

# Root properties kept in a record's `info`, by the name they are kept under.
_INFO = {"DT": "date", "EV": "event", "RO": "round", "PC": "place", "RU": "rules", "HA": "handicap"}
# The charset property (CA), read from the bytes before they are decoded.
_CHARSET = re.compile(rb"(?<![A-Za-z])CA\s*\[([^\]]*)\]")


def check_go(game: Game) -> None:
    """Raises UserError unless `game` is a Go game (the only game SGF records are kept for)."""
    if games.family_of(game) != "go":
        raise UserError(f"SGF records are written for go games, not {game.name}")


def result_string(score: float) -> str:
    """SGF/GTP result for a score (black area - white area - komi): "B+3.5", "W+0.5", "0"."""
    if score > 0:
        return f"B+{score:g}"
    if score < 0:
        return f"W+{-score:g}"
    return "0"


def search_comment(value: float, simulations: int | None = None) -> str:
    """The comment on an engine's move: the searched value of the position for the player
    who moved, in [-1, 1] and as a win rate (draws count half), and the search's visits."""
    text = f"value {value:+.3f} (win rate {(1 + value) / 2:.1%})"
    return text if simulations is None else f"{text}, {simulations} visits"


def move_value(game: Game, action: int) -> str:
    """The SGF value of an action: two coordinate letters, or "" for a pass."""
    size = game.size
    if action == size * size:
        return ""
    row, column = divmod(int(action), size)
    return LETTERS[column] + LETTERS[row]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("]", "\\]")


def game_record(
    game: Game,
    actions: Sequence[int],
    *,
    result: str | None = None,
    black: str = "azjax",
    white: str = "azjax",
    comment: str | None = None,
    komi: float | None = None,
    setup: np.ndarray | None = None,
    first_player: int = 0,
    comments: Sequence[str | None] | None = None,
    date: str | None = None,
) -> str:
    """Writes one Go game as an SGF string.

    Args:
      game: the Go game (its size and komi go into SZ and KM).
      actions: the action ids played, in order, `first_player` first.
      result: the RE value ("B+3.5", "W+R", "0"); omitted when None.
      black, white: the players' names (PB, PW).
      comment: a game comment (GC).
      komi: the komi played (KM) where it differs from the game's (`GoState.komi`).
      setup: [size*size] int8 stones on the board before the first move (+1 black, -1
        white; AB, AW, and HA when they are two or more black stones only), or None.
      first_player: who makes the first move, 0 black or 1 white (PL[W] when white).
      comments: one comment per action (C), None or "" for none.
      date: the DT value, YYYY-MM-DD (default: today).
    """
    check_go(game)
    header = {
        "GM": "1",
        "FF": "4",
        "CA": "UTF-8",
        "AP": f"azjax:{__version__}",
        "SZ": str(game.size),
        "KM": f"{game.komi if komi is None else komi:g}",
        "RU": "Tromp-Taylor" if game.superko else "Tromp-Taylor, simple ko",
        "DT": datetime.date.today().isoformat() if date is None else date,
        "PB": black,
        "PW": white,
    }
    if result is not None:
        header["RE"] = result
    if comment:
        header["GC"] = comment
    root = "".join(f"{key}[{_escape(value)}]" for key, value in header.items())
    if setup is not None:
        setup = np.asarray(setup).reshape(-1)
        black_points, white_points = np.flatnonzero(setup == 1), np.flatnonzero(setup == -1)
        if len(black_points) >= 2 and not len(white_points):
            root += f"HA[{len(black_points)}]"
        for key, points in (("AB", black_points), ("AW", white_points)):
            if len(points):
                root += key + "".join(f"[{move_value(game, point)}]" for point in points)
    if first_player == 1:
        root += "PL[W]"
    moves = []
    for ply, action in enumerate(actions):
        note = comments[ply] if comments is not None and ply < len(comments) else None
        text = f";{'BW'[(first_player + ply) % 2]}[{move_value(game, action)}]"
        moves.append(text + (f"C[{_escape(note)}]" if note else ""))
    return f"(;{root}{''.join(moves)})\n"


def read_file(path: Path, shown: str, game: Game) -> Iterator[Unchecked | RecordError]:
    """Every game of the SGF file `path` (named `shown` in messages: the first game
    "games/a.sgf", the next "games/a.sgf#2"), as an unchecked record or the error that
    makes it a bad one. A file that is not SGF text stops at its first bad game tree."""
    try:
        if games.family_of(game) != "go":
            raise RecordError(f"{shown}: SGF records are Go games, not {game.name}")
        trees = game_trees(read_text(path, shown, _charset))
    except RecordError as error:
        yield error
        return
    number = 0
    while True:
        number += 1
        source = shown if number == 1 else f"{shown}#{number}"
        try:
            nodes = next(trees)
        except StopIteration:
            return
        except SgfError as error:
            yield RecordError(f"{source}: {error}")
            return
        try:
            yield _unchecked(game, source, game_of(nodes))
        except (SgfError, RecordError) as error:
            yield RecordError(f"{source}: {error}")


def _charset(data: bytes) -> tuple[str]:
    """The codec of the file's CA property, else UTF-8."""
    found = _CHARSET.search(data)
    name = found[1].decode("ascii", "replace").strip() if found else "utf-8"
    try:
        return (codecs.lookup(name).name,)
    except LookupError:
        raise RecordError(f"an unknown charset CA[{shorten(name)}]") from None


def result_of(text: str | None) -> float:
    """Player 0's (Black's) reward from an RE value.

    Raises:
      RecordError: no result, or one that says no winner ("?", "Void", anything else).
    """
    value = (text or "").strip().upper()
    if value.startswith("B+"):
        return 1.0
    if value.startswith("W+"):
        return -1.0
    if value in ("0", "DRAW"):
        return 0.0
    shown = "no result (RE)" if text is None else f"an unknown result RE[{shorten(text)}]"
    raise RecordError(f"{shown}: B+..., W+..., 0 or Draw is needed")


def _unchecked(game: Game, source: str, parsed: SgfGame) -> Unchecked:
    if parsed.size != game.size:
        raise RecordError(f"a {parsed.size}x{parsed.size} board (SZ), not {game.name}'s")
    root = {name: values[0].strip() for name, values in parsed.root.items() if values}
    result = result_of(root.get("RE"))
    start = rules.initial(game)
    if parsed.setup is not None or parsed.first_player:
        setup = np.zeros(game.size**2, np.int8) if parsed.setup is None else parsed.setup
        with rules.on_host():
            start = jax.device_get(_setup(game)(setup, np.int32(parsed.first_player)))
    if parsed.komi is not None:
        start = start.replace(komi=np.float32(parsed.komi))
    texts = []
    for number, (player, action) in enumerate(parsed.moves, 1):
        text = f"{'BW'[player]}[{move_value(game, action)}]"
        if player != (parsed.first_player + number - 1) % 2:
            colour = ("black", "white")[1 - player]
            raise RecordError(f"move {number}: {text} is played when {colour} is to move")
        texts.append(text)
    info = {key: root[name] for name, key in _INFO.items() if name in root}
    if parsed.komi is not None:
        info["komi"] = parsed.komi
    if "RE" in root:
        info["result"] = root["RE"]
    record = Record(
        source=source,
        start=start,
        actions=tuple(action for _, action in parsed.moves),
        result=result,
        players=(root.get("PB", ""), root.get("PW", "")),
        info=info,
    )
    return Unchecked(record, tuple(texts))


@functools.lru_cache(maxsize=16)
def _setup(game: Game):
    """Go's `setup(board [P] int8, player)`, compiled."""
    return jax.jit(game.setup)


def dumps(game: Game, record: Record) -> str:
    """One record as an SGF game (`game_record`): its start's stones, komi and player to
    move, its players, date (`info["date"]`) and result (`info["result"]` where it names
    the same winner, else "B+", "W+" or "0"). Policies are not written.

    Raises:
      RecordError: `game` is not Go.
    """
    try:
        check_go(game)
    except UserError as error:
        raise RecordError(str(error)) from None
    board = np.asarray(record.start.board)
    kept = str(record.info.get("result", ""))
    try:
        result = kept if result_of(kept) == record.result else None
    except RecordError:
        result = None
    if result is None:
        result = {1.0: "B+", -1.0: "W+"}.get(record.result, "0")
    return game_record(
        game,
        record.actions,
        result=result,
        black=record.players[0],
        white=record.players[1],
        komi=float(record.start.komi),
        setup=board if board.any() else None,
        first_player=int(record.start.current_player),
        date=None if record.info.get("date") is None else str(record.info["date"]),
    )
