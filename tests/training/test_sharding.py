"""Training on 8 (simulated) devices: the same games as on one, each device its replay ring,
and a run's replay re-laid when it moves to another number of devices.

XLA_FLAGS must be set before jax starts, so the check runs in a child process with
`--xla_force_host_platform_device_count=8`; it builds the same run on a 1-device mesh and
on an 8-device mesh (self-play games and the replay's positions split over the `data` axis,
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
    from azjax.config import build
    from azjax.training import compiled
    from azjax.runs.state_layout import relayout

    assert jax.device_count() == 8, jax.devices()

    def rows(state):
        # The written positions as sortable rows: observation, policy, mover, value.
        b = jax.device_get(state.buffer)
        written = b.player >= 0
        flat = lambda x: np.asarray(x, np.float64).reshape(len(b.value), -1)[written]
        table = np.concatenate([flat(b.obs), flat(b.policy), flat(b.player),
                                np.nan_to_num(flat(b.value), nan=9.0)], axis=1)
        return table[np.lexsort(table.T[::-1])]

    def play(config, devices, iterations, state=None):
        run = compiled.compile_run(build.make_settings(config), compiled.make_mesh(devices))
        hyper = build.make_hyperparams(config)
        state = run.init(jax.random.PRNGKey(0)) if state is None else state
        for _ in range(iterations):
            state, metrics = compiled.iterate(run, state, hyper)
        return run, state

    # No learning (min_size = capacity), so both meshes play the very same games.
    config = tiny_config()
    config.replay.min_size = config.replay.capacity
    one_run, one = play(config, 1, 3)
    eight_run, eight = play(config, 8, 3)
    assert len(eight.selfplay.games.board.sharding.device_set) == 8
    assert len(eight.buffer.obs.sharding.device_set) == 8
    assert eight.buffer.obs.sharding.shard_shape(eight.buffer.obs.shape)[0] == 512 // 8
    np.testing.assert_array_equal(one.selfplay.games.board, eight.selfplay.games.board)
    # Ply p of slot g: index p * 8 + g in one ring; index g * 64 + p in eight rings of 64.
    for field in ("obs", "policy", "player", "value"):
        a = np.asarray(getattr(one.buffer, field)).reshape(64, 8, -1)
        b = np.asarray(getattr(eight.buffer, field)).reshape(8, 64, -1).swapaxes(0, 1)
        np.testing.assert_array_equal(a, b)
    assert int(one.buffer.size) > 0

    # Moved to the other device count, each run goes on exactly as the one that stayed.
    moved_down = relayout(jax.device_put(eight, one_run.shardings), one_run.shardings, 1)
    moved_up = relayout(jax.device_put(one, eight_run.shardings), eight_run.shardings, 8)
    assert int(moved_down.buffer.num_shards) == 1 and int(moved_up.buffer.num_shards) == 8
    np.testing.assert_array_equal(rows(moved_down), rows(one))
    np.testing.assert_array_equal(rows(moved_up), rows(eight))
    _, one = play(config, 1, 4, one)
    _, down = play(config, 1, 4, moved_down)
    _, eight = play(config, 8, 4, eight)
    _, up = play(config, 8, 4, moved_up)
    np.testing.assert_array_equal(rows(down), rows(one))
    np.testing.assert_array_equal(rows(up), rows(eight))
    np.testing.assert_array_equal(rows(up), rows(one))
    assert int(one.buffer.size) == int(down.buffer.size) == int(up.buffer.size) > 0

    # With learning: each device samples its share of every minibatch from its own ring.
    run, state = play(tiny_config(), 8, 3)
    assert int(state.train_state.step) > 0
    assert all(np.isfinite(x).all() for x in jax.tree.leaves(jax.device_get(state.train_state)))
    print("sharded run matches")
""")


@pytest.mark.slow
def test_eight_devices_play_as_one_and_relayout_moves_a_run():
    env = subprocess_env(XLA_FLAGS="--xla_force_host_platform_device_count=8")
    result = subprocess.run(
        [PYTHON, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    assert "sharded run matches" in result.stdout
