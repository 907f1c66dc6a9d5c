"""Reading SGF (Smart Game Format, FF[4]) text: the main line of each game of a collection,
and the Go game it records (`SgfGame`: size, komi, date, setup stones, who moves first, the
moves). GTP's loadsgf reads the first game (`parse_game`); `azjax.games.records` reads every
game of every file (`game_trees`, `game_of`) and checks the moves with the rules.

    record = parse_game("(;SZ[9]KM[6.5]AB[cc][gg];W[ee];B[])")
    record.size, record.komi, record.first_player, record.moves   # 9, 6.5, 1, ((1, 40), (0, 81))

Points are SGF coordinates, column letter then row letter counted from the top-left ("aa"),
which is exactly the order of Go's action ids (row-major from the top-left); a pass is the
empty value `B[]` (or "tt" on boards up to 19x19).
"""

import dataclasses
import math
import re
from collections.abc import Iterator

import numpy as np

LETTERS = "abcdefghijklmnopqrstuvwxyz"


class SgfError(ValueError):
    """An SGF text that is not a Go game this reader can replay; the message says why."""


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
      root: every property of the first node, name -> values (RE, PB, PW, EV, ...).
    """

    size: int
    komi: float | None
    date: str | None
    setup: np.ndarray | None
    first_player: int
    moves: tuple[tuple[int, int], ...]
    root: dict[str, list[str]] = dataclasses.field(default_factory=dict)


# A token: a parenthesis or a node's semicolon, or a property: its name and its values.
_TOKEN = re.compile(r"\s*(?:([();])|([A-Za-z]+)\s*((?:\[(?:[^\\\]]|\\.)*\]\s*)+))", re.S)
_VALUE = re.compile(r"\[((?:[^\\\]]|\\.)*)\]", re.S)
_ESCAPE = re.compile(r"\\(\r\n|\n\r|\n|\r|.)", re.S)  # a soft line break, or an escaped character
_SETUP = ("AB", "AW", "AE")
_NEXT_TREE = re.compile(r"\(\s*;")  # where a further game tree of a collection opens
# A property whose last value the text ends inside (a file cut short).
_UNCLOSED = re.compile(r"\s*[A-Za-z]+\s*(?:\[(?:[^\\\]]|\\.)*\]\s*)*\[(?:[^\\\]]|\\.)*\\?", re.S)
# An ASCII decimal (float() also takes "1_0", "nan" and "٣"); no two of its quantifiers
# overlap, so a failed match takes time linear in the text.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _main_line(text: str) -> list[dict[str, list[str]]]:
    """The nodes (property name -> values) of the main line of the first game tree of an
    SGF collection: at every branch the first variation. Later games are not read."""
    return _game_tree(text.lstrip("\ufeff"), 0)[0]


def game_trees(text: str) -> Iterator[list[dict[str, list[str]]]]:
    """The main line of each game tree of an SGF collection, in order (see `_main_line`).
    Text after the last tree that opens no other ("(;") is ignored, as sgfmill does.

    Raises:
      SgfError: a tree that is not SGF (raised when the reader reaches it).
    """
    text, position = text.lstrip("\ufeff"), 0
    while True:
        nodes, position = _game_tree(text, position)
        yield nodes
        following = _NEXT_TREE.search(text, position)
        if following is None:
            return
        position = following.start()


def _game_tree(text: str, position: int) -> tuple[list[dict[str, list[str]]], int]:
    """The main line of the game tree at `position` of `text`, and where the tree ends."""
    nodes: list[dict[str, list[str]]] = []
    trees: list[list] = []  # open game trees: [on the main line, variations seen]
    node: dict | None = None
    in_node = False
    while True:
        match = _TOKEN.match(text, position)
        if match is None:
            rest = text[position:]
            cut = not rest.strip() or _UNCLOSED.fullmatch(rest)
            where = "the end of the file" if cut else f"character {position}"
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
                return nodes, position
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
    if len(value) != 2 or any(c not in LETTERS[:size] for c in value):
        raise SgfError(f"{name}[{_shown(value)}] is not a point of a {size}x{size} board")
    return LETTERS.index(value[1]) * size + LETTERS.index(value[0])


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
      SgfError: not SGF, or the game is not one `game_of` reads.
    """
    return game_of(_main_line(text))


def game_of(nodes: list[dict[str, list[str]]]) -> SgfGame:
    """The Go game of a main line's nodes (`game_trees`).

    Raises:
      SgfError: no node, not Go (GM other than 1), a board that is not square or larger
        than 26x26, a bad komi or point ("move 12: B[zz] is not a point of a 9x9 board"),
        setup stones after the first node or leaving a chain without liberties, or a node
        with two moves.
    """
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
    if not 1 <= size <= len(LETTERS):
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
            try:
                action = size * size if is_pass else _point(value, size, "BW"[player])
            except SgfError as error:
                raise SgfError(f"move {len(moves) + 1}: {error}") from None
            moves.append((player, action))
    to_play = (single("PL") or "").upper()[:1]
    if to_play in ("B", "W"):
        first_player = "BW".index(to_play)
    elif moves:
        first_player = moves[0][0]
    else:
        handicap = setup is not None and (setup == 1).any() and not (setup == -1).any()
        first_player = int(bool(handicap))
    return SgfGame(size, komi, single("DT"), setup, first_player, tuple(moves), root)
