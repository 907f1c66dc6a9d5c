"""User mistakes get one clear line on stderr and exit status 2; the commands work end to end."""

import io
import json
import shutil

import pytest
from conftest import tiny_config

from azjax import cli
from azjax import train as train_lib


def run_cli(capsys, *argv):
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_user_error(capsys, argv, *fragments):
    status, _, err = run_cli(capsys, *argv)
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("azjax: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("cli_run")
    config = tiny_config()
    config.train.num_iterations = 2
    train_lib.train(config, workdir, quiet=True)
    return workdir


def test_unknown_game(capsys, tmp_path):
    assert_user_error(
        capsys,
        ["train", "--workdir", str(tmp_path), "--config.game=chess"],
        "unknown game 'chess'",
        "connect_four",
    )


def test_unknown_experiment_file(capsys):
    assert_user_error(capsys, ["train", "--config", "experiments/nope.py"], "not found")


def test_unknown_config_key_suggests_the_closest(capsys):
    assert_user_error(
        capsys,
        ["train", "--config.search.num_simulation=8"],
        "unknown config key 'search.num_simulation'",
        "search.num_simulations",
    )


@pytest.mark.parametrize(
    "override, fragment",
    [
        ("--config.search.num_simulations=lots", "expects int"),
        ("--config.learner.learning_rate=fast", "expects float"),
        ("--config.replay.augment=maybe", "expects a bool"),
        ("--config.search.num_simulations=-3", "'search.num_simulations' must be in [1, "),
        ("--config.search.algorithm=alphabeta", "puct"),
        ("--config.search", "needs a value"),
    ],
)
def test_bad_config_values(capsys, override, fragment):
    assert_user_error(capsys, ["train", override], fragment)


def test_workdir_with_a_conflicting_config(capsys, trained, tmp_path):
    workdir = tmp_path / "copy"
    shutil.copytree(trained, workdir)
    experiment = tmp_path / "tiny.py"
    tests_dir = str(__file__.rsplit("/", 1)[0])
    experiment.write_text(
        f"import sys\nsys.path.insert(0, {tests_dir!r})\nfrom conftest import tiny_config\n"
        "def get_config():\n    return tiny_config()\n"
    )
    assert_user_error(
        capsys,
        [
            "train",
            "--config",
            str(experiment),
            "--workdir",
            str(workdir),
            "--config.search.num_simulations=6",
            "--config.learner.batch_size=8",
        ],
        "different config",
        "search.num_simulations: 4 -> 6",
        "learner.batch_size: 16 -> 8",
        "--allow-config-change",
    )
    # The flag overrides the check; resuming with num_iterations only is always allowed.
    status, out, err = run_cli(
        capsys,
        "train",
        "--config",
        str(experiment),
        "--workdir",
        str(workdir),
        "--config.train.num_iterations=3",
    )
    assert status == 0, err
    assert "resuming" in out and "it    3" in out
    events = (workdir / "tensorboard").iterdir()
    assert any(path.name.startswith("events.out.tfevents") for path in events)
    status, out, err = run_cli(
        capsys,
        "train",
        "--config",
        str(experiment),
        "--workdir",
        str(workdir),
        "--config.train.num_iterations=3",
        "--config.search.num_simulations=6",
        "--allow-config-change",
    )
    assert status == 0, err
    saved = json.loads((workdir / "config.json").read_text())
    assert saved["search"]["num_simulations"] == 6


def test_missing_run_and_missing_checkpoint(capsys, tmp_path, trained):
    assert_user_error(capsys, ["evaluate", "--workdir", str(tmp_path)], "no config.json")
    workdir = tmp_path / "empty"
    workdir.mkdir()
    shutil.copy(trained / "config.json", workdir / "config.json")
    assert_user_error(capsys, ["evaluate", "--workdir", str(workdir)], "no checkpoint")


def test_corrupt_only_checkpoint(capsys, tmp_path, trained):
    """The only checkpoint damaged: a warning that moves it aside, then one error line."""
    workdir = tmp_path / "corrupt"
    shutil.copytree(trained, workdir)
    for path in (workdir / "checkpoints" / "2" / "params").rglob("*"):
        if path.is_file():
            path.write_bytes(b"garbage")
    status, _, err = run_cli(capsys, "evaluate", "--workdir", str(workdir))
    assert status == 2
    warning, error = err.strip().splitlines()
    assert warning.startswith("azjax: warning: skipped checkpoint 2")
    assert error == f"azjax: error: no readable checkpoint in {workdir}/checkpoints"
    assert (workdir / "checkpoints_damaged" / "2").is_dir()
    assert_user_error(
        capsys,
        ["train", "--workdir", str(workdir), "--config", str(workdir / "missing.py")],
        "not found",
    )


def test_corrupt_checkpoint_on_resume(capsys, tmp_path, trained):
    workdir = tmp_path / "corrupt_trainer"
    shutil.copytree(trained, workdir)
    for path in (workdir / "checkpoints" / "2" / "trainer").rglob("*"):
        if path.is_file():
            path.write_bytes(b"garbage")
    config = tiny_config()
    config.train.num_iterations = 3
    from azjax.types import UserError

    # No checkpoint left to resume from: refuse rather than start the run over.
    with pytest.raises(UserError, match="no readable checkpoint"):
        train_lib.train(config, workdir, quiet=True)
    assert (workdir / "checkpoints_damaged" / "2").is_dir()


def test_bad_opponent_and_games(capsys, trained):
    assert_user_error(
        capsys, ["evaluate", "--workdir", str(trained), "--opponent", "mcts:x"], "mcts:N"
    )
    assert_user_error(capsys, ["evaluate", "--workdir", str(trained), "--games", "7"], "even")


def test_evaluate_prints_results_with_interval(capsys, trained):
    status, out, err = run_cli(
        capsys,
        "evaluate",
        "--workdir",
        str(trained),
        "--opponent",
        "random",
        "--games",
        "8",
        "--simulations",
        "4",
    )
    assert status == 0, err
    assert "vs random:" in out and "95% CI" in out and "Elo" in out
    status, out, err = run_cli(
        capsys,
        "evaluate",
        "--workdir",
        str(trained),
        "--opponent",
        f"workdir:{trained}",
        "--games",
        "4",
        "--simulations",
        "4",
    )
    assert status == 0, err
    assert "4 games" in out


def test_play_rejects_illegal_moves_and_finishes(capsys, monkeypatch, trained):
    moves = ["banana", "10", "1", "1", "1", "1", "1", "1", "1", "1", "1", "1"]
    lines = "".join(f"{move}\n" for move in moves).encode()
    typed = io.TextIOWrapper(io.BytesIO(lines), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", typed)
    status, out, _ = run_cli(capsys, "play", "--workdir", str(trained), "--simulations", "4")
    assert status == 0
    assert out.count("illegal move:") >= 2


def test_games_lists_the_registry(capsys):
    status, out, _ = run_cli(capsys, "games")
    assert status == 0 and "connect_four" in out.split() and "tic_tac_toe" in out.split()
