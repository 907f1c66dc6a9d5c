"""`azjax records`: outside engines play complete games and write them as game records
(GNU Go's as SGF, Fairy-Stockfish's as PGN), read back by sgfmill and replayed by
`records.read`; seeded openings, resuming, several games at once, a real Ctrl-C, one-line
errors; and `--records DIR` of `azjax selfplay` and `azjax evaluate`."""

import json
import signal
import subprocess
import time

import pytest
from conftest import (
    PYTHON,
    assert_user_error,
    require_program,
    run_cli,
    subprocess_env,
    tiny_config,
    untrained_run,
)
from sgfmill import boards
from sgfmill import sgf as sgfmill

from azjax import games
from azjax.games import records


def gnugo_spec(level: int = 0) -> str:
    gnugo = require_program("gnugo", install="apt-get install gnugo", paths=("/usr/games",))
    return f'gtp:"{gnugo} --mode gtp --level {level}"'


def stockfish() -> str:
    return require_program(
        "fairy-stockfish", install="apt-get install fairy-stockfish", paths=("/usr/games",)
    )


def sgfmill_lead(text: str) -> float:
    """Black's Tromp-Taylor lead on the final board, by sgfmill's own board and scoring."""
    game = sgfmill.Sgf_game.from_string(text)
    board = boards.Board(game.get_size())
    for node in game.get_main_sequence()[1:]:
        colour, point = node.get_move()
        if point is not None:
            board.play(point[0], point[1], colour)
    return board.area_score() - game.get_komi()


@pytest.mark.slow  # complete games against an outside engine
def test_gnugo_plays_itself_into_sgf_records_and_a_rerun_resumes(capsys, tmp_path):
    spec, out = gnugo_spec(0), tmp_path / "gnugo"
    argv = ["records", "--game", "go_9x9", "--players", spec, "--out", out, "--jobs", "2"]
    status, stdout, err = run_cli(capsys, *argv, "--games", "3")
    assert status == 0, err
    assert "3/3 games" in stdout and "games a minute" in stdout, stdout
    paths = sorted(out.glob("*.sgf"))
    assert [p.name for p in paths] == [f"records-00000{i}.sgf" for i in range(3)]
    go = games.make("go_9x9")
    read = list(records.read(out, go, strict=True))
    assert len(read) == 3 and len({r.actions for r in read}) == 3  # seeded openings differ
    for path, record in zip(paths, read, strict=True):
        text = path.read_text()
        root = sgfmill.Sgf_game.from_string(text).get_root()
        assert root.get("PB") == root.get("PW") == spec
        lead = sgfmill_lead(text)  # the game ended by two passes: the real Tromp-Taylor result
        assert record.actions[-2:] == (go.num_actions - 1,) * 2
        assert root.get("RE") == (f"B+{lead:g}" if lead > 0 else f"W+{-lead:g}")
        assert record.result == (1.0 if lead > 0 else -1.0)
    written = {p.name: p.stat().st_mtime_ns for p in paths}
    status, stdout, err = run_cli(capsys, *argv, "--games", "4")
    assert status == 0, err
    assert "3 of 4 games already written; playing 1" in stdout and "4/4 games" in stdout
    assert {p.name: p.stat().st_mtime_ns for p in paths} == written  # none played again
    assert len(list(out.glob("*.sgf"))) == 4
    # the fourth game's opening is the seed's: the same in a folder played in one go
    status, _, err = run_cli(capsys, *argv[:-4], "--out", tmp_path / "again", "--games", "4")
    assert status == 0, err
    again = records.read(tmp_path / "again" / "records-000003.sgf", go, strict=True)
    fourth = records.read(out / "records-000003.sgf", go, strict=True)
    assert next(again).actions[:4] == next(fourth).actions[:4]


