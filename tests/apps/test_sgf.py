"""SGF records of Go games, read back and replayed by sgfmill (an independent SGF reader
and Go board with its own capture rules, a test dependency)."""

import datetime
import re

import jax
import numpy as np
import pytest
from conftest import tiny_config, untrained_run
from sgfmill import boards
from sgfmill import sgf as sgfmill

from azjax import games
from azjax.apps import cli
from azjax.apps.protocols.sgf import match_records
from azjax.games.records import sgf, sgf_parse
from azjax.matches import arena


@pytest.fixture(scope="module")
def go():
    return games.make("go_9x9")


def replay(text: str) -> tuple[sgfmill.Sgf_game, np.ndarray]:
    """Parses an SGF record with sgfmill and plays it on sgfmill's board.

    Returns the game and the final board as our encoding: [size*size] int8, row-major from
    the top-left, +1 black, -1 white, 0 empty.
    """
    record = sgfmill.Sgf_game.from_string(text)
    size = record.get_size()
    board = boards.Board(size)
    for node in record.get_main_sequence()[1:]:
        colour, point = node.get_move()
        if point is not None:
            board.play(point[0], point[1], colour)
    ours = np.zeros(size * size, np.int8)
    for colour, (row, column) in board.list_occupied_points():
        ours[(size - 1 - row) * size + column] = (
            1 if colour == "b" else -1
        )  # sgfmill row 0 = bottom
    return record, ours


def test_result_strings():
    assert sgf.result_string(3.5) == "B+3.5"
    assert sgf.result_string(-0.5) == "W+0.5"
    assert sgf.result_string(0.0) == "0"
    assert sgf.result_string(12.0) == "B+12"


def test_game_record_header_and_moves(go):
    # E5 (centre), a white pass, black A9 (top-left), white J1 (bottom-right).
    actions = [40, 81, 0, 80]
    text = sgf.game_record(go, actions, result="B+2.5", black="me", white="you")
    record, board = replay(text)
    root = record.get_root()
    assert record.get_size() == 9 and record.get_komi() == 7.5
    assert root.get("PB") == "me" and root.get("PW") == "you" and root.get("RE") == "B+2.5"
    moves = [node.get_move() for node in record.get_main_sequence()[1:]]
    # sgfmill points are (row from the bottom, column).
    assert moves == [("b", (4, 4)), ("w", None), ("b", (8, 0)), ("w", (0, 8))]
    assert board[40] == 1 and board[0] == 1 and board[80] == -1


def test_sgf_requires_go():
    with pytest.raises(Exception, match="go games"):
        sgf.check_go(games.make("tic_tac_toe"))


@pytest.fixture(scope="module")
def random_match(go):
    """Eight games of random play (many captures), as `arena.make_match` plays them."""
    player = arena.random_player(go)
    match = jax.jit(arena.make_match(go, player, player, num_games=8))
    return match(None, None, jax.random.PRNGKey(3))


def test_arena_games_replay_to_the_same_final_board(go, random_match):
    # sgfmill's own capture rules must reach our final board.
    result = random_match
    records = match_records(go, result, "a", "b")
    finals = jax.device_get(result.final_states.board)
    for index, text in enumerate(records):
        record, board = replay(text)
        np.testing.assert_array_equal(board, finals[index], err_msg=f"game {index}")
        assert len(record.get_main_sequence()) - 1 == int(result.lengths[index])
        black = record.get_root().get("PB")
        assert black == ("a" if bool(result.a_first[index]) else "b")
        score = float(go.score(jax.tree.map(lambda x, i=index: x[i], result.final_states)))
        assert record.get_root().get("RE") == sgf.result_string(score)


@pytest.mark.slow  # 32 s
def test_selfplay_and_evaluate_write_sgf(go_run, tmp_path, capsys):
    assert (
        cli.main(
            [
                "selfplay",
                "--workdir",
                str(go_run),
                "--games",
                "2",
                "--sgf",
                str(tmp_path / "selfplay"),
            ]
        )
        == 0
    )
    assert (
        cli.main(
            [
                "evaluate",
                "--workdir",
                str(go_run / "checkpoints" / "0"),
                "--opponent",
                "random",
                "--games",
                "2",
                "--sgf",
                str(tmp_path / "arena"),
            ]
        )
        == 0
    )
    for folder in ("selfplay", "arena"):
        paths = sorted((tmp_path / folder).glob("*.sgf"))
        assert len(paths) == 2
        for path in paths:
            record, _ = replay(path.read_text())
            assert record.get_root().get("RE")
    assert "wrote 2 SGF files" in capsys.readouterr().out


