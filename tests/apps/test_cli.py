"""User mistakes get one clear line on stderr and exit status 2; the commands work end to end."""

import io
import json
import logging
import shutil
import subprocess
import sys

import pytest
from conftest import REPO, TESTS, assert_user_error, run_cli, subprocess_env, tiny_config

from azjax.apps import api, cli, cli_train, serve


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("cli_run")
    config = tiny_config()
    config.train.num_iterations = 2
    api.train(config, workdir, quiet=True)
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
    tests_dir = TESTS
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
        api.train(config, workdir, quiet=True)
    assert (workdir / "checkpoints_damaged" / "2").is_dir()


def test_bad_opponent_and_games(capsys, trained):
    assert_user_error(
        capsys, ["evaluate", "--workdir", str(trained), "--opponent", "mcts:x"], "mcts:N"
    )
    assert_user_error(capsys, ["evaluate", "--workdir", str(trained), "--games", "7"], "even")


@pytest.mark.parametrize("command", ["play", "evaluate", "selfplay", "gtp", "uci", "serve"])
@pytest.mark.parametrize("name", ["", "  ", "zoo:"])
def test_an_empty_agent_name_is_a_user_error(capsys, command, name):
    assert_user_error(
        capsys, [command, "--agent", name], "argument --agent", "the name of a shipped agent"
    )


@pytest.mark.parametrize("spelling", ["tic_tac_toe", "zoo:tic_tac_toe"])
def test_agent_takes_a_name_or_a_zoo_spec(capsys, spelling):
    status, out, err = run_cli(capsys, "evaluate", "--agent", spelling, "--games", "2")
    assert status == 0, err
    assert out.startswith("zoo:tic_tac_toe (iteration "), out


def test_an_empty_opponent_agent_is_a_user_error(capsys, monkeypatch, trained):
    def served(*args, **kwargs):
        raise AssertionError("served a game without the opponent")

    monkeypatch.setattr(serve, "run", served)
    for name in ("", " "):
        assert_user_error(
            capsys,
            ["serve", "--workdir", str(trained), "--opponent-agent", name],
            "argument --opponent-agent",
            "the name of a shipped agent",
        )


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


def _train_args(*argv):
    """`azjax train ARGV` parsed, for `cli_train._train_config` (which trains nothing)."""
    from azjax.apps.cli_args import parser

    rest, overrides = cli.split_overrides(["train", *argv])
    return parser().parse_args(rest), overrides


