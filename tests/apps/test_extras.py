"""A command that needs an extra that is not installed stops with one line naming it (exit 2);
Python callers get a ModuleNotFoundError that names it too. (tests/test_install.py runs the
whole core install, built as a wheel, with every extra's packages hidden.)"""

import subprocess
import sys
import tomllib

import pytest
from conftest import REPO

from azjax import extras

# Runs the command line with `module` missing (None in sys.modules makes its import fail).
WITHOUT = (
    "import sys; sys.modules[{module!r}] = None; "
    "from azjax.apps import cli; sys.exit(cli.main({argv!r}))"
)


@pytest.mark.parametrize(
    "module, argv, extra",
    [
        ("optuna", ["sweep", "--workdir", "nowhere", "--report"], "sweep"),
        ("starlette", ["serve", "--agent", "tic_tac_toe"], "serve"),
        ("matplotlib", ["plot", "--workdir", "nowhere"], "plots"),
    ],
)
def test_a_command_names_the_missing_extra_in_one_line(tmp_path, module, argv, extra):
    assert_names_the_extra(tmp_path, module, argv, extra)


def assert_names_the_extra(folder, module, argv, extra):
    """`azjax ARGV` without `module` exits with status 2 and one line naming `extra`."""
    code = WITHOUT.format(module=module, argv=argv)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"azjax: error: azjax {argv[0]}: {module} is not installed: "
        f"pip install 'azjax[{extra}]' (the {extra} extra)"
    ]


@pytest.mark.parametrize("tracker", ["wandb", "mlflow"])
def test_a_run_refused_for_a_missing_tracker_leaves_no_workdir(tmp_path, tracker):
    """The trackers' extras are checked before the run's folder is made: no half-made run
    is left behind to resume or remove."""
    loggers = f"--config.train.loggers=('{tracker}',)"
    argv = ["train", "--config", "tic_tac_toe", "--workdir", "run", loggers]
    assert_names_the_extra(tmp_path, tracker, argv, tracker)
    assert not (tmp_path / "run").exists()


def test_python_callers_get_the_extra_named_and_other_errors_unchanged(monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'azjax\[sweep\]'") as caught:
        extras.require("optuna")
    assert caught.value.name == "optuna"
    cloud = ModuleNotFoundError("No module named 'google.cloud'", name="google.cloud.storage")
    assert extras.missing_extra(cloud).endswith("pip install 'azjax[gcs]' (the gcs extra)")
    # google.protobuf comes with the core (tensorboardX): no extra installs it.
    assert extras.missing_extra(ModuleNotFoundError(name="google.protobuf")) is None
    unknown = ModuleNotFoundError("No module named 'nothing_like_it'", name="nothing_like_it")
    assert extras.missing_extra(unknown) is None
    with pytest.raises(ModuleNotFoundError, match="No module named 'nothing_like_it'"):
        extras.require("nothing_like_it")


def test_every_extra_is_declared_in_the_project():
    """Each extra that `EXTRAS` names is one pyproject.toml declares."""
    with open(f"{REPO}/pyproject.toml", "rb") as file:
        declared = tomllib.load(file)["project"]["optional-dependencies"]
    assert set(extras.EXTRAS.values()) <= set(declared)