def test_sgf_of_another_game_is_a_user_error(tmp_path, capsys):
    run = untrained_run(tmp_path / "ttt", tiny_config("tic_tac_toe"))
    status = cli.main(["evaluate", "--workdir", str(run), "--games", "2", "--sgf", str(tmp_path)])
    assert status == 2
    assert "SGF records are written for go games" in capsys.readouterr().err


def test_records_hold_the_date_setup_and_move_comments(go):
    # Handicap stones C3 and G7, white first: W E5, B pass, W A1 (comments on white's moves).
    setup = np.zeros(81, np.int8)
    setup[[56, 24]] = 1
    comments = [sgf.search_comment(0.25, 200), None, "a ] and a \\ inside"]
    text = sgf.game_record(
        go, [40, 81, 72], setup=setup, first_player=1, comments=comments, date="2024-05-01"
    )
    record = sgfmill.Sgf_game.from_string(text)
    root = record.get_root()
    assert root.get("DT") == "2024-05-01" and root.get("HA") == 2 and root.get("PL") == "w"
    assert root.get_setup_stones() == ({(2, 2), (6, 6)}, set(), set())
    nodes = record.get_main_sequence()[1:]
    assert [node.get_move() for node in nodes] == [("w", (4, 4)), ("b", None), ("w", (0, 0))]
    assert nodes[0].get("C") == "value +0.250 (win rate 62.5%), 200 visits"
    assert not nodes[1].has_property("C") and nodes[2].get("C") == "a ] and a \\ inside"
    # The default date is today's; a game without setup has no AB, HA or PL.
    root = sgfmill.Sgf_game.from_string(sgf.game_record(go, [40])).get_root()
    assert root.get("DT") == datetime.date.today().isoformat()
    assert not any(root.has_property(key) for key in ("AB", "AW", "HA", "PL"))


def test_parse_game_reads_back_what_game_record_writes(go):
    setup = np.zeros(81, np.int8)
    setup[[10, 20]], setup[30] = 1, -1
    actions = [40, 81, 0, 80, 81]
    text = sgf.game_record(go, actions, setup=setup, first_player=1, komi=0.5, date="2001-02-03")
    record = sgf_parse.parse_game(text)
    assert (record.size, record.komi, record.date, record.first_player) == (9, 0.5, "2001-02-03", 1)
    np.testing.assert_array_equal(record.setup, setup)
    assert record.moves == tuple(zip([1, 0, 1, 0, 1], actions, strict=True))
    plain = sgf_parse.parse_game(sgf.game_record(go, [3]))
    assert plain.setup is None and plain.first_player == 0 and plain.komi == 7.5


def test_parse_game_reads_games_written_by_sgfmill(go):
    # sgfmill writes an independent record: setup stones, moves (a pass), a variation.
    record = sgfmill.Sgf_game(size=9)
    record.get_root().set("KM", 6.5)
    record.get_root().set_setup_stones({(0, 0), (8, 8)}, {(4, 4)})
    main = record.extend_main_sequence()
    main.set_move("w", (2, 3))
    main.new_child().set_move("b", None)
    record.get_root().new_child().set_move("b", (1, 1))  # a second variation: not read
    parsed = sgf_parse.parse_game(record.serialise().decode())
    assert parsed.komi == 6.5 and parsed.first_player == 1
    assert np.flatnonzero(parsed.setup).tolist() == [8, 40, 72]
    assert parsed.setup[[8, 40, 72]].tolist() == [1, -1, 1]
    assert parsed.moves == ((1, 6 * 9 + 3), (0, 81))


