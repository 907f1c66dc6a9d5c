"""Xiangqi PGN records (as xqbase and DhtmlXQ export them): several games a file, each tag
pairs then movetext in ICCS coordinates.

    [Event "..."]
    [Red "..."]
    [Black "..."]
    [Result "1-0"]            1-0 Red won, 0-1 Black won, 1/2-1/2 drawn; * unknown
    [FEN "..."]               the start, where it is not the initial position
    [Format "ICCS"]

    1. H2-E2 H9-G7 {a comment} 2. H0-G2 I9-H9 ... 1-0

Read: moves "H2-E2" or "h2e2" (either case, as Red sees the board), named by the game's
notation for the player to move; move numbers, comments ({...}, ; to the end of the line),
variations ((...), skipped) and annotations ($1, !, ?) are passed over. Each game must end
with its result token, which must agree with the Result tag; an unknown result ("*") makes
a bad record, as does a Format other than ICCS. The file is UTF-8 text, else GB18030 (the
Chinese national encoding xqbase's files are in). The other tags are kept in `info` (keys
lowercase).
"""

import re
from collections.abc import Iterator
from pathlib import Path

from azjax.games.base import Game
from azjax.games.records import rules
from azjax.games.records.base import (
    RESULTS,
    Record,
    RecordError,
    Unchecked,
    read_text,
    result_text,
    shorten,
)

_TOKEN = re.compile(
    r"""\s*(?:
      \[\s*(?P<tag>[A-Za-z0-9_]+)\s*"(?P<value>(?:[^"\\]|\\.)*)"\s*\]
    | (?P<comment>\{[^}]*\}|;[^\n]*)
    | (?P<open>\() | (?P<close>\))
    | (?P<result>1-0|0-1|1/2-1/2|\*)
    | (?P<skip>[0-9]+\.+|\.\.\.|\$[0-9]+|[!?]+)
    | (?P<move>[A-Ia-i][0-9]-?[A-Ia-i][0-9])[!?]*(?![^\s{;()])
    | (?P<other>\S+)
    )""",
    re.X,
)
_ESCAPE = re.compile(r"\\(.)")
_ICCS = re.compile(r"[a-i][0-9][a-i][0-9]")
_KEPT = ("Event", "Site", "Date", "Round")  # info items written back as tags
_WIDTH = 79  # movetext lines are wrapped to this many characters


class _Game:
    """One game as the tokens give it: tags, move texts, its end and its first error."""

    def __init__(self):
        self.tags: dict[str, str] = {}
        self.moves: list[str] = []
        self.end: str | None = None  # the result token
        self.error: str | None = None


def _games(text: str) -> Iterator[_Game]:
    """The games of a PGN text, each with the first problem of its text (if any)."""
    game, depth, position = None, 0, 0
    while True:
        token = _TOKEN.match(text, position)
        if token is None:  # blanks to the end
            if game is not None:
                yield game
            return
        position, kind = token.end(), token.lastgroup
        if kind == "value":
            kind = "tag"
        if game is None or (kind == "tag" and (game.moves or game.end)):
            if game is not None:
                yield game
            game, depth = _Game(), 0
        if game.error or kind in ("comment", "skip"):
            if game.error and kind == "result" and not depth:
                game.end = token["result"]
            continue
        if kind == "tag":
            game.tags[token["tag"]] = _ESCAPE.sub(r"\1", token["value"])
        elif kind in ("open", "close"):
            depth += 1 if kind == "open" else -1
            if depth < 0:
                game.error = "a ')' closes no variation"
        elif depth:
            continue  # inside a variation
        elif kind == "result":
            game.end = token["result"]
            yield game
            game = None
        elif kind == "move":
            game.moves.append(token["move"])
        else:
            word = shorten(token["other"])
            game.error = f"move {len(game.moves) + 1}: {word!r} is not an ICCS move"
            if word.startswith("{"):
                game.error = "a comment '{' is not closed"


