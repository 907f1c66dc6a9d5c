"""The shared test helpers of conftest.py."""

import os
import sys

import pytest
from conftest import require_program, slow_first

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


class _Item:
    def __init__(self, name, slow, path="test_a.py"):
        self.name, self.slow, self.path = name, slow, path

    def get_closest_marker(self, name):
        return name == "slow" and self.slow or None


def _shares(items, workers):
    """How pytest-xdist's worksteal scheduler first splits a collection: each worker in turn
    an equal part of what is left, contiguous."""
    shares, left = [], list(items)
    for k in range(workers):
        size = len(left) // (workers - k)
        shares.append(left[:size])
        left = left[size:]
    return shares


@pytest.mark.parametrize("workers", [2, 3])
def test_slow_first_puts_the_slow_tests_at_the_head_of_each_workers_share(workers):
    # Modules of 1 to 5 slow tests among quick ones (i // 10: the module of item i).
    items = [_Item(f"t{i}", slow=i % 10 < i // 10 % 5 + 1, path=f"m{i // 10}") for i in range(90)]
    ordered = slow_first(items, workers)
    assert sorted(item.name for item in ordered) == sorted(item.name for item in items)
    slow = [item for item in items if item.slow]
    counts = []
    for share in _shares(ordered, workers):
        heads = [item for item in share if item.slow]
        assert share[: len(heads)] == heads
        for module in {item.path for item in heads}:  # every slow test of its module, in order
            assert [item for item in heads if item.path == module] == [
                item for item in slow if item.path == module
            ]
        rest = [item.name for item in share[len(heads) :]]
        assert rest == sorted(rest, key=lambda name: int(name[1:]))  # the rest as collected
        counts.append(len(heads))
    assert max(counts) - min(counts) <= 5  # balanced to within the largest module


def test_slow_first_keeps_the_order_without_workers_or_without_a_mix():
    mixed = [_Item("a", False), _Item("b", True)]
    assert slow_first(mixed, 1) == mixed
    only_slow = [_Item("a", True), _Item("b", True)]
    assert slow_first(only_slow, 2) == only_slow


def test_slow_first_keeps_every_item_when_most_are_slow():
    items = [_Item(f"t{i}", slow=i < 10, path=f"m{i}") for i in range(12)]
    ordered = slow_first(items, 2)
    assert sorted(item.name for item in ordered) == sorted(item.name for item in items)
    # Each share of 6 starts with its 5 slow tests; the rest fill what is left of it.
    assert [item.slow for item in ordered] == ([True] * 5 + [False]) * 2
