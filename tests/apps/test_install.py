"""The wheel holds everything a command needs: built, installed into a fresh virtual
environment outside the repository, it trains a packaged experiment from another folder;
with the extras' packages hidden (a core install), training, evaluation and the zoo still
run, and a command that needs an extra names it in one line."""

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from conftest import REPO

import azjax
from azjax import extras
from azjax.matches import zoo

# A tiny run of the packaged tic_tac_toe experiment (tests/conftest.py's tiny_config).
TINY = {
    "network.channels": 8,
    "network.num_blocks": 1,
    "network.value_hidden": 8,
    "search.num_simulations": 4,
    "selfplay.batch_size": 8,
    "selfplay.num_steps": 4,
    "selfplay.temperature_moves": 2,
    "replay.capacity": 512,
    "replay.min_size": 16,
    "learner.batch_size": 16,
    "learner.updates_per_iteration": 2,
    "train.num_iterations": 2,
    "train.checkpoint_every": 2,
}


# A core install: the extras' packages hidden from the fresh environment (a .pth file runs
# this at start-up), as if `pip install azjax` had not installed them.
HIDE_EXTRAS = """
import importlib.abc, sys

HIDDEN = {hidden!r}

class HideExtras(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, HideExtras())
"""


def run(command, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, f"{command}:\n{result.stdout}\n{result.stderr}"
    return result


def build_wheel(folder: Path) -> Path:
    """The wheel of a copy of the repository's package files (the build leaves no `build/`
    in the checkout); offline with the environment's setuptools when it is new enough."""
    source = folder / "source"
    for package in ("azjax", "experiments"):
        shutil.copytree(
            Path(REPO) / package, source / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(Path(REPO) / name, source / name)
    try:
        setuptools = int(importlib.metadata.version("setuptools").split(".")[0])
    except importlib.metadata.PackageNotFoundError:
        setuptools = 0
    isolation = [] if setuptools < 77 else ["--no-build-isolation"]
    wheels = folder / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-w", wheels, source])
    (wheel,) = wheels.glob("azjax-*.whl")
    return wheel


def test_the_wheel_lists_every_folder_of_the_package():
    """pyproject.toml names the packages (experiments/ is mapped into azjax): every folder
    of azjax/ that holds modules is there, and nothing else."""
    setuptools = tomllib.loads((Path(REPO) / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {
        ".".join(p.parent.relative_to(REPO).parts) for p in Path(REPO, "azjax").rglob("*.py")
    }
    assert set(setuptools["packages"]) == folders | {"azjax.experiments"}
    assert setuptools["package-dir"] == {"azjax.experiments": "experiments"}


@pytest.mark.slow  # builds, installs and trains in a fresh environment
def test_the_wheel_installed_outside_the_repository_runs_every_command(tmp_path):
    wheel = build_wheel(tmp_path)
    assert wheel.name.startswith(f"azjax-{azjax.__version__}-py3-none-any")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        dist_info = f"azjax-{azjax.__version__}.dist-info"
        metadata = archive.read(f"{dist_info}/METADATA").decode()
    for name in (
        "azjax/experiments/connect_four.py",
        "azjax/experiments/othello.py",
        "azjax/apps/spaces/tic_tac_toe.py",
        "azjax/py.typed",
        "azjax/apps/serve/static/index.html",
        "azjax/matches/zoo/agents/tic_tac_toe/params.npz",
        "azjax/matches/zoo/agents/tic_tac_toe/card.json",
        f"{dist_info}/licenses/LICENSE",
    ):
        assert name in names, name
    assert not any(name.startswith(("experiments/", "sweeps/", "tests/")) for name in names)
    assert f"Version: {azjax.__version__}" in metadata
    assert "License-Expression: Apache-2.0" in metadata

    # A fresh environment; its dependencies are this one's (a .pth file), azjax the wheel's.
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv])
    python, command = venv / "bin" / "python", venv / "bin" / "azjax"
    purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    site = Path(purelib.stdout.strip())
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = [python, "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed"]
    run([*install, wheel])

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    found = run([python, "-c", "import azjax; print(azjax.__file__)"], cwd=elsewhere, env=env)
    assert Path(found.stdout.strip()).is_relative_to(site), found.stdout
    version = run([command, "--version"], cwd=elsewhere, env=env)
    assert version.stdout == f"azjax {azjax.__version__}\n"
    space = "from azjax.apps import sweeps; print(sweeps.load_space('tic_tac_toe').sampler)"
    assert run([python, "-c", space], cwd=elsewhere, env=env).stdout == "random\n"
    # The zoo's agents ship in the wheel and play from there.
    assert run([command, "zoo", "--names"], cwd=elsewhere, env=env).stdout.split() == zoo.names()
    played = [command, "evaluate", "--agent", "tic_tac_toe", "--opponent", "random", "--games", "2"]
    assert "zoo:tic_tac_toe (iteration" in run(played, cwd=elsewhere, env=env).stdout

    # The core install, the extras' packages hidden, trains the packaged experiment (a core
    # install needs no more than the full one to train, so this is the one training here).
    hidden = sorted(set(extras.EXTRAS) - {"google.cloud"})  # google.* holds core dependencies
    (site / "hide_extras.py").write_text(HIDE_EXTRAS.format(hidden=hidden))
    (site / "hide_extras.pth").write_text("import hide_extras\n")
    hidden_import = subprocess.run([python, "-c", "import optuna"], env=env, capture_output=True)
    assert hidden_import.returncode == 1 and b"ModuleNotFoundError" in hidden_import.stderr
    overrides = [f"--config.{key}={value}" for key, value in TINY.items()]
    trained = run(
        [command, "train", "--config", "tic_tac_toe", "--workdir", "core", *overrides]
        + ["--config.eval.every=1", "--config.eval.num_games=4"]
        # Two fixed opponents: the Elo anchors' calibration tournament runs without pandas.
        + ["--config.eval.opponents=('random', 'mcts:4')"],
        cwd=elsewhere,
        env=env,
    )
    assert "training tic_tac_toe" in trained.stdout, trained.stdout
    records = [json.loads(line) for line in (elsewhere / "core" / "metrics.jsonl").open()]
    assert [record["iteration"] for record in records] == [1, 2]
    assert json.loads((elsewhere / "core" / "config.json").read_text())["name"] == "tic_tac_toe"
    assert any("eval/random/score" in record for record in records), records[-1]
    assert any("eval/elo" in record for record in records), records[-1]
    assert (elsewhere / "core" / "eval_anchors" / "ratings.csv").is_file()
    assert not (elsewhere / "core" / "eval_anchors" / "ratings.png").exists()  # no matplotlib
    evaluate = [command, "evaluate", "--workdir", "core", "--opponent", "random", "--games", "2"]
    assert "score" in run(evaluate, cwd=elsewhere, env=env).stdout
    assert run([command, "zoo"], cwd=elsewhere, env=env).stdout.count("tic_tac_toe") >= 1
    needs = {
        ("sweep", "--workdir", "sweep", "--report"): "sweep",
        ("serve", "--agent", "tic_tac_toe"): "serve",
        ("plot", "--workdir", "core"): "plots",
    }
    for arguments, extra in needs.items():
        result = subprocess.run(
            [command, *arguments], cwd=elsewhere, env=env, capture_output=True, text=True
        )
        assert result.returncode == 2, (arguments, result.stderr)
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"azjax: error: azjax {arguments[0]}: "), line
        assert line.endswith(f"pip install 'azjax[{extra}]' (the {extra} extra)"), line
