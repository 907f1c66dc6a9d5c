"""`azjax train` keeps its compiled programs in the user's cache folder and reads them back
when the config runs again; the flag and the environment variable turn that off."""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest
from conftest import subprocess_env, tiny_experiment

from azjax import compile_cache


def _train(tmp_path, workdir, *flags, **env):
    experiment = tiny_experiment(tmp_path, num_iterations=1, checkpoint_every=1)
    environment = subprocess_env(XDG_CACHE_HOME=str(tmp_path / "cache"), **env)
    environment.pop("JAX_COMPILATION_CACHE_DIR")  # the tests' own cache: not this one
    command = [sys.executable, "-m", "azjax.apps.cli", "train", "--config", str(experiment)]
    command += ["--workdir", str(tmp_path / workdir), *flags]
    done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


def _entries(tmp_path) -> set[str]:
    folder = tmp_path / "cache" / "azjax" / "jax"
    return set(os.listdir(folder)) if folder.is_dir() else set()


def test_programs_are_kept_and_read_back(tmp_path):
    _train(tmp_path, "first")
    kept = _entries(tmp_path)
    # The learner's update (its draw and its end compile in less than MIN_COMPILE_SECONDS).
    assert any(name.startswith("jit_learn_update") for name in kept), kept
    assert any(name.startswith("jit_play_step") for name in kept), kept
    assert any(name.startswith("azjax-costs-") for name in kept), kept  # `compute.measure`'s
    _train(tmp_path, "second")  # the same programs: read back, none added
    assert _entries(tmp_path) == kept


def test_the_flag_turns_it_off(tmp_path):
    _train(tmp_path, "flag", "--no-compile-cache")
    assert _entries(tmp_path) == set()


@pytest.mark.parametrize("value", compile_cache.OFF_VALUES + ("OFF",))
def test_the_environment_turns_it_off(monkeypatch, value):
    """`AZJAX_COMPILATION_CACHE=0` (or off, false, no) takes the path of the flag above:
    `enable` turns jax's cache off and keeps no folder."""
    monkeypatch.setenv("AZJAX_COMPILATION_CACHE", value)
    was = jax.config.jax_enable_compilation_cache
    try:
        assert compile_cache.enable(True) is None
        assert not jax.config.jax_enable_compilation_cache
        assert compile_cache.folder() is None
    finally:
        jax.config.update("jax_enable_compilation_cache", was)


@pytest.mark.deep  # CI: test_the_flag_turns_it_off and test_the_environment_turns_it_off
def test_the_environment_turns_it_off_for_a_run(tmp_path):
    _train(tmp_path, "environment", AZJAX_COMPILATION_CACHE="0")
    assert _entries(tmp_path) == set()


def test_release_drops_compiled_programs_and_their_memory_mappings():
    """`compile_cache.release` frees the machine code of every compiled program (about ten
    memory mappings each on a CPU); with `above`, only once the process holds that share of
    the mappings Linux allows. A released function compiles again and gives the same result."""
    used = compile_cache.mappings_in_use()
    if used is None:
        pytest.skip("no /proc/self/maps here: the mappings cannot be counted")
    functions = [jax.jit(lambda x, i=i: jnp.cumsum(x * i) @ x) for i in range(40)]
    before = [f(jnp.arange(8.0)) for f in functions]
    held = compile_cache.mappings_in_use()
    assert held > used
    assert not compile_cache.release(above=held + 0.01)  # below the threshold: kept
    assert compile_cache.mappings_in_use() >= held - 1e-4
    assert compile_cache.release()
    limit = int(open("/proc/sys/vm/max_map_count").read())
    assert (held - compile_cache.mappings_in_use()) * limit > 40  # freed: several per program
    assert all(bool(f(jnp.arange(8.0)) == b) for f, b in zip(functions, before, strict=True))
