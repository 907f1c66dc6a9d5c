"""JSONL records, for any game: one JSON object a line, many games a file (appended).

    {"game": "go_9x9", "moves": ["E5", "pass", "D4"], "result": "1-0",
     "policies": [{"E5": 0.7, "D4": 0.3}, null, {"D4": 1}],
     "players": ["azjax", "gnugo"], "info": {"date": "2024-05-01"}}

- "game" (required): the game's registered name; a record of another game is a bad one.
- "moves" (required): every move in the game's own notation (`notation.action_to_string`:
  "E5" and "pass" in Go, "h2e2" in Xiangqi as Red sees the board), ASCII case-insensitive.
- "result" (required): "1-0", "0-1" or "1/2-1/2", the first number player 0's score.
- "start": a FEN where the game's notation reads FEN (Xiangqi) and the game does not start
  from its initial position; absent otherwise.
- "policies": null or absent, or one entry a move: the recorded search policy of the
  position the move is played in, move name -> probability (on legal moves, summing to 1
  within 0.001, renormalised), or null where there is none (its row of
  `Record.policies` is then all zeros).
- "players": [player 0's name, player 1's name]; "info": an object, kept as it is.

Any other key makes a bad record (a misspelt key is not silently dropped). Blank lines are
skipped; a line longer than `MAX_LINE_BYTES` is skipped unkept, as a bad record; messages
name the line ("games/b.jsonl:12").
"""

import json
import math
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from azjax.games.base import Game
from azjax.games.records import rules
from azjax.games.records.base import (
    MAX_LINE_BYTES,
    RESULTS,
    Record,
    RecordError,
    Unchecked,
    decode,
    result_text,
    shorten,
)

KEYS = ("game", "moves", "result", "start", "policies", "players", "info")
POLICY_TOLERANCE = 1e-3  # how far from 1 a policy's sum may be (rounded probabilities)
_SKIP_BYTES = 2**20  # what an overlong line is skipped by, a piece at a time


