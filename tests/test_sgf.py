"""SGF records of Go games, read back and replayed by sgfmill (an independent SGF reader
and Go board with its own capture rules, a test dependency)."""

import jax
import numpy as np
import pytest
from conftest import tiny_config, untrained_run
from sgfmill import boards
from sgfmill import sgf as sgfmill

from azjax import arena, cli, games
from azjax.protocols import sgf


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


def test_arena_games_replay_to_the_same_final_board(go):
    # Random games with many captures: sgfmill's own capture rules must reach our final board.
    player = arena.random_player(go)
    match = jax.jit(arena.make_match(go, player, player, num_games=8))
    result = match(None, None, jax.random.PRNGKey(3))
    records = sgf.match_records(go, result, "a", "b")
    finals = jax.device_get(result.final_states.board)
    for index, text in enumerate(records):
        record, board = replay(text)
        np.testing.assert_array_equal(board, finals[index], err_msg=f"game {index}")
        assert len(record.get_main_sequence()) - 1 == int(result.lengths[index])
        black = record.get_root().get("PB")
        assert black == ("a" if bool(result.a_first[index]) else "b")
        score = float(go.score(jax.tree.map(lambda x, i=index: x[i], result.final_states)))
        assert record.get_root().get("RE") == sgf.result_string(score)


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