def test_train_resolves_its_config_and_workdir(trained, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # A fresh run: connect_four by default, in runs/<name> or the --workdir given.
    config, workdir = cli_train._train_config(*_train_args())
    assert config.name == "connect_four" and str(workdir) == "runs/connect_four"
    config, workdir = cli_train._train_config(*_train_args("--workdir", "fresh"))
    assert config.name == "connect_four" and str(workdir) == "fresh"
    config, _ = cli_train._train_config(*_train_args("--config", "othello:cpu6", "--workdir", "o"))
    assert config.name == "othello_cpu6"
    # A run's own config: from --workdir alone, from --config RUN/config.json or RUN (which
    # then resume RUN), or as the experiment of another run.
    for argv in (
        ("--workdir", str(trained)),
        ("--config", str(trained / "config.json")),
        ("--config", str(trained)),
    ):
        config, workdir = cli_train._train_config(*_train_args(*argv))
        assert config.name == "tiny_tic_tac_toe" and workdir == trained, argv
    config, workdir = cli_train._train_config(
        *_train_args("--config", str(trained / "config.json"), "--workdir", "again")
    )
    assert config.name == "tiny_tic_tac_toe" and str(workdir) == "again"


def test_train_resumes_a_run_from_its_directory_alone(capsys, trained, tmp_path):
    workdir = tmp_path / "run"
    shutil.copytree(trained, workdir)
    saved = (workdir / "config.json").read_text()
    # A key that changes what the run computes: refused in one line, the run untouched.
    assert_user_error(
        capsys,
        ["train", "--workdir", str(workdir), "--config.search.num_simulations=6"],
        "different config (search.num_simulations: 4 -> 6)",
        "may change only train.num_iterations, train.max_minutes",
        "--allow-config-change",
    )
    assert (workdir / "config.json").read_text() == saved
    # The budget may change: it trains on with the run's own config, not connect_four.
    argv = ["train", "--workdir", str(workdir), "--config.train.num_iterations=3"]
    status, out, err = run_cli(capsys, *argv)
    assert status == 0, err
    assert "resuming" in out and "training tic_tac_toe" in out and "it    3" in out
    saved = json.loads((workdir / "config.json").read_text())
    assert saved["name"] == "tiny_tic_tac_toe" and saved["train"]["num_iterations"] == 3
    # --config RUN/config.json resumes RUN itself (done: nothing left to train).
    status, out, err = run_cli(capsys, "train", "--config", str(workdir / "config.json"))
    assert status == 0, err
    assert f"resuming {workdir} from iteration 3" in out and "done: 3 iterations" in out


def test_messages_go_through_logging_by_area(capsys, azjax_records, trained, tmp_path):
    """A lab routes and filters azjax's messages like any library's: by area (`azjax.training`
    here), the progress lines and the one-line errors unchanged."""
    workdir = tmp_path / "run"
    shutil.copytree(trained, workdir)
    status, out, err = run_cli(capsys, "train", "--workdir", workdir)
    assert status == 0, err
    (record,) = [r for r in azjax_records if "resuming" in r.getMessage()]
    assert record.name.startswith("azjax.training.") and record.levelno == logging.INFO
    assert f"resuming {workdir} from iteration 2" in out  # the command prints it still
    area = logging.getLogger("azjax.training")
    area.setLevel(logging.WARNING)
    try:
        argv = ["train", "--workdir", workdir, "--config.train.num_iterations=3"]
        status, out, err = run_cli(capsys, *argv)
    finally:
        area.setLevel(logging.NOTSET)
    assert status == 0, err
    assert "it    3" in out and "resuming" not in out and "done" not in out, out


class _FakePlan:
    def table(self) -> str:
        return "THE MEMORY PLAN"


def test_print_config_prints_the_config_without_compiling(capsys, tmp_path, monkeypatch):
    from azjax.apps.bench import memory

    def plan(*_, **__):
        raise AssertionError("--print-config planned memory")

    monkeypatch.setattr(memory, "plan", plan)
    workdir = tmp_path / "new"
    argv = ["train", "--config", "go_9x9:cpu", "--workdir", str(workdir), "--print-config"]
    status, out, err = run_cli(capsys, *argv, "--config.search.num_simulations=7")
    assert status == 0, err
    printed = json.loads(out)
    assert printed["game"] == "go_9x9" and printed["search"]["num_simulations"] == 7
    assert not workdir.exists()


def test_memory_plan_prints_the_config_and_its_plan_and_writes_nothing(
    capsys, trained, tmp_path, monkeypatch
):
    import jax

    from azjax.apps.bench import memory

    planned = []

    def plan(config, devices, **_):
        planned.append((config, devices))
        return _FakePlan()

    monkeypatch.setattr(memory, "plan", plan)
    workdir = tmp_path / "new"
    argv = ["train", "--config", "tic_tac_toe", "--workdir", str(workdir), "--memory-plan"]
    status, out, err = run_cli(capsys, *argv, "--config.search.num_simulations=7")
    assert status == 0, err
    text, _, table = out.partition("\n\n")
    printed = json.loads(text)
    assert printed["name"] == "tic_tac_toe" and printed["search"]["num_simulations"] == 7
    assert table.strip() == "THE MEMORY PLAN" and f"starts {workdir}" in err
    config, devices = planned[-1]
    assert config.search.num_simulations == 7 and devices == jax.device_count()
    assert not workdir.exists()
    # A run's own config, checked like a resume, and the run left as it was.
    before = sorted(p.name for p in trained.rglob("*"))
    status, out, err = run_cli(capsys, "train", "--workdir", str(trained), "--memory-plan")
    assert status == 0, err
    assert json.loads(out.partition("\n\n")[0])["name"] == "tiny_tic_tac_toe"
    assert f"resumes {trained}" in err and sorted(p.name for p in trained.rglob("*")) == before
    assert_user_error(
        capsys,
        ["train", "--workdir", str(trained), "--memory-plan", "--config.network.channels=16"],
        "network.channels: 8 -> 16",
    )
    assert_user_error(
        capsys,
        ["train", "--workdir", str(trained), "--memory-plan", "--devices", "3"],
        "selfplay.batch_size=8 must be divisible by 3 devices",
    )


def test_version_and_help_list_every_command(capsys):
    import azjax
    from azjax.apps.cli_args import parser

    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"azjax {azjax.__version__}\n"
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    assert done.value.code == 0
    help_text = capsys.readouterr().out
    subparsers = next(a for a in parser()._actions if a.dest == "command")
    assert set(subparsers.choices) >= {*cli.COMMANDS, "sweep", "ablation"}
    for command in subparsers.choices:
        assert f"\n    {command} " in help_text or f"\n    {command}\n" in help_text, command


def test_the_version_is_pyprojects(capsys):
    import tomllib
    from pathlib import Path

    import azjax

    root = Path(REPO)
    project = tomllib.loads((root / "pyproject.toml").read_text())
    # pyproject reads the version from the package: one number to change.
    assert "version" in project["project"]["dynamic"] and "version" not in project["project"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "azjax.__version__"}
    assert f"## [{azjax.__version__}]" in (root / "CHANGELOG.md").read_text()


def test_ablation_refuses_bad_input_in_one_line(capsys, tmp_path):
    workdir = tmp_path / "ablation"
    assert_user_error(
        capsys,
        ["ablation", "--workdir", str(workdir), "--variants", "baseline,nope"],
        "unknown variant 'nope'",
        "tree_reuse",
    )
    assert_user_error(
        capsys, ["ablation", "--workdir", str(workdir), "--minutes", "0"], "must be positive"
    )
    assert_user_error(
        capsys,
        ["ablation", "--workdir", str(workdir), "--config.search.num_simulation=8"],
        "unknown config key 'search.num_simulation'",
    )
    assert not workdir.exists()
    # `python -m azjax.apps.ablation` points at the command in one line.
    moved = subprocess.run(
        [sys.executable, "-m", "azjax.apps.ablation", "--workdir", str(workdir)],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        check=False,
    )
    assert moved.returncode == 2 and moved.stderr.count("\n") == 1
    assert "`azjax ablation ARGS`" in moved.stderr
    assert_user_error(
        capsys, ["evaluate", "--workdir", str(workdir), "--config.seed=1"], "`azjax ablation`"
    )


@pytest.mark.slow  # trains a variant for a few seconds and rates it
def test_ablation_trains_and_rates_each_variant(capsys, tmp_path):
    experiment = tmp_path / "tiny.py"
    tests_dir = TESTS
    experiment.write_text(
        f"import sys\nsys.path.insert(0, {tests_dir!r})\nfrom conftest import tiny_config\n"
        "def get_config():\n    return tiny_config()\n"
    )
    workdir = tmp_path / "ablation"
    argv = ["ablation", "--config", str(experiment), "--workdir", str(workdir), "--minutes"]
    argv += ["0.01", "--variants", "defaults", "--opponent", "random", "--games", "4"]
    status, out, err = run_cli(capsys, *argv, "--config.search.num_simulations=3")
    assert status == 0, err
    (row,) = [json.loads(line) for line in (workdir / "results.jsonl").read_text().splitlines()]
    assert row["variant"] == "defaults" and row["wins"] + row["draws"] + row["losses"] == 4
    assert "| defaults |" in out
    saved = json.loads((workdir / "defaults" / "config.json").read_text())
    assert saved["search"]["num_simulations"] == 3 and saved["train"]["max_minutes"] == 0.01


def test_the_parser_loads_no_jax():
    import subprocess
    import sys

    from conftest import subprocess_env

    script = (
        "import sys\n"
        "from azjax.apps.cli_args import parser\n"
        "for argv in (['--version'], ['--help'], ['train', '--help'], ['ablation', '--help']):\n"
        "    try:\n"
        "        parser().parse_args(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert 'jax' not in sys.modules, 'the parser loaded jax'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=subprocess_env()
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "platform, argv",
    [
        ("cuda", ["train", "--config", "tic_tac_toe", "--workdir", "RUN"]),
        ("tpu", ["train", "--config", "tic_tac_toe", "--workdir", "RUN"]),
        # Raised in a computation's dispatch, where jax leaves its frames out of the traceback.
        ("cuda", ["evaluate", "--agent", "tic_tac_toe", "--opponent", "random", "--games", "2"]),
        ("cuda", ["bench", "--game", "tic_tac_toe", "--quick"]),
    ],
    ids=["cuda-train", "tpu-train", "cuda-evaluate", "cuda-bench"],
)
def test_a_platform_jax_cannot_start_is_one_line(tmp_path, platform, argv):
    """`JAX_PLATFORMS` naming a platform this machine lacks: one line and status 2 (jax
    raised a bare AssertionError for cuda, in a traceback), nothing written."""
    run = tmp_path / "run"
    argv = [str(run) if a == "RUN" else a for a in argv]
    result = subprocess.run([sys.executable, "-m", "azjax.apps.cli", *argv], capture_output=True,
                            text=True, env=subprocess_env(JAX_PLATFORMS=platform))  # fmt: skip
    said = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(said) == 1, result.stderr
    assert said[0].startswith(f"azjax: error: JAX_PLATFORMS={platform}: jax cannot start"), said
    assert not run.exists()


LONG = "a" * 300  # a name over the 255 bytes file systems take


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "--config", "tic_tac_toe", "--workdir", f"TMP/{LONG}"],
        [
            "tournament",
            "--dir",
            f"TMP/{LONG}",
            "--game",
            "tic_tac_toe",
            "--players",
            "random",
            "mcts:2",
            "--games",
            "2",
        ],  # fmt: skip
        [
            "frontier",
            "--config",
            "tic_tac_toe",
            "--dir",
            f"TMP/{LONG}",
            "--sizes",
            "2x1",
            "--budget",
            "1e9",
        ],  # fmt: skip
        ["ablation", "--config", "tic_tac_toe", "--workdir", f"TMP/{LONG}"],
    ],
)
def test_a_name_too_long_for_the_file_system_is_one_line(capsys, tmp_path, argv):
    argv = [a.replace("TMP", str(tmp_path)) for a in argv]
    assert_user_error(capsys, argv, f"{tmp_path}/{LONG}", "a name in this path is longer")
