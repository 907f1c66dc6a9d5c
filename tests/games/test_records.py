"""Game records (`azjax.games.records`), SGF: files written by azjax and by sgfmill (an
independent SGF reader and Go board with its own capture rules) read as sgfmill reads them,
collections, the sources a folder, glob or list names, writing, and every kind of bad input
reported in one line (the others still read, or all refused with `strict`), with nothing
written by reading. PGN and JSONL: test_records_formats.py."""

import os
import re

import jax
import numpy as np
import pytest
from sgfmill import boards
from sgfmill import sgf as sgfmill

from azjax import games
from azjax.games import records
from azjax.games.records import rules, sgf


@pytest.fixture(scope="module")
def go():
    return games.make("go_9x9")


@pytest.fixture(scope="module")
def go13():
    return games.make("go_13x13")


def go_start(game, board, first_player: int, komi: float):
    """Go's start with `board`'s stones ([P] int8), `first_player` to move and `komi`."""
    state = jax.device_get(jax.jit(game.setup)(np.asarray(board, np.int8), first_player))
    return state.replace(komi=np.float32(komi))


def random_actions(game, start, plies: int, seed: int) -> list[int]:
    """Random legal moves from `start` by our rules (a pass now and then), to the end of
    the game or `plies`."""
    rng, state, actions = np.random.default_rng(seed), start, []
    for _ in range(plies):
        legal = np.flatnonzero(np.asarray(state.legal_action_mask))
        if not len(legal):
            break
        action = legal[-1] if rng.random() < 0.05 else rng.choice(legal)  # the last: a pass
        actions.append(int(action))
        state = rules.step(game)(state, np.int32(action))
    return actions


def read_all(source, game, **options):
    """(records, warnings) of `records.read`."""
    warnings = []
    return list(records.read(source, game, warn=warnings.append, **options)), warnings


def sgfmill_view(data: bytes):
    """What sgfmill reads: komi, setup [P] int8, moves (player, action), winner and the
    final board [P] int8 after sgfmill's own capture rules."""
    record = sgfmill.Sgf_game.from_bytes(data)
    size = record.get_size()

    def point(row_column):
        row, column = row_column
        return (size - 1 - row) * size + column  # sgfmill's row 0 is the bottom row

    black, white, _ = record.get_root().get_setup_stones()
    setup = np.zeros(size * size, np.int8)
    setup[[point(p) for p in black]] = 1
    setup[[point(p) for p in white]] = -1
    board = boards.Board(size)
    board.apply_setup(black, white, ())
    moves = []
    for node in record.get_main_sequence()[1:]:
        colour, move = node.get_move()
        moves.append(("bw".index(colour), size * size if move is None else point(move)))
        if move is not None:
            board.play(move[0], move[1], colour)
    final = np.zeros(size * size, np.int8)
    for colour, where in board.list_occupied_points():
        final[point(where)] = 1 if colour == "b" else -1
    return record.get_komi(), setup, moves, record.get_winner(), final


def test_sgf_written_by_azjax_and_by_sgfmill_reads_as_sgfmill_reads_it(go, go13, tmp_path):
    # azjax's writer: 9x9, four handicap stones (white first), komi 0.5, passes.
    handicap = np.zeros(81, np.int8)
    handicap[[20, 24, 56, 60]] = 1
    actions = random_actions(go, go_start(go, handicap, 1, 0.5), 60, seed=1)
    assert 81 in actions
    text = sgf.game_record(go, actions, result="W+3.5", komi=0.5, setup=handicap, first_player=1)
    (tmp_path / "azjax.sgf").write_text(text)
    # sgfmill's writer: 13x13, komi 6.5, two handicap stones, passes, a draw.
    written = sgfmill.Sgf_game(size=13)
    root = written.get_root()
    root.set("KM", 6.5)
    root.set("HA", 2)
    root.set("RE", "0")
    root.set_setup_stones({(3, 3), (9, 9)}, set())
    setup13 = sgfmill_view(written.serialise())[1]
    for ply, action in enumerate(random_actions(go13, go_start(go13, setup13, 1, 6.5), 80, 2)):
        row, column = divmod(action, 13)
        node = written.extend_main_sequence()
        node.set_move("wb"[ply % 2], None if action == 169 else (12 - row, column))
    (tmp_path / "sgfmill.sgf").write_bytes(written.serialise())

    for path, game in ((tmp_path / "azjax.sgf", go), (tmp_path / "sgfmill.sgf", go13)):
        komi, setup, moves, winner, final = sgfmill_view(path.read_bytes())
        (record,) = records.read(path, game, strict=True)
        assert record.source == str(path)
        np.testing.assert_array_equal(np.asarray(record.start.board), setup)
        assert float(record.start.komi) == komi and int(record.start.current_player) == 1
        players = [(1 + ply) % 2 for ply in range(len(moves))]
        assert list(zip(players, record.actions, strict=True)) == moves
        assert record.result == {"b": 1.0, "w": -1.0, None: 0.0}[winner]
        state = rules.state_at(game, record.start, record.actions)
        np.testing.assert_array_equal(np.asarray(state.board), final)  # sgfmill's captures
        assert record.info["komi"] == komi and record.policies is None
        # Written again (dumps) and read again: the same game.
        (again,) = records.read(records.write(tmp_path / "again.sgf", game, record), game)
        assert again.actions == record.actions and again.result == record.result
        np.testing.assert_array_equal(np.asarray(again.start.board), setup)
        assert float(again.start.komi) == komi


