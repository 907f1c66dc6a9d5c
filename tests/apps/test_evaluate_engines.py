"""`azjax evaluate` against outside engines and the Connect Four solver, played like every
other opponent; its mistakes against perfect play (`azjax mistakes`)."""

import json
import subprocess
import sys

import pytest
from conftest import (
    assert_user_error,
    require_program,
    run_cli,
    subprocess_env,
    tiny_config,
    untrained_run,
)

from azjax import extras


def require_bitbully() -> None:
    """Skips with one line where bitbully is missing (a failure under
    AZJAX_REQUIRE_EXTERNAL=1: CI's test extra installs it)."""
    if not extras.installed("bitbully"):
        pytest.skip("bitbully is not installed (install it with: pip install -e '.[test]')")


@pytest.fixture(scope="module")
def c4_run(tmp_path_factory):
    """An untrained tiny Connect Four run (search with 4 simulations)."""
    return untrained_run(tmp_path_factory.mktemp("c4_run"), tiny_config("connect_four"))


@pytest.fixture(scope="module")
def go7_run(tmp_path_factory):
    """An untrained tiny Go run on a 7x7 board: short games against GNU Go."""
    config = tiny_config("go_9x9")
    config.game_kwargs.size = 7
    return untrained_run(tmp_path_factory.mktemp("go7_run"), config)


def test_evaluate_against_the_solver(capsys, c4_run):
    require_bitbully()
    status, out, err = run_cli(
        capsys, "evaluate", "--workdir", c4_run, "--opponent", "solver", "--games", "2"
    )
    assert status == 0, err
    assert "vs solver: " in out and "in 2 games" in out and "95% CI" in out, out


@pytest.mark.slow  # complete Go games against GNU Go
def test_evaluate_against_gnugo(capsys, go7_run):
    gnugo = require_program("gnugo", install="apt-get install gnugo", paths=("/usr/games",))
    spec = f'gtp:"{gnugo} --mode gtp --level 0"'
    status, out, err = run_cli(
        capsys, "evaluate", "--workdir", go7_run, "--opponent", spec, "--games", "2"
    )
    assert status == 0, err
    assert f"vs {spec}: " in out and "in 2 games" in out and "95% CI" in out, out
    assert "forfeited" not in out  # both games ended by the rules


def test_engine_opponents_that_cannot_play_are_one_line(capsys, c4_run, go_run):
    assert_user_error(
        capsys,
        ["evaluate", "--workdir", go_run, "--opponent", "solver"],
        "opponent solver cannot play go_9x9",
    )
    assert_user_error(
        capsys,
        ["evaluate", "--workdir", c4_run, "--opponent", "uci:fairy-stockfish"],
        "cannot play connect_four",
    )
    assert_user_error(
        capsys,
        ["evaluate", "--workdir", go_run, "--opponent", 'gtp:"gnugo" level=1'],
        "unknown option 'level'",
    )
    assert_user_error(
        capsys,
        ["evaluate", "--workdir", go_run, "--opponent", "gtp:gnugo", "--sgf", "games"],
        "--sgf",
    )


def test_mistakes_are_measured_and_appended(capsys, c4_run, tmp_path):
    require_bitbully()
    out_file = tmp_path / "mistakes.jsonl"
    argv = ["mistakes", "--workdir", c4_run, "--simulations", "0,4", "--positions", "30"]
    for _ in range(2):
        status, out, err = run_cli(capsys, *argv, "--out", out_file)
        assert status == 0, err
        lines = out.strip().splitlines()
        assert len(lines) == 2 and "the raw network" in lines[0], out
        assert "4 simulations" in lines[1] and "in 30 positions" in lines[1], out
    records = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert [r["simulations"] for r in records] == [0, 4, 0, 4]
    assert records[:2] == records[2:]  # the same positions and moves for a seed
    assert {r["positions"] for r in records} == {30}
    assert all(0 <= r["rate_low"] <= r["rate"] <= r["rate_high"] <= 1 for r in records)


def test_bad_mistakes_input_is_one_line(capsys, c4_run, go_run, tmp_path):
    base = ["mistakes", "--workdir", c4_run]
    assert_user_error(capsys, [*base, "--positions", "0"], "--positions", "between 1")
    assert_user_error(capsys, [*base, "--simulations", "0,x"], "--simulations")
    assert_user_error(capsys, [*base, "--simulations", "-1"], "--simulations")
    assert_user_error(
        capsys, ["mistakes", "--workdir", go_run], "in hex up to 5x5 only", "plays go_9x9"
    )
    assert_user_error(capsys, [*base, "--out", tmp_path / "no" / "such" / "file"], "cannot write")
    assert_user_error(capsys, [*base, "--step", "7"], "does not exist")


# Runs the command line with bitbully missing (None in sys.modules makes its import fail).
WITHOUT_BITBULLY = (
    "import sys; sys.modules['bitbully'] = None; "
    "from azjax.apps import cli; sys.exit(cli.main({argv!r}))"
)


@pytest.mark.parametrize("command", ["evaluate", "mistakes"])
def test_a_missing_solver_names_its_extra_in_one_line(tmp_path, c4_run, command):
    argv = [command, "--workdir", str(c4_run)]
    argv += ["--opponent", "solver", "--games", "2"] if command == "evaluate" else []
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_BITBULLY.format(argv=argv)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=subprocess_env(),
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"azjax: error: azjax {command}: bitbully is not installed: "
        "pip install 'azjax[solver]' (the solver extra)"
    ]