def test_parse_game_reads_sgf_corners():
    # Rectangles of points (FF[4] compressed lists), FF[3] property names, "tt" passes,
    # escapes and soft line breaks in values, the first of several games.
    text = (
        "(;FF[3]GaMe[1]SiZe[5]KoMi[-2]C[a \\] b \\\\ c\\\nd]AddBlack[aa:bb][ee]AddWhite[cc]"
        ";B[tt]\n(;W[dd];B[])(;W[ad]))(;SZ[9];B[aa])"
    )
    record = sgf_parse.parse_game(text)
    assert record.size == 5 and record.komi == -2.0 and record.first_player == 0
    assert np.flatnonzero(record.setup).tolist() == [0, 1, 5, 6, 12, 24]
    assert record.setup[12] == -1
    assert record.moves == ((0, 25), (1, 18), (0, 25))
    assert sgf_parse._main_line(text)[0]["C"] == ["a ] b \\ cd"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "SGF syntax error at the end of the file"),
        ("not sgf", "SGF syntax error at character 0"),
        ("(;SZ[9];B[aa]", "SGF syntax error at the end of the file"),
        ("(;SZ[9]B)", "SGF syntax error at character 7"),
        ("(;GM[2])", "not a Go game"),
        ("(;SZ[9:7])", "unsupported board size SZ[9:7]"),
        ("(;SZ[27])", "unsupported board size SZ[27]"),
        ("(;SZ[\u0669])", "unsupported board size"),
        ("(;SZ[9]KM[lots])", "KM[lots] is not a komi"),
        ("(;SZ[9]KM[inf])", "KM[inf] is not a komi"),
        ("(;SZ[9]KM[1_0])", "KM[1_0] is not a komi"),
        ("(;SZ[9]KM[\u0663])", "is not a komi"),
        ("(;SZ[" + "9" * 5000 + "])", "unsupported board size"),
        ("(;SZ[9];B[jj])", "B[jj] is not a point of a 9x9 board"),
        ("(;SZ[9];B[aa]W[bb])", "node 1 holds more than one move"),
        ("(;SZ[9];B[aa];AW[bb])", "setup stones (AB, AW, AE) after the first node"),
        ("(;SZ[9]AB[ab][ba]AW[aa])", "the setup stones leave a chain without liberties"),
        ("(;SZ[9]AB[tt])", "AB[tt] is not a point"),
    ],
)
def test_parse_game_errors(text, message):
    with pytest.raises(sgf_parse.SgfError, match=re.escape(message)):
        sgf_parse.parse_game(text)


@pytest.mark.timeout(60)  # a guard only: a quadratic match of KM took minutes
def test_long_values_are_refused_at_once_and_shown_short():
    for value in ("1" * 100_000 + "x", "1" * 100_000, "." + "5" * 100_000 + "e"):
        with pytest.raises(sgf_parse.SgfError) as error:
            sgf_parse.parse_game(f"(;SZ[9]KM[{value}])")
        assert str(error.value) == f"KM[{value[:37]}...] is not a komi"
    with pytest.raises(sgf_parse.SgfError, match=re.escape(f"SZ[{'9' * 37}...]")):
        sgf_parse.parse_game("(;SZ[" + "9" * 5000 + "])")
    with pytest.raises(sgf_parse.SgfError, match=re.escape(f"B[{'a' * 37}...] is not a point")):
        sgf_parse.parse_game(f"(;SZ[9];B[{'a' * 5000}])")


def test_match_records_comment_moves_with_searched_values(go, random_match):
    result = random_match
    values = np.linspace(-1, 1, result.actions.size).reshape(result.actions.shape)  # [T, G]
    records = match_records(go, result, "a", "b", values=values, simulations=8, date="2020-01-01")
    for index, text in enumerate(records):
        record = sgfmill.Sgf_game.from_string(text)
        assert record.get_root().get("DT") == "2020-01-01"
        comments = [node.get("C") for node in record.get_main_sequence()[1:]]
        length = int(result.lengths[index])
        assert comments == [sgf.search_comment(float(v), 8) for v in values[:length, index]]
    plain = sgfmill.Sgf_game.from_string(match_records(go, result, "a", "b")[0])
    assert not any(node.has_property("C") for node in plain.get_main_sequence())
