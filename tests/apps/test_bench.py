"""Smoke test of `azjax bench --quick`: every row is there with a positive, finite rate.

No timing assertions: machines are shared and noisy.
"""

import argparse
import builtins
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax.apps.bench import harness
from azjax.apps.bench import pgx as bench_pgx
from azjax.games.base import random_legal_action
from azjax.types import UserError


@pytest.fixture(scope="module")
def quick_bench():
    """(rows, text) of the quick bench on tic-tac-toe at batch sizes 1 and 64."""
    args = argparse.Namespace(
        game="tic_tac_toe", config=None, batch_sizes="1,64,1024,4096", quick=True, env_only=False
    )
    return harness.run(args)


@pytest.mark.slow  # the quick bench's fixture: 33 s
def test_rows_cover_every_stage(quick_bench):
    rows, _ = quick_bench
    env_rows = [row for row in rows if row.name.startswith("env steps")]
    assert [row.batch_size for row in env_rows] == [1, 64]
    for prefix in (
        "search simulations (puct",
        "search simulations (pure MCTS",
        "self-play positions",
        "learner samples (adam, lax.scan",
        "learner samples (adam, unrolled",
    ):
        assert sum(row.name.startswith(prefix) for row in rows) == 1, prefix


@pytest.mark.slow  # the quick bench's fixture: 33 s
def test_rates_are_positive_and_finite(quick_bench):
    rows, _ = quick_bench
    for row in rows:
        assert math.isfinite(row.rate) and row.rate > 0, row
        assert row.batch_size > 0, row


@pytest.mark.slow  # the quick bench's fixture: 33 s
def test_env_rows_compare_with_pgx(quick_bench):
    rows, _ = quick_bench
    for row in rows:
        if not row.name.startswith("env steps"):
            assert row.pgx_rate is None and row.pgx_note == "", row
        elif row.pgx_rate is None:
            assert row.pgx_note == bench_pgx.PGX_MISSING, row
        else:
            assert math.isfinite(row.pgx_rate) and row.pgx_rate > 0, row
            assert math.isfinite(row.ratio) and row.ratio > 0, row


@pytest.mark.slow  # the quick bench's fixture: 33 s
def test_text_is_a_markdown_table(quick_bench):
    rows, text = quick_bench
    lines = text.splitlines()
    assert lines[0].startswith("azjax bench: tic_tac_toe") and "jax " in lines[0]
    table = [line for line in lines if line.startswith("|")]
    assert len(table) == 2 + len(rows)
    assert all(line.count("|") == 6 for line in table)


def test_parse_batch_sizes():
    assert harness.parse_batch_sizes("1,64,1024", quick=False) == [1, 64, 1024]
    assert harness.parse_batch_sizes("1,64,1024", quick=True) == [1, 64]
    assert harness.parse_batch_sizes("256", quick=True) == [256]
    for text in ("", "1,x", "0,4", "99999999999", f"1,{harness.MAX_BATCH + 1}"):
        with pytest.raises(UserError):
            harness.parse_batch_sizes(text, quick=False)


def test_pgx_missing_is_reported(monkeypatch):
    real_import = builtins.__import__

    def no_pgx(name, *args, **kwargs):
        if name == "pgx":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pgx)
    assert bench_pgx.pgx_environment("tic_tac_toe") == bench_pgx.PGX_MISSING
    assert bench_pgx.pgx_environment("not_a_pgx_game") == bench_pgx.NO_PGX_GAME


def test_env_only_with_legal_mask_rows():
    """Xiangqi has a `legal_action_mask` method: its masks per second get their own rows
    (one batch size: each compiles Xiangqi's move generation twice)."""
    args = argparse.Namespace(
        game="xiangqi", config=None, batch_sizes="4", quick=True, env_only=True
    )
    rows, _ = harness.run(args)
    assert [(row.name, row.batch_size) for row in rows] == [
        ("env steps (random play)", 4),
        ("legal-move masks", 4),
    ]
    assert all(math.isfinite(row.rate) and row.rate > 0 for row in rows)
    assert all(row.pgx_note == bench_pgx.NO_PGX_GAME for row in rows)


def test_random_legal_action_is_uniform_over_legal_actions():
    mask = jnp.array([[False, True, False, True, True], [False] * 5])
    keys = jax.random.split(jax.random.PRNGKey(0), 3000)
    actions = jax.vmap(random_legal_action, (0, None))(keys, mask)  # [3000, 2]
    counts = np.bincount(np.asarray(actions[:, 0]), minlength=5)
    assert counts[[0, 2]].sum() == 0 and (np.abs(counts[[1, 3, 4]] - 1000) < 120).all()
    assert (np.asarray(actions[:, 1]) == 0).all()  # nothing legal: action 0
