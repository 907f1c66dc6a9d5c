"""Game records (`azjax.games.records`) in Xiangqi PGN and in JSONL: the moves read as the
game's notation reads them (`notation.parse_action`, move by move), the starts, results,
players and policies read back as written, and each kind of bad game or line reported in
one line naming the file, the game or line, and the move."""

import json
import re

import numpy as np
import pytest

from azjax import games
from azjax.games import notation, records
from azjax.games.notation import xiangqi as xiangqi_notation
from azjax.games.records import jsonl, rules


@pytest.fixture(scope="module")
def xiangqi():
    return games.make("xiangqi")


@pytest.fixture(scope="module")
def go():
    return games.make("go_9x9")


def read_all(source, game, **options):
    """(records, warnings) of `records.read`."""
    warnings = []
    return list(records.read(source, game, warn=warnings.append, **options)), warnings


def parsed(game, moves: list[str], start) -> list[int]:
    """The actions `notation.parse_action` reads, move after move from `start`."""
    actions, state = [], start
    for move in moves:
        actions.append(notation.parse_action(game, move, state))
        state = rules.step(game)(state, np.int32(actions[-1]))
    return actions


OPENING = "h2e2 h9g7 h0g2 i9h9 i0h0 b9c7 c3c4 c6c5 b0c2 g6g5 a0b0 a9b9 b2b6 h7h3".split()
MATE_FEN = "4k4/R8/9/9/9/9/9/9/9/1R1K5 w - - 0 1"  # Red mates with b0b9
BLACK_FEN = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b - - 1 1"


def pgn_file() -> str:
    """Three games as xqbase writes them: tags, comments, a variation, annotations."""
    numbered = " ".join(
        (f"{ply // 2 + 1}. " if ply % 2 == 0 else "") + f"{m[:2]}-{m[2:]}".upper()
        for ply, m in enumerate(OPENING)
    )
    return (
        '[Game "Chinese Chess"]\n[Event "\u5168\u56fd\u8c61\u68cb\u4e2a\u4eba\u8d5b"]\n'
        '[Round "3"]\n[Date "1990.05.01"]\n[Red "\u80e1\u8363\u534e"]\n'
        '[Black "Yang \\"Guanlin\\""]\n[Result "1-0"]\n[ECCO "B05"]\n[Format "ICCS"]\n\n'
        f"{numbered.replace('H9-G7', 'H9-G7 {the horse} (1... B9-C7 2. H0-G2) $1')}!? 1-0\n\n"
        f'[Red "a"]\n[Black "b"]\n[Result "0-1"]\n[FEN "{BLACK_FEN}"]\n\n'
        "1... h9g7 2. h0g2 ; a line comment\n i9h9 0-1\n\n"
        '[Result "*"]\n\n1. h2e2 *\n'
    )


def test_pgn_games_read_as_the_notation_reads_their_moves(xiangqi, tmp_path):
    path = tmp_path / "xqbase.pgn"
    path.write_bytes(pgn_file().encode("gb18030"))  # xqbase's encoding
    found, warnings = read_all(path, xiangqi)
    assert warnings == [f"{path}#3: an unknown result '*': 1-0, 0-1 or 1/2-1/2 is needed"]
    first, second = found
    assert first.source == f"{path}#1" and second.source == f"{path}#2"
    assert first.actions == tuple(parsed(xiangqi, OPENING, rules.initial(xiangqi)))
    assert first.result == 1.0 and first.players == ("\u80e1\u8363\u534e", 'Yang "Guanlin"')
    assert first.info == {
        "game": "Chinese Chess",
        "event": "\u5168\u56fd\u8c61\u68cb\u4e2a\u4eba\u8d5b",
        "round": "3",
        "date": "1990.05.01",
        "ecco": "B05",
    }
    start = rules.from_fen(xiangqi, BLACK_FEN)  # the notation's (cached)
    assert second.actions == tuple(parsed(xiangqi, ["h9g7", "h0g2", "i9h9"], start))
    assert second.result == -1.0 and int(second.start.current_player) == 1
    assert xiangqi_notation.to_fen(xiangqi, second.start) == BLACK_FEN
    # Written again (dumps) and read again: the same games.
    for record in (first, second):
        again = tmp_path / "again.pgn"
        (copy,) = records.read(records.write(again, xiangqi, record), xiangqi, strict=True)
        assert (copy.actions, copy.result, copy.players) == (
            record.actions,
            record.result,
            record.players,
        )
        assert rules.start_text(xiangqi, copy.start) == rules.start_text(xiangqi, record.start)
    text = records.dumps(xiangqi, second, "pgn")
    assert f'[FEN "{BLACK_FEN}"]' in text and "\n1... H9-G7 2. H0-G2 I9-H9 0-1\n" in text


