"""SGF (Smart Game Format, FF[4]) records of Go games: self-play, arena and GTP games.

Written: board size, komi, rules, date, players, result, setup stones (handicap), the moves
and, where known, a comment per move with the searched value. Points are SGF coordinates,
column letter then row letter counted from the top-left ("aa"), which is exactly the order
of our action ids (row-major from the top-left); a pass is the empty value `B[]`.

Read (`parse_game`, for GTP's loadsgf): the main line of the first game of a file, that
is its size, komi, date, setup stones (AB, AW, AE, PL in the first node) and moves.

    text = sgf.game_record(game, actions, result=sgf.result_string(score))
    record = sgf.parse_game(text)   # size, komi, date, setup, first_player, moves
"""

import dataclasses
import datetime
import math
import re
from collections.abc import Sequence
from pathlib import Path

import jax
import numpy as np

from azjax import __version__, games
from azjax.games import Game
from azjax.matches.arena import MatchResult
from azjax.types import UserError

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


class SgfError(ValueError):
    """An SGF text that is not a Go game this reader can replay; the message says why."""


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
    return _LETTERS[column] + _LETTERS[row]


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


def write_records(directory: str | Path, prefix: str, records: Sequence[str]) -> list[Path]:
    """Writes SGF strings as `directory/prefix-0000.sgf`, ...; returns the paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, record in enumerate(records):
        path = directory / f"{prefix}-{index:04d}.sgf"
        path.write_text(record)
        paths.append(path)
    return paths


def match_records(
    game: Game,
    result: MatchResult,
    name_a: str,
    name_b: str,
    *,
    values: jax.Array | np.ndarray | None = None,
    simulations: int | None = None,
    date: str | None = None,
) -> list[str]:
    """SGF records of the games of an arena match (see `arena.make_match`), A named `name_a`.

    Args:
      values: [T, G] float32, where the players searched: the searched value of each
        position for the player who moved from it; each move then gets its comment
        (`search_comment`, with `simulations` visits where given).
      date: the DT of every record (default: today).
    """
    check_go(game)
    scores = jax.device_get(jax.jit(jax.vmap(game.score))(result.final_states))  # [G]
    actions, lengths, a_first = jax.device_get((result.actions, result.lengths, result.a_first))
    values = None if values is None else np.asarray(jax.device_get(values))
    records = []
    for index, length in enumerate(lengths.tolist()):
        black, white = (name_a, name_b) if a_first[index] else (name_b, name_a)
        comments = None
        if values is not None:
            comments = [search_comment(float(v), simulations) for v in values[:length, index]]
        records.append(
            game_record(
                game,
                actions[:length, index].tolist(),
                result=result_string(float(scores[index])),
                black=black,
                white=white,
                comments=comments,
                date=date,
            )
        )
    return records


@dataclasses.dataclass(frozen=True)
class SgfGame:
    """The main line of a Go game read from SGF.

    Attributes:
      size: the board's side (SZ, default 19).
      komi: KM, or None where the file has none.
      date: DT, or None.
      setup: [size*size] int8 stones before the first move (+1 black, -1 white: AB, AW, AE
        of the first node), or None where the game starts on an empty board.
      first_player: who is to move at the start, 0 black or 1 white: PL, else the colour
        of the first move, else white after black setup stones only (a handicap), else black.
      moves: (player, action) per move, player 0 black or 1 white, action a point id
        (row-major from the top-left) or size*size for a pass.
    """

    size: int
    komi: float | None
    date: str | None
    setup: np.ndarray | None
    first_player: int
    moves: tuple[tuple[int, int], ...]


# A token: a parenthesis or a node's semicolon, or a property: its name and its values.
_TOKEN = re.compile(r"\s*(?:([();])|([A-Za-z]+)\s*((?:\[(?:[^\\\]]|\\.)*\]\s*)+))", re.S)
_VALUE = re.compile(r"\[((?:[^\\\]]|\\.)*)\]", re.S)
_ESCAPE = re.compile(r"\\(\r\n|\n\r|\n|\r|.)", re.S)  # a soft line break, or an escaped character
_SETUP = ("AB", "AW", "AE")
# An ASCII decimal (float() also takes "1_0", "nan" and "٣"); no two of its quantifiers
# overlap, so a failed match takes time linear in the text.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _main_line(text: str) -> list[dict[str, list[str]]]:
    """The nodes (property name -> values) of the main line of the first game tree of an
    SGF collection: at every branch the first variation. Later games are not read."""
    nodes: list[dict[str, list[str]]] = []
    trees: list[list] = []  # open game trees: [on the main line, variations seen]
    node: dict | None = None
    in_node, position = False, 0
    text = text.lstrip("\ufeff")
    while True:
        match = _TOKEN.match(text, position)
        if match is None:
            where = (
                "the end of the file" if not text[position:].strip() else f"character {position}"
            )
            raise SgfError(f"SGF syntax error at {where}")
        position = match.end()
        mark = match.group(1)
        if mark == "(":
            if trees:
                parent = trees[-1]
                trees.append([parent[0] and parent[1] == 0, 0])
                parent[1] += 1
            else:
                trees.append([True, 0])
            in_node, node = False, None
        elif mark == ")":
            if not trees:
                raise SgfError(f"SGF syntax error at character {match.start(1)}")
            trees.pop()
            in_node, node = False, None
            if not trees:
                return nodes
        elif mark == ";":
            if not trees or trees[-1][1]:
                raise SgfError(f"SGF syntax error at character {match.start(1)}")
            node = {} if trees[-1][0] else None
            if node is not None:
                nodes.append(node)
            in_node = True
        else:
            if not in_node:
                raise SgfError(f"SGF syntax error at character {match.start(2)}")
            if node is not None:
                name = "".join(c for c in match.group(2) if c.isupper())  # FF[3]: AddBlack -> AB
                values = [_ESCAPE.sub(_unescape, v) for v in _VALUE.findall(match.group(3))]
                node.setdefault(name, []).extend(values)


def _shown(value: str, limit: int = 40) -> str:
    """A property value as an error message shows it: at most `limit` characters."""
    return value if len(value) <= limit else value[: limit - 3] + "..."


def _unescape(match: re.Match) -> str:
    return "" if match.group(1) in ("\r\n", "\n\r", "\n", "\r") else match.group(1)


def _point(value: str, size: int, name: str) -> int:
    if len(value) != 2 or any(c not in _LETTERS[:size] for c in value):
        raise SgfError(f"{name}[{_shown(value)}] is not a point of a {size}x{size} board")
    return _LETTERS.index(value[1]) * size + _LETTERS.index(value[0])


def _points(value: str, size: int, name: str) -> list[int]:
    """The points of a setup value: one point, or a rectangle "aa:cc" (FF[4] point lists)."""
    if ":" not in value:
        return [_point(value, size, name)]
    first, last = (_point(corner, size, name) for corner in value.split(":", 1))
    rows = sorted((first // size, last // size))
    columns = sorted((first % size, last % size))
    return [
        row * size + column
        for row in range(rows[0], rows[1] + 1)
        for column in range(columns[0], columns[1] + 1)
    ]


def _has_chain_without_liberty(board: np.ndarray, size: int) -> bool:
    """Whether a chain of stones on `board` ([size*size] int8) has no empty neighbour."""
    seen = np.zeros(board.size, bool)
    for start in np.flatnonzero(board):
        if seen[start]:
            continue
        chain, frontier, free = {int(start)}, [int(start)], False
        while frontier:
            row, column = divmod(frontier.pop(), size)
            for r, c in (
                (row - 1, column),
                (row + 1, column),
                (row, column - 1),
                (row, column + 1),
            ):
                if 0 <= r < size and 0 <= c < size:
                    neighbour = r * size + c
                    free |= board[neighbour] == 0
                    if board[neighbour] == board[start] and neighbour not in chain:
                        chain.add(neighbour)
                        frontier.append(neighbour)
        seen[list(chain)] = True
        if not free:
            return True
    return False


def parse_game(text: str) -> SgfGame:
    """Reads the main line of the first game of an SGF text (see `SgfGame`).

    Raises:
      SgfError: not SGF, not Go (GM other than 1), a board that is not square or larger
        than 26x26, a bad komi or point, setup stones after the first node or leaving a
        chain without liberties, or a node with two moves.
    """
    nodes = _main_line(text)
    if not nodes:
        raise SgfError("the SGF game has no node")
    root = nodes[0]

    def single(name: str) -> str | None:
        values = root.get(name)
        return values[0].strip() if values else None

    if single("GM") not in (None, "1"):
        raise SgfError(f"not a Go game (GM[{_shown(single('GM'))}])")
    size_text = single("SZ") or "19"
    width, _, height = size_text.partition(":")
    if not re.fullmatch("[0-9]{1,3}", width) or height not in ("", width):  # then int()
        raise SgfError(f"unsupported board size SZ[{_shown(size_text)}]")
    size = int(width)
    if not 1 <= size <= len(_LETTERS):
        raise SgfError(f"unsupported board size SZ[{_shown(size_text)}]")
    komi = single("KM")
    if komi is not None:
        komi = float(komi) if _DECIMAL.fullmatch(komi) else math.nan
        if not math.isfinite(komi):
            raise SgfError(f"KM[{_shown(single('KM'))}] is not a komi")
    setup = None
    if any(name in root for name in _SETUP):
        setup = np.zeros(size * size, np.int8)
        for name, stone in zip(_SETUP, (1, -1, 0), strict=True):
            for value in root.get(name, ()):
                setup[_points(value, size, name)] = stone
        if _has_chain_without_liberty(setup, size):
            raise SgfError("the setup stones leave a chain without liberties")
    moves = []
    for number, node in enumerate(nodes):
        if number and any(name in node for name in _SETUP):
            raise SgfError("setup stones (AB, AW, AE) after the first node are not supported")
        played = [(player, node[name]) for player, name in enumerate("BW") if name in node]
        if len(played) > 1 or (played and len(played[0][1]) != 1):
            raise SgfError(f"node {number} holds more than one move")
        if played:
            player, (value,) = played[0]
            is_pass = value == "" or (value == "tt" and size <= 19)
            action = size * size if is_pass else _point(value, size, "BW"[player])
            moves.append((player, action))
    to_play = (single("PL") or "").upper()[:1]
    if to_play in ("B", "W"):
        first_player = "BW".index(to_play)
    elif moves:
        first_player = moves[0][0]
    else:
        handicap = setup is not None and (setup == 1).any() and not (setup == -1).any()
        first_player = int(bool(handicap))
    return SgfGame(size, komi, single("DT"), setup, first_player, tuple(moves))