def read_file(path: Path, shown: str, game: Game) -> Iterator[Unchecked | RecordError]:
    """Every game of the PGN file `path` (named `shown` in messages; its games "#1", "#2",
    ...), as an unchecked record or the error that makes it a bad one."""
    try:
        text = read_text(path, shown, ("utf-8", "gb18030")).lstrip("\ufeff")
    except RecordError as error:
        yield error
        return
    for number, parsed in enumerate(_games(text), 1):
        source = f"{shown}#{number}"
        try:
            yield _unchecked(game, source, parsed)
        except RecordError as error:
            yield RecordError(f"{source}: {error}")


def _unchecked(game: Game, source: str, parsed: _Game) -> Unchecked:
    tags = parsed.tags
    if tags.get("Format", "ICCS").strip().upper() != "ICCS":
        raise RecordError(f"moves in Format {shorten(tags['Format'])!r}; only ICCS is read")
    if parsed.error:
        raise RecordError(parsed.error)
    if parsed.end is None:
        raise RecordError("the movetext ends without a result (1-0, 0-1, 1/2-1/2 or *)")
    tagged = tags.get("Result", parsed.end).strip()
    if tagged != parsed.end:
        raise RecordError(f"the Result tag {shorten(tagged)!r} but the movetext ends {parsed.end}")
    if parsed.end not in RESULTS:
        raise RecordError(f"an unknown result {parsed.end!r}: 1-0, 0-1 or 1/2-1/2 is needed")
    start = rules.from_fen(game, tags["FEN"]) if "FEN" in tags else rules.initial(game)
    actions = []
    for number, move in enumerate(parsed.moves, 1):
        player = (int(start.current_player) + number - 1) % 2
        action = rules.action_of(game, move.replace("-", ""), player)
        if action is None:
            raise RecordError(f"move {number}: {move} is not a move of {game.name}")
        actions.append(action)
    skipped = ("Red", "Black", "Result", "FEN", "Format")
    record = Record(
        source=source,
        start=start,
        actions=tuple(actions),
        result=RESULTS[parsed.end],
        players=(tags.get("Red", ""), tags.get("Black", "")),
        info={name.lower(): value for name, value in tags.items() if name not in skipped},
    )
    return Unchecked(record, tuple(parsed.moves))


def dumps(game: Game, record: Record) -> str:
    """One record as a PGN game: [Game], the Event, Site, Date and Round of `info`, [Red],
    [Black], [Result], [FEN] where the start is not the initial position, [Format "ICCS"],
    then the moves ("H2-E2") numbered by full moves and the result.

    Raises:
      RecordError: the game's moves are not named in ICCS, or its start has no FEN.
    """
    result = result_text(record.result)
    tags = {"Game": "Chinese Chess"}
    tags |= {name: str(record.info[name.lower()]) for name in _KEPT if name.lower() in record.info}
    tags |= {"Red": record.players[0], "Black": record.players[1], "Result": result}
    fen = rules.start_text(game, record.start)
    if fen is not None:
        tags["FEN"] = fen
    tags["Format"] = "ICCS"
    first = int(record.start.current_player)
    words = ["1..."] if first and record.actions else []
    for ply, action in enumerate(record.actions):
        name = rules.name_of(game, action, (first + ply) % 2)
        if not _ICCS.fullmatch(name):
            raise RecordError(f"PGN records hold ICCS moves; {game.name} names a move {name!r}")
        if (first + ply) % 2 == 0:
            words.append(f"{(first + ply) // 2 + 1}.")
        words.append(f"{name[:2]}-{name[2:]}".upper())
    lines, line = [], ""
    for word in [*words, result]:
        if line and len(line) + 1 + len(word) > _WIDTH:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    header = "".join(f'[{name} "{_escape(value)}"]\n' for name, value in tags.items())
    movetext = "\n".join([*lines, line])
    return f"{header}\n{movetext}\n"


def _escape(value: str) -> str:
    return " ".join(value.replace("\\", "\\\\").replace('"', '\\"').split())