BAD_PGN = [
    ('[Format "WXF"]\n1. C2.5 1-0', "moves in Format 'WXF'; only ICCS is read"),
    ('[Result "1-0"]\n1. H2-E2 0-1', "the Result tag '1-0' but the movetext ends 0-1"),
    ('[Result "1-0"]\n1. H2-E2 H9-G7', "the movetext ends without a result"),
    ("1. H2-E2 H2-E2 1-0", "move 2: H2-E2 is illegal (legal moves: "),
    ("1. H2-E2 Z9-Z8 1-0", "move 2: 'Z9-Z8' is not an ICCS move"),
    ("1. H2-E2 {a comment never closed 1-0", "a comment '{' is not closed"),
    (f'[FEN "{MATE_FEN}"]\n1. B0-B9 1-0 ', None),  # the mate itself: a good game
    ('[FEN "9/9/9/9/9/9/9/9/9/9 w"]\n1-0', "bad FEN '9/9/9/9/9/9/9/9/9/9 w': Red has 0"),
    ("1. H2-E2 ) 1-0", "a ')' closes no variation"),
]


def test_each_bad_pgn_game_is_one_line_and_the_others_are_read(xiangqi, go, tmp_path):
    path = tmp_path / "bad.pgn"
    path.write_text("\n\n".join(f'[Game "{n}"]\n{text}' for n, (text, _) in enumerate(BAD_PGN)))
    found, warnings = read_all(path, xiangqi)
    assert [r.source for r in found] == [f"{path}#7"]
    assert found[0].result == 1.0 and len(found[0].actions) == 1
    messages = [(n, m) for n, (_, m) in enumerate(BAD_PGN, 1) if m is not None]
    assert len(warnings) == len(messages)
    for warning, (number, message) in zip(warnings, messages, strict=True):
        assert warning.startswith(f"{path}#{number}: {message}"), warning
    # A game after the mate: the move after the end.
    (tmp_path / "ended.pgn").write_text(f'[FEN "{MATE_FEN}"]\n1. B0-B9 A8-A7 1-0')
    with pytest.raises(records.RecordError) as error:
        list(records.read(tmp_path / "ended.pgn", xiangqi, strict=True))
    assert str(error.value) == (
        f"{tmp_path}/ended.pgn#1: move 2: A8-A7 is played after the end of the game "
        "(move 1 ended it)"
    )
    # Files that are no text, or empty.
    (tmp_path / "bytes.pgn").write_bytes(b"\xff\xfe[Red]")
    (tmp_path / "empty.pgn").write_bytes(b" \n")
    _, warnings = read_all([tmp_path / "bytes.pgn", tmp_path / "empty.pgn"], xiangqi)
    assert warnings == [
        f"{tmp_path}/bytes.pgn: not UTF-8 or GB18030 text (byte 0xff at 0)",
        f"{tmp_path}/empty.pgn: an empty file",
    ]
    # PGN read as Go: ICCS moves name no Go point.
    with pytest.raises(
        records.RecordError, match=re.escape("go.pgn#1: move 1: H2-E2 is not a move of go_9x9")
    ):
        (tmp_path / "go.pgn").write_text("1. H2-E2 1-0")
        list(records.read(tmp_path / "go.pgn", go, strict=True))


# JSONL -------------------------------------------------------------------------------------


