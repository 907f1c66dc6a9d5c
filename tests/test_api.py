"""The front door: every name `azjax` exports resolves, and experiment variants load."""

import subprocess
import sys

import pytest
from conftest import subprocess_env

import azjax
from azjax import config as config_lib
from azjax import errors, types
from azjax.types import UserError


@pytest.mark.parametrize("name", azjax.__all__)
def test_every_exported_name_resolves(name):
    assert getattr(azjax, name) is not None


def test_the_api_is_exactly_all():
    """`azjax` resolves the names of `__all__` and no other: in a fresh process, a wing or any
    other name is no attribute until it is imported by name, and `azjax.UserError` loads no
    jax."""
    script = (
        "import sys\n"
        "import azjax\n"
        "for name in ('games', 'core', 'training', 'types', 'errors', 'nope', 'jax'):\n"
        "    assert not hasattr(azjax, name), name\n"
        "assert azjax.UserError.exit_code == 2 and 'jax' not in sys.modules\n"
        "import azjax.games\n"
        "assert azjax.games.make('tic_tac_toe').name == 'tic_tac_toe'\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=subprocess_env())  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert sorted(dir(azjax)) == sorted(azjax.__all__)
    with pytest.raises(AttributeError, match="no attribute 'stats'"):
        azjax.__getattr__("stats")


def test_split_variant():
    assert config_lib.split_variant("experiments/othello.py:cpu6") == (
        "experiments/othello.py",
        "cpu6",
    )
    assert config_lib.split_variant("othello:cpu") == ("othello", "cpu")
    assert config_lib.split_variant("gs://bucket/exp.py") == ("gs://bucket/exp.py", None)
    assert config_lib.split_variant("experiments/othello.py") == ("experiments/othello.py", None)


def test_experiment_variants_load_and_differ():
    base = config_lib.load_config("othello")
    small = config_lib.load_config("experiments/othello.py:cpu6")
    assert base.game == "othello" and small.game == "othello_6x6"
    assert small.network.channels < base.network.channels
    with pytest.raises(UserError, match="variants"):
        config_lib.load_config("othello:nope")
    with pytest.raises(UserError, match="no variants"):
        config_lib.load_config("tic_tac_toe:cpu")


def test_the_errors_load_no_jax():
    """A program or a parser can catch azjax's errors without importing the numerical stack;
    `azjax.types` holds the same classes."""
    script = (
        "import sys\n"
        "from azjax.errors import RunError, StorageLost, UserError\n"
        "assert issubclass(StorageLost, RunError) and issubclass(RunError, UserError)\n"
        "assert 'jax' not in sys.modules, 'jax loaded'\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=subprocess_env())  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert types.UserError is errors.UserError and types.StorageLost is errors.StorageLost
