"""Compiled steps kept whole across processes (`training.kept`): read back without tracing,
the same results; a damaged file compiled again; other arguments, the jitted function."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import compile_cache
from azjax.training import kept as kept_lib


def _step(x, scale):
    return jnp.tanh(x @ x.T) * scale, jnp.sum(x)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(compile_cache, "folder", lambda: tmp_path)
    return tmp_path


def _kept(name="step"):
    return kept_lib.Kept(jax.jit(_step), name, "a pipeline key", mesh=None)


def _same(a, b):
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    return all(np.array_equal(x, y) for x, y in zip(leaves_a, leaves_b, strict=True))


def test_a_program_is_kept_and_read_back_without_tracing(cache, monkeypatch):
    x, scale = jnp.arange(12.0).reshape(3, 4) / 10, np.float32(2.0)
    first = _kept()
    expected = first(x, scale)
    assert _same(expected, jax.jit(_step)(x, scale))
    (entry,) = cache.glob("azjax-program-*.bin")
    _kept()(jnp.ones((2, 4)), scale)  # other shapes: a program of their own
    assert len(list(cache.glob("azjax-program-*.bin"))) == 2
    again = _kept()  # another process's: nothing traced or lowered
    monkeypatch.setattr(again.jitted, "lower", None, raising=False)
    traced = []
    monkeypatch.setattr(kept_lib, "_fresh", lambda lowered: traced.append(1))
    assert _same(again(x, scale), expected) and not traced
    assert _same(again(x * 2, scale), jax.jit(_step)(x * 2, scale))  # the kept program
    assert len(list(cache.glob("azjax-program-*.bin"))) == 2 and entry.exists()


def test_a_damaged_file_is_compiled_again_and_rewritten(cache):
    x, scale = jnp.ones((3, 4)), np.float32(1.0)
    expected = _kept()(x, scale)
    (entry,) = cache.glob("azjax-program-*.bin")
    good = entry.read_bytes()
    for damaged in (b"", b"not zlib", good[: len(good) // 2]):
        entry.write_bytes(damaged)
        assert _same(_kept()(x, scale), expected)
        assert entry.read_bytes() != damaged and len(entry.read_bytes()) > 1000


def test_other_arguments_and_tracers_go_to_the_jitted_function(cache):
    step = _kept()
    x = jnp.ones((3, 4))
    step(x, np.float32(1.0))
    assert step.compiled
    other = jnp.ones((2, 4))  # not the kept program's shapes: the jitted function from now
    out = step(other, np.float32(1.0))
    assert step.compiled is False and _same(out, jax.jit(_step)(other, np.float32(1.0)))
    shapes = jax.eval_shape(_kept("traced"), x, np.float32(1.0))  # a tracer: jitted
    assert shapes[0].shape == (3, 3)
    assert not list(cache.glob("azjax-program-*.bin"))[1:]  # eval_shape kept nothing


def test_without_the_compile_cache_nothing_is_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(compile_cache, "folder", lambda: None)
    step = _kept()
    step(jnp.ones((3, 4)), np.float32(1.0))
    assert step.compiled is False and not list(tmp_path.iterdir())


def test_release_drops_every_kept_program(cache):
    """After `compile_cache.release`, the next call of any kept step drops them all (their
    machine code's memory mappings), and each is read back at its own next call."""
    step, other = _kept(), _kept("other")
    x = jnp.ones((3, 4))
    step(x, np.float32(1.0))
    other(x, np.float32(1.0))
    held = step.compiled
    compile_cache.release()
    step(x, np.float32(1.0))
    assert step.compiled and step.compiled is not held  # read back again
    assert other.compiled is None  # dropped, though not called since