def test_jsonl_records_read_back_as_written(go, xiangqi, tmp_path):
    path = tmp_path / "games.jsonl"
    go_moves = ["E5", "pass", "D4", "c3"]
    policies = [{"E5": 0.75, "D4": 0.25}, None, {"D4": 1}, {"C3": 0.5, "pass": 0.5}]
    lines = [
        {"game": "go_9x9", "moves": go_moves, "result": "0-1", "policies": policies},
        {
            "game": "xiangqi",
            "moves": ["h9g7", "h0g2"],
            "result": "1/2-1/2",
            "start": BLACK_FEN,
            "players": ["red", "black"],
            "info": {"engine": {"simulations": 800}},
        },
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    (record,) = records.read(path, go, strict=False, warn=lambda _: None)
    assert record.source == f"{path}:1" and record.result == -1.0
    assert record.actions == tuple(parsed(go, go_moves, rules.initial(go)))
    assert record.policies.dtype == np.float32 and record.policies.shape == (4, 82)
    np.testing.assert_allclose(record.policies[0, [40, 48]], [0.75, 0.25])
    assert not record.policies[1].any()  # null: no policy for that move
    np.testing.assert_allclose(record.policies[3, [56, 81]], [0.5, 0.5])
    (chinese,) = records.read(path, xiangqi, warn=lambda _: None)
    assert chinese.source == f"{path}:2" and chinese.players == ("red", "black")
    assert chinese.actions == tuple(parsed(xiangqi, ["h9g7", "h0g2"], chinese.start))
    assert chinese.info == {"engine": {"simulations": 800}} and chinese.policies is None
    # Written (appended) and read again: the same records; Black's policy named as it moves.
    out = tmp_path / "out.jsonl"
    xiangqi_policy = np.zeros((2, xiangqi.num_actions), np.float32)
    xiangqi_policy[:, chinese.actions[0]] = 1.0
    xiangqi_policy[1] = 0.0
    named = records.Record(**{**vars(chinese), "policies": xiangqi_policy, "source": "x"})
    for written in (record, named):
        records.write(out, go if written is record else xiangqi, written)
    text = out.read_text().splitlines()
    assert json.loads(text[0])["policies"][1] is None
    assert json.loads(text[1])["policies"] == [{"h9g7": 1.0}, None]
    assert json.loads(text[1])["start"] == BLACK_FEN
    (again,) = records.read(out, go, warn=lambda _: None)
    np.testing.assert_array_equal(again.policies, record.policies)
    assert again.actions == record.actions and again.result == record.result
    (again,) = records.read(out, xiangqi, warn=lambda _: None)
    np.testing.assert_array_equal(again.policies, xiangqi_policy)
    with pytest.raises(records.RecordError, match="records start from the initial position"):
        start = record.start.replace(komi=np.float32(0.5))
        records.dumps(go, records.Record(**{**vars(record), "start": start}), "jsonl")


GOOD = '{"game": "go_9x9", "moves": ["E5", "D4"], "result": "1-0"}'
BAD_LINES = [
    ('{"game": "go_9x9", "moves": ["E5"', "not JSON (Expecting"),
    (
        '{"game": "go_9x9", "moves": ["E5"], "result": "1-0", "polices": []}',
        "unknown key 'polices'",
    ),
    ('{"game": "go_13x13", "moves": [], "result": "1-0"}', "a record of 'go_13x13', not go_9x9"),
    ('{"game": "go_9x9", "moves": [], "result": "*"}', "an unknown result '*': 1-0, 0-1"),
    ('{"game": "go_9x9", "moves": []}', "no 'result'"),
    ('{"game": "go_9x9", "moves": ["E5", "E5"], "result": "1-0"}', "move 2: E5 is illegal (the"),
    ('{"game": "go_9x9", "moves": ["E5", "Z9"], "result": "1-0"}', "move 2: 'Z9' is not a move"),
    (
        '{"game": "go_9x9", "moves": ["pass", "pass", "E5"], "result": "1-0"}',
        "move 3: E5 is played after the end of the game (move 2 ended it)",
    ),
    (
        '{"game": "go_9x9", "moves": ["E5", "D4"], "result": "1-0", '
        '"policies": [{"E5": 1}, {"E5": 0.5, "D4": 0.5}]}',
        "move 2: D4: the policy weighs illegal moves (E5)",
    ),
    (
        '{"game": "go_9x9", "moves": ["E5"], "result": "1-0", "policies": [{"E5": 0.8}]}',
        "move 1: E5: the policy sums to 0.8, not 1",
    ),
    (
        '{"game": "go_9x9", "moves": ["E5"], "result": "1-0", "policies": [{"E5": NaN}]}',
        "not JSON (NaN is no number a record holds)",
    ),
    ('{"game": "go_9x9", "moves": ["E5"], "result": "1-0", "start": "x"}', "go_9x9 has no FEN"),
    ('["go_9x9"]', "not a JSON object"),
    ("[" * 100_000 + "]" * 100_000, "not JSON (nested too deeply)"),
    ('{"game": "go_9x9", "moves": ["\udcff"], "result": "1-0"}', "not UTF-8 text (byte 0xff"),
    ('{"game": "go_9x9", "info": "' + "y" * 300_000 + '"}', "a line longer than 250,000 bytes"),
]


def test_each_bad_jsonl_line_is_one_line_naming_it(go, tmp_path, monkeypatch):
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 250_000)
    path = tmp_path / "bad.jsonl"
    lines = [GOOD, ""] + [line for line, _ in BAD_LINES] + [GOOD, GOOD[:-5]]  # cut: truncated
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape"))
    found, warnings = read_all(path, go)
    assert [r.source for r in found] == [f"{path}:1", f"{path}:{len(lines) - 1}"]
    messages = [f"{path}:{n}: {m}" for n, (_, m) in enumerate(BAD_LINES, 3)]
    messages.append(f"{path}:{len(lines)}: not JSON (")
    assert len(warnings) == len(messages)
    for warning, message in zip(warnings, messages, strict=True):
        assert warning.startswith(message) and "\n" not in warning, warning
    assert warnings[-1].endswith("; the last line has no newline: truncated?)")
    (tmp_path / "empty.jsonl").write_text("\n\n")
    assert read_all(tmp_path / "empty.jsonl", go) == (
        [],
        [f"{tmp_path}/empty.jsonl: an empty file"],
    )