def read_file(path: Path, shown: str, game: Game) -> Iterator[Unchecked | RecordError]:
    """Every line of the JSONL file `path` (named `shown` in messages, its lines
    "games/b.jsonl:12"), as an unchecked record or the error that makes it a bad one."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would wait for a writer
            raise RecordError(f"{shown}: not a regular file")
        file = open(path, "rb")  # closed by the `with` below
    except OSError as error:
        yield RecordError(f"{shown}: {error.strerror or error}")
        return
    except RecordError as error:
        yield error
        return
    number, records = 0, 0
    with file:
        while True:
            try:
                line = file.readline(MAX_LINE_BYTES + 1)
                overlong = len(line) > MAX_LINE_BYTES and not line.endswith(b"\n")
                if overlong:
                    _skip_line(file)
            except OSError as error:
                yield RecordError(f"{shown}: {error.strerror or error}")
                return
            if not line:
                break
            number += 1
            source = f"{shown}:{number}"
            if not line.strip():
                continue
            records += 1
            try:
                if overlong:
                    raise RecordError(f"a line longer than {MAX_LINE_BYTES:,} bytes")
                yield _unchecked(game, source, _parse(line))
            except RecordError as error:
                yield RecordError(f"{source}: {error}")
    if not records:
        yield RecordError(f"{shown}: an empty file")


def _skip_line(file) -> None:
    """Reads the rest of an overlong line, a piece at a time, keeping none of it."""
    while True:
        piece = file.readline(_SKIP_BYTES)
        if not piece or piece.endswith(b"\n"):
            return


def _parse(line: bytes) -> dict:
    text = decode(line, ("utf-8",))
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise RecordError("not JSON (nested too deeply)") from None
    except json.JSONDecodeError as error:
        truncated = "" if line.endswith(b"\n") else "; the last line has no newline: truncated?"
        raise RecordError(f"not JSON ({error.msg} at column {error.colno}{truncated})") from None
    except ValueError as error:  # an integer of too many digits
        raise RecordError(f"not JSON ({shorten(str(error), 80)})") from None
    if not isinstance(value, dict):
        raise RecordError("not a JSON object")
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is no number a record holds")


def _unchecked(game: Game, source: str, line: dict) -> Unchecked:
    unknown = [key for key in line if key not in KEYS]
    if unknown:
        raise RecordError(f"unknown key {shorten(unknown[0])!r} (known: {', '.join(KEYS)})")
    for key in KEYS[:3]:
        if key not in line:
            raise RecordError(f"no {key!r}")
    if line["game"] != game.name:
        raise RecordError(f"a record of {shorten(str(line['game']))!r}, not {game.name}")
    moves, result = line["moves"], line["result"]
    if not isinstance(moves, list) or not all(isinstance(move, str) for move in moves):
        raise RecordError("'moves' is not a list of move names")
    if not isinstance(result, str) or result not in RESULTS:
        raise RecordError(f"an unknown result {shorten(str(result))!r}: 1-0, 0-1 or 1/2-1/2")
    start = line.get("start")
    if start is not None and not isinstance(start, str):
        raise RecordError("'start' is not a FEN")
    start = rules.initial(game) if start is None else rules.from_fen(game, start)
    players = line.get("players") or ["", ""]
    if not (
        isinstance(players, list) and len(players) == 2 and all(isinstance(p, str) for p in players)
    ):
        raise RecordError("'players' is not a list of two names")
    info = line.get("info") or {}
    if not isinstance(info, dict):
        raise RecordError("'info' is not an object")
    first = int(start.current_player)
    actions = []
    for number, move in enumerate(moves, 1):
        action = rules.action_of(game, move, (first + number - 1) % 2)
        if action is None:
            raise RecordError(f"move {number}: {shorten(move)!r} is not a move of {game.name}")
        actions.append(action)
    record = Record(
        source=source,
        start=start,
        actions=tuple(actions),
        result=RESULTS[result],
        policies=_policies(game, line.get("policies"), moves, first),
        players=tuple(players),
        info=info,
    )
    return Unchecked(record, tuple(moves))


def _policies(game: Game, given, moves: list[str], first: int) -> np.ndarray | None:
    """[len(moves), A] float32 from the "policies" entries (see the module), or None."""
    if given is None:
        return None
    if not isinstance(given, list) or len(given) != len(moves):
        raise RecordError(f"'policies' is not a list of {len(moves)} entries, one a move")
    policies = np.zeros((len(moves), game.num_actions), np.float32)  # [L, A]
    for ply, entry in enumerate(given):
        where = f"move {ply + 1}: {shorten(moves[ply])}: the policy"
        if entry is None:
            continue
        if not isinstance(entry, dict):
            raise RecordError(f"{where} is not an object of move names and probabilities")
        for name, weight in entry.items():
            action = rules.action_of(game, name, (first + ply) % 2)
            if action is None:
                raise RecordError(f"{where} names {shorten(name)!r}, not a move of {game.name}")
            number = isinstance(weight, int | float) and not isinstance(weight, bool)
            if not number or not math.isfinite(weight) or weight < 0:
                raise RecordError(f"{where} gives {shorten(name)!r} {shorten(str(weight))!r}")
            policies[ply, action] += weight
        total = float(policies[ply].sum(dtype=np.float64))
        if abs(total - 1) > POLICY_TOLERANCE:
            raise RecordError(f"{where} sums to {total:.6g}, not 1")
        policies[ply] /= total
    return policies


def dumps(game: Game, record: Record) -> str:
    """One record as a JSONL line (ending in a newline; see the module), the moves and the
    policies' moves named by the game's notation, probabilities to 6 digits.

    Raises:
      RecordError: a start the game's notation cannot write, policies of the wrong shape,
        or an `info` that is not JSON.
    """
    first = int(record.start.current_player)
    names = [rules.name_of(game, a, (first + ply) % 2) for ply, a in enumerate(record.actions)]
    line = {"game": game.name, "moves": names, "result": result_text(record.result)}
    start = rules.start_text(game, record.start)
    if start is not None:
        line["start"] = start
    if record.policies is not None:
        policies = np.asarray(record.policies, np.float32)
        if policies.shape != (len(record.actions), game.num_actions):
            raise RecordError(
                f"{record.source}: policies of shape {policies.shape}, not "
                f"({len(record.actions)}, {game.num_actions})"
            )
        line["policies"] = [
            {
                rules.name_of(game, int(a), (first + ply) % 2): float(f"{row[a]:.6g}")
                for a in np.flatnonzero(row)
            }
            or None
            for ply, row in enumerate(policies)
        ]
    if any(record.players):
        line["players"] = list(record.players)
    if record.info:
        line["info"] = record.info
    try:
        text = json.dumps(line, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise RecordError(f"{record.source}: the info is not JSON ({error})") from None
    return text + "\n"