def test_sgf_root_properties_and_collections(go, tmp_path):
    path = tmp_path / "two.sgf"
    path.write_text(
        "(;GM[1]FF[4]SZ[9]KM[6]PB[Honinbo]PW[Shusaku]DT[1846-09-11]EV[Castle game]"
        "RE[B+R];B[ee];W[cc])\n(;SZ[9]RE[Draw];B[aa](;W[bb])(;W[cc]))"
    )
    first, second = records.read(path, go, strict=True)
    assert (first.source, second.source) == (str(path), f"{path}#2")
    assert first.players == ("Honinbo", "Shusaku") and first.result == 1.0
    assert first.info == {
        "date": "1846-09-11",
        "event": "Castle game",
        "komi": 6.0,
        "result": "B+R",
    }
    assert first.actions == (40, 20) and float(first.start.komi) == 6.0
    assert second.actions == (0, 10) and second.result == 0.0  # the first variation
    assert float(second.start.komi) == go.komi  # no KM: the game's komi
    text = records.dumps(go, first, "sgf")
    assert "RE[B+R]" in text and "PB[Honinbo]" in text and "DT[1846-09-11]" in text


# Sources -----------------------------------------------------------------------------------


def test_paths_of_folders_globs_and_lists(tmp_path):
    for name in ("b/2.sgf", "b/1.PGN", "a.jsonl", "b/c/3.sgf", "notes.txt", "b/.x.sgf.tmp"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    found = [p.relative_to(tmp_path).as_posix() for p in records.paths(tmp_path)]
    assert found == ["a.jsonl", "b/1.PGN", "b/2.sgf", "b/c/3.sgf"]
    globbed = {p.name for p in records.paths(str(tmp_path / "**" / "*.sgf"))}
    assert globbed == {"2.sgf", "3.sgf"}
    listed = list(records.paths([tmp_path / "a.jsonl", tmp_path / "b" / "c"]))
    assert [p.name for p in listed] == ["a.jsonl", "3.sgf"]
    for source, message in (
        (tmp_path / "none", "none: no such file or folder"),
        (str(tmp_path / "*.pgn"), "no .sgf, .pgn or .jsonl files"),
        (tmp_path / "notes.txt", "notes.txt: not a record file (.sgf, .pgn or .jsonl)"),
        ([], "no record files named"),
    ):
        with pytest.raises(records.RecordError, match=re.escape(message)):
            list(records.paths(source))
    (tmp_path / "empty").mkdir()
    with pytest.raises(records.RecordError, match="empty: no .sgf, .pgn or .jsonl files"):
        list(records.read(tmp_path / "empty", games.make("go_9x9")))


def test_a_symbolic_link_loop_is_one_line_and_the_rest_is_read(go, tmp_path):
    (tmp_path / "games").mkdir()
    (tmp_path / "games" / "a.sgf").write_text("(;SZ[9]RE[B+R];B[ee])")
    os.symlink(tmp_path / "games", tmp_path / "games" / "loop")
    os.symlink("self.sgf", tmp_path / "games" / "self.sgf")  # a link to itself
    found, warnings = read_all(tmp_path / "games", go)
    assert [r.source for r in found] == [str(tmp_path / "games" / "a.sgf")]
    assert sorted(warnings) == [
        f"{tmp_path}/games/loop: a folder met twice (a symbolic link loop?); skipped",
        f"{tmp_path}/games/self.sgf: Too many levels of symbolic links",
    ]
    listed, skipped = [], []
    listed = [p.name for p in records.paths(tmp_path / "games", warn=skipped.append)]
    assert listed == ["a.sgf", "self.sgf"] and skipped == [sorted(warnings)[0]]


# Bad SGF -----------------------------------------------------------------------------------

GOOD = "(;GM[1]SZ[9]KM[7.5]RE[B+R];B[ee];W[cc])"
BAD_SGF = [
    ("corrupt", b"this is not SGF", "corrupt.sgf: SGF syntax error at character 0"),
    ("unbalanced", b"(;SZ[9]RE[B+R];B[ee](;W[cc])", "unbalanced.sgf: SGF syntax error at the end"),
    (
        "second",
        b"(;SZ[9]RE[B+R];B[ee])\n(;SZ[9]RE[B+",
        "second.sgf#2: SGF syntax error at the end",
    ),
    ("truncated", b"(;SZ[9]RE[B+R];B[ee];W[c", "truncated.sgf: SGF syntax error at the end"),
    ("empty", b"", "empty.sgf: an empty file"),
    ("latin1", "(;SZ[9]PB[J\u00e9r\u00f4me]RE[B+R])".encode("latin-1"), "latin1.sgf: not UTF-8"),
    ("charset", b"(;CA[klingon]SZ[9]RE[B+R])", "charset.sgf: an unknown charset CA[klingon]"),
    ("size", b"(;SZ[19]RE[B+R];B[dd])", "size.sgf: a 19x19 board (SZ), not go_9x9's"),
    ("point", b"(;SZ[9]RE[B+R];B[ee];W[zz])", "point.sgf: move 2: W[zz] is not a point of"),
    ("taken", b"(;SZ[9]RE[B+R];B[ee];W[ee])", "taken.sgf: move 2: W[ee] is illegal (the point"),
    ("colour", b"(;SZ[9]RE[B+R];B[ee];B[cc])", "colour.sgf: move 2: B[cc] is played when white"),
    ("unknown", b"(;SZ[9]RE[?];B[ee])", "unknown.sgf: an unknown result RE[?]: B+..., W+..."),
    ("void", b"(;SZ[9]RE[Void];B[ee])", "void.sgf: an unknown result RE[Void]"),
    ("unplayed", b"(;SZ[9];B[ee])", "unplayed.sgf: no result (RE)"),
    ("game", b"(;GM[2]SZ[8]RE[B+R])", "game.sgf: not a Go game (GM[2])"),
    ("ended", b"(;SZ[9]RE[B+R];B[ee];W[];B[];W[cc])", "ended.sgf: move 4: W[cc] is played after"),
]


def test_each_bad_sgf_is_one_line_and_the_good_ones_are_read(go, tmp_path):
    (tmp_path / "good.sgf").write_text(GOOD)
    for name, data, _ in BAD_SGF:
        (tmp_path / f"{name}.sgf").write_bytes(data)
    before = {p: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    found, warnings = read_all(tmp_path, go)
    assert [r.source for r in found] == [
        str(tmp_path / "good.sgf"),
        str(tmp_path / "second.sgf"),
    ]
    expected = sorted(f"{tmp_path}/{message}" for _, _, message in BAD_SGF)
    assert len(warnings) == len(expected)
    for warning, message in zip(sorted(warnings), expected, strict=True):
        assert warning.startswith(message) and "\n" not in warning
    assert "move 3 ended it" in next(w for w in warnings if "ended.sgf" in w)
    assert {p: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before  # nothing written


def test_strict_raises_at_the_first_bad_record_after_the_good_ones_before_it(go, tmp_path):
    for name, text in (("1.sgf", GOOD), ("2.sgf", "(;SZ[19]RE[B+R])"), ("3.sgf", GOOD)):
        (tmp_path / name).write_text(text)
    seen = []
    with pytest.raises(records.RecordError, match=re.escape("2.sgf: a 19x19 board")):
        for record in records.read(tmp_path, go, strict=True):
            seen.append(record.source)
    assert seen == [str(tmp_path / "1.sgf")]


def test_a_huge_file_is_refused_unread(go, tmp_path):
    with open(tmp_path / "huge.sgf", "wb") as file:
        file.truncate(2**40)  # a terabyte (sparse): refused by its size, never read
    (tmp_path / "small.sgf").write_text(GOOD)
    found, warnings = read_all(tmp_path, go)
    assert [r.source for r in found] == [str(tmp_path / "small.sgf")]
    limit = f"{records.MAX_FILE_BYTES:,}"
    assert warnings == [
        f"{tmp_path}/huge.sgf: {2**40:,} bytes, more than the {limit} a record file may hold"
    ]


# Writing -----------------------------------------------------------------------------------


def test_write_replaces_a_file_whole_and_appends_jsonl_lines(go, tmp_path):
    (tmp_path / "source.sgf").write_text(GOOD)
    (record,) = records.read(tmp_path / "source.sgf", go)
    target = tmp_path / "out" / "game.sgf"
    target.parent.mkdir()
    target.write_text("old")
    assert records.write(target, go, record) == target
    assert target.read_text() == records.dumps(go, record, "sgf")
    assert sorted(os.listdir(target.parent)) == ["game.sgf"]  # no temporary file left
    lines = tmp_path / "out" / "games.jsonl"
    lines.write_text('{"game": "go_9x9", "moves": ["E5"')  # a writer stopped mid-line
    records.write(lines, go, record)
    records.write(lines, go, record)
    found, warnings = read_all(lines, go)
    assert [r.source for r in found] == [f"{lines}:2", f"{lines}:3"]
    assert len(warnings) == 1 and warnings[0].startswith(f"{lines}:1: not JSON")
    with pytest.raises(records.RecordError, match="not a record file"):
        records.write(tmp_path / "game.txt", go, record)
    with pytest.raises(records.RecordError, match="unknown record format 'xml'"):
        records.dumps(go, record, "xml")
    with pytest.raises(records.RecordError, match="SGF records are written for go games"):
        records.write(target, games.make("tic_tac_toe"), record)
    assert target.read_text() == records.dumps(go, record, "sgf")  # untouched
