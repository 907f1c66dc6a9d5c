"""Training on 8 (simulated) devices matches training on one.

XLA_FLAGS must be set before jax starts, so the check runs in a child process with
`--xla_force_host_platform_device_count=8`; it builds the same run on a 1-device mesh and
on an 8-device mesh (self-play games and learner batches split over the `data` axis,
parameters replicated) and compares the results.
"""

import subprocess
import textwrap

import pytest
from conftest import PYTHON, REPO, subprocess_env

SCRIPT = textwrap.dedent(f"""
    import sys
    sys.path.insert(0, {REPO + "/tests"!r})
    import jax
    import numpy as np
    from conftest import tiny_config
    from azjax import build, train

    assert jax.device_count() == 8, jax.devices()
    config = tiny_config()
    results = {{}}
    for devices in (1, 8):
        run = train.compile_run(config, train.make_mesh(devices))
        hyper = build.make_hyperparams(config)
        state = run.init(jax.random.PRNGKey(0))
        for _ in range(3):
            state, metrics = train.iterate(run, state, hyper)
        sharding = state.selfplay.games.board.sharding
        assert len(sharding.device_set) == devices, sharding
        assert len(state.train_state.variables.params["stem"]["conv"]["kernel"]
                   .sharding.device_set) == devices
        results[devices] = jax.device_get(state)
    one, eight = results[1], results[8]
    # Self-play and replay are integer-exact; learning matches up to float reduction order.
    np.testing.assert_array_equal(one.buffer.obs, eight.buffer.obs)
    np.testing.assert_array_equal(one.buffer.value, eight.buffer.value)
    np.testing.assert_array_equal(one.selfplay.games.board, eight.selfplay.games.board)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5),
                 one.train_state.variables, eight.train_state.variables)
    assert int(one.train_state.step) == int(eight.train_state.step) > 0
    print("sharded run matches")
""")


@pytest.mark.slow
def test_eight_devices_match_one():
    env = subprocess_env(XLA_FLAGS="--xla_force_host_platform_device_count=8")
    result = subprocess.run(
        [PYTHON, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    assert "sharded run matches" in result.stdout
