"""The shared test helpers of conftest.py."""

import os
import sys

import pytest
from conftest import require_program

MISSING = "azjax-no-such-program"


def test_require_program_finds_a_program_on_path_or_in_paths(monkeypatch):
    monkeypatch.delenv("AZJAX_REQUIRE_EXTERNAL", raising=False)
    path = os.path.realpath(sys.executable)
    directory, name = os.path.split(path)
    monkeypatch.setenv("PATH", "")
    assert require_program(name, install="-", paths=("/nonexistent", directory)) == path
    monkeypatch.setenv("PATH", directory)
    assert require_program(name, install="-") == path


def test_require_program_skips_without_the_program(monkeypatch):
    monkeypatch.delenv("AZJAX_REQUIRE_EXTERNAL", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_program(MISSING, install="apt-get install it", paths=("/usr/games",))
    assert str(skipped.value) == (
        f"{MISSING} is not installed (install it with: apt-get install it)"
    )


def test_require_program_fails_without_the_program_where_ci_requires_it(monkeypatch):
    monkeypatch.setenv("AZJAX_REQUIRE_EXTERNAL", "1")
    with pytest.raises(pytest.fail.Exception) as failed:
        require_program(MISSING, install="apt-get install it")
    assert str(failed.value) == (
        f"{MISSING} is not installed (install it with: apt-get install it); "
        "AZJAX_REQUIRE_EXTERNAL=1 requires it"
    )