@pytest.mark.slow  # complete games against an outside engine
def test_fairy_stockfish_records_survive_ctrl_c_and_resume(tmp_path):
    """Two settings of Fairy-Stockfish, colours alternating, as PGN; a real SIGINT stops the
    command (status 130, the games written whole) and the same command finishes."""
    program = stockfish()
    specs = [f"uci:{program} depth=1", f"uci:{program} depth=1 skill=-20"]
    out = tmp_path / "xiangqi"
    command = [PYTHON, "-m", "azjax.apps.cli", "records", "--game", "xiangqi", "--players",
               *specs, "--games", "10", "--out", str(out), "--jobs", "2"]  # fmt: skip
    process = subprocess.Popen(command, env=subprocess_env(), stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if len(list(out.glob("*.pgn"))) >= 2:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and b"Traceback" not in err, err.decode()
    xiangqi = games.make("xiangqi")
    kept = sorted(out.glob("*.pgn"))
    assert 2 <= len(kept) < 10 and not list(out.glob("*.tmp"))
    assert len(list(records.read(kept, xiangqi, strict=True))) == len(kept)  # each whole
    # What the games cost, kept through the stop and summed over the runs that made them.
    stopped = json.loads((out / "compute.json").read_text())
    assert stopped["games"] == len(kept) and stopped["engine_cpu_seconds"] > 0
    result = subprocess.run(command, env=subprocess_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert f"{len(kept)} of 10 games already written" in result.stdout
    total = json.loads((out / "compute.json").read_text())
    assert total["games"] == 10 and "making the 10 games" in result.stdout
    for key in ("engine_cpu_seconds", "azjax_cpu_seconds", "wall_seconds"):
        assert total[key] > stopped[key] > 0, key
    read = list(records.read(out, xiangqi, strict=True))
    assert len(read) == 10 and len({r.actions for r in read}) == 10
    for index, record in enumerate(read):
        assert record.players == (tuple(specs) if index % 2 == 0 else tuple(specs[::-1]))


def test_bad_input_is_one_line(capsys, tmp_path):
    (tmp_path / "file").write_text("")
    gnugo = gnugo_spec(0)  # GNU Go by its path (/usr/games is not on every PATH)
    go = ["records", "--game", "go_9x9", "--games", "2", "--out", tmp_path / "out"]
    cases = [
        (["records", "--game", "chess", "--players", gnugo, "--games", "2", "--out", "x"],
         "unknown game 'chess'"),
        ([*go, "--players", "random"], "bad engine spec 'random'"),
        ([*go, "--players", "gtp:no-such-engine-here"], "engine program not found"),
        ([*go, "--players", "uci:fairy-stockfish"], "cannot play go_9x9"),
        ([*go, "--players", gnugo, gnugo, gnugo], "one or two engine specs"),
        ([*go, "--players", gnugo, "--format", "pgn"], "pgn records hold xiangqi"),
        ([*go, "--players", gnugo, "--opening-plies", "500"], "opening plies"),
        ([*go[:-1], tmp_path / "file", "--players", gnugo], "is a file"),
        ([*go[:3], "--games", "0", "--out", "x", "--players", gnugo], "--games"),
    ]  # fmt: skip
    for argv, fragment in cases:
        assert_user_error(capsys, argv, fragment)
    assert not (tmp_path / "out").exists()  # nothing made for bad input


def test_other_settings_in_the_folder_and_a_broken_engine_are_one_line(capsys, tmp_path):
    spec = gnugo_spec(0)
    out = tmp_path / "out"
    out.mkdir()
    settings = {"game": "go_9x9", "players": [spec], "opening_plies": 2, "seed": 0}
    (out / "records.json").write_text(json.dumps({**settings, "format": "sgf"}))
    argv = ["records", "--game", "go_9x9", "--players", spec, "--games", "2", "--out", out]
    assert_user_error(capsys, argv, "opening_plies 2, not 4", "another --out")
    # a program that speaks no GTP: its one-line EngineError, status 2
    broken = ["records", "--game", "go_9x9", "--players", "gtp:cat", "--games", "1"]
    assert_user_error(capsys, [*broken, "--out", tmp_path / "cat", "--timeout", "5"], "gtp:cat")


def test_selfplay_and_evaluate_write_records_of_any_game(capsys, tmp_path):
    run = untrained_run(tmp_path / "ttt", tiny_config("tic_tac_toe"))
    ttt = games.make("tic_tac_toe")
    status, out, err = run_cli(
        capsys, "selfplay", "--workdir", run, "--games", "2", "--records", tmp_path / "self"
    )
    assert status == 0, err
    assert "wrote 2 self-play records" in out
    read = list(records.read(tmp_path / "self" / "selfplay.jsonl", ttt, strict=True))
    assert len(read) == 2
    for record in read:  # every move's search policy, on legal moves (checked by `read`)
        assert record.policies.shape == (len(record.actions), ttt.num_actions)
        assert abs(record.policies.sum(axis=1) - 1).max() < 1e-3
    argv = ["evaluate", "--workdir", run, "--opponent", "random", "--games", "2"]
    status, out, err = run_cli(capsys, *argv, "--records", tmp_path / "arena")
    assert status == 0, err
    read = list(records.read(tmp_path / "arena", ttt, strict=True))
    assert [r.players for r in read] == [("azjax-0", "random"), ("random", "azjax-0")]
    assert_user_error(capsys, ["selfplay", "--workdir", run, "--games", "2"], "--records DIR")


@pytest.mark.parametrize("option", ["--records", "--sgf"])
@pytest.mark.parametrize("command", ["evaluate", "selfplay"])
def test_a_records_folder_that_cannot_be_written_is_one_line_before_the_games(
    capsys, tmp_path, command, option
):
    """A file, a name over 255 bytes, a folder under /proc: one line and status 2 before any
    game (the games were played, then 'cannot write' with status 1)."""
    (tmp_path / "file").write_text("")
    argv = [command, "--agent", "tic_tac_toe", "--games", "2"]
    argv += ["--opponent", "random"] if command == "evaluate" else []
    for folder, said in [
        (tmp_path / "file", "it is a file, not a folder"),
        (tmp_path / ("a" * 300), "File name too long"),
        ("/proc/no-folder", "No such file or directory"),
    ]:
        assert_user_error(
            capsys, [*argv, option, folder], f"cannot write {option} {folder}: ", said
        )


@pytest.mark.deep  # CI: records of evaluate (any game) and of both engines here
@pytest.mark.slow  # complete games against an outside engine
def test_evaluate_against_an_engine_writes_its_games(capsys, xiangqi_run, tmp_path):
    spec = f"uci:{stockfish()} depth=1"
    argv = ["evaluate", "--workdir", xiangqi_run, "--opponent", spec, "--games", "2"]
    status, out, err = run_cli(capsys, *argv, "--records", tmp_path)
    assert status == 0, err
    assert "wrote 2 records" in out
    read = list(records.read(tmp_path, games.make("xiangqi"), strict=True))
    assert [r.players for r in read] == [("azjax-0", spec), (spec, "azjax-0")]
