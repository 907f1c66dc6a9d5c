"""End-to-end runs: exact resume (in process and after Ctrl-C), metrics, checkpoints, agents."""

import functools
import json
import signal
import subprocess

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import (
    PYTHON,
    assert_same_variables,
    subprocess_env,
    tiny_config,
    tiny_experiment,
)

from azjax.apps import api
from azjax.config import build
from azjax.core import learner, steps
from azjax.matches import agent as agent_lib
from azjax.runs.metrics import read_metrics
from azjax.training import compiled


def assert_same_state(a, b):
    a = a.replace(elapsed=0.0)
    b = b.replace(elapsed=0.0)
    jax.tree.map(lambda x, y: np.testing.assert_array_equal(np.asarray(x), np.asarray(y)), a, b)


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory):
    """Four iterations in one go (checkpoints at 2 and 4)."""
    workdir = tmp_path_factory.mktemp("straight")
    config = tiny_config()
    config.eval.every = 2
    state = api.train(config, workdir, quiet=True)
    return workdir, state


def test_run_writes_config_metrics_and_checkpoints(straight_run):
    workdir, state = straight_run
    assert int(state.iteration) == 4
    saved = json.loads((workdir / "config.json").read_text())
    assert saved["search"]["num_simulations"] == 4
    records = read_metrics(workdir)
    assert [r["iteration"] for r in records] == [1, 2, 3, 4]
    for key in (
        "loss",
        "value_loss",
        "policy_loss",
        "policy_entropy",
        "positions_per_second",
        "games_per_second",
        "average_game_length",
        "wall_time",
    ):
        assert all(np.isfinite(r[key]) for r in records), key
    assert "eval/random/win_rate" in records[1] and "eval/random/win_rate" not in records[0]
    assert sorted(p.name for p in (workdir / "checkpoints").iterdir() if p.name.isdigit()) == [
        "2",
        "4",
    ]


def test_stopped_and_resumed_run_equals_straight_run(straight_run, tmp_path):
    _, straight = straight_run
    config = tiny_config()
    config.eval.every = 2
    config.train.num_iterations = 2
    api.train(config, tmp_path, quiet=True)
    config.train.num_iterations = 4  # a bookkeeping key: resuming with it is allowed
    resumed = api.train(config, tmp_path, quiet=True)
    assert_same_state(straight, resumed)
    assert [r["iteration"] for r in read_metrics(tmp_path)] == [1, 2, 3, 4]


@pytest.mark.slow
def test_ctrl_c_saves_and_the_same_command_resumes(tmp_path):
    experiment = tiny_experiment(tmp_path, num_iterations=100000, checkpoint_every=100000)
    workdir = tmp_path / "run"
    command = [
        PYTHON,
        "-m",
        "azjax.apps.cli",
        "train",
        "--config",
        str(experiment),
        "--workdir",
        str(workdir),
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=subprocess_env()
    )
    for line in process.stdout:
        if line.startswith("it    3"):
            process.send_signal(signal.SIGINT)
            break
    output = process.communicate(timeout=120)[0]
    assert process.returncode == 130, output
    assert "interrupted: saved iteration" in output
    stopped = max(int(p.name) for p in (workdir / "checkpoints").iterdir() if p.name.isdigit())
    assert stopped >= 3
    assert [r["iteration"] for r in read_metrics(workdir)] == list(range(1, stopped + 1))
    # Resume two more iterations with the same command (plus a bookkeeping override).
    finish = subprocess.run(
        command + [f"--config.train.num_iterations={stopped + 2}"],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=300,
    )
    assert finish.returncode == 0, finish.stderr
    assert f"resuming {workdir} from iteration {stopped}" in finish.stdout
    assert [r["iteration"] for r in read_metrics(workdir)] == list(range(1, stopped + 3))
    # Same result as a run that never stopped.
    config = tiny_config()
    config.train.num_iterations = stopped + 2
    config.train.checkpoint_every = 100000
    straight = api.train(config, tmp_path / "straight", quiet=True)
    resumed = agent_lib.load_agent(workdir)
    assert_same_variables(straight.train_state.variables, resumed.variables)


def test_load_agent_gives_moves_policies_and_values(straight_run):
    workdir, state = straight_run
    agent = agent_lib.load_agent(workdir, num_simulations=8)
    assert agent.iteration == 4
    jax.tree.map(
        lambda x, y: np.testing.assert_array_equal(np.asarray(x), np.asarray(y)),
        state.train_state.variables,
        agent.variables,
    )
    states = jax.vmap(agent.game.init)(jax.random.split(jax.random.PRNGKey(0), 3))
    output = agent.act(states, jax.random.PRNGKey(1))
    assert output.action.shape == (3,) and output.action_weights.shape == (3, 9)
    np.testing.assert_allclose(output.action_weights.sum(-1), 1.0, rtol=1e-5)
    logits, value = agent.policy_value(states)
    assert logits.shape == (3, 9) and value.shape == (3,)


def test_gumbel_sgd_connect_four_iterations(tmp_path):
    """The other search and optimizer on the other game: two iterations run and learn."""
    config = tiny_config("connect_four")
    config.search.algorithm = "gumbel"
    config.learner.optimizer = "sgd"
    config.learner.learning_rate = 0.02
    config.learner.schedule = "piecewise"
    config.learner.boundaries = (2,)
    config.selfplay.num_steps = 16  # Connect Four games need a few iterations to end
    config.replay.capacity = 8 * (42 + 16)
    config.train.num_iterations = 3
    state = api.train(config, tmp_path, quiet=True)
    records = read_metrics(tmp_path)
    assert int(state.train_state.step) > 0
    assert records[-1]["learning_rate"] == pytest.approx(0.002)
    assert all(np.isfinite(r["loss"]) for r in records)


def test_a_learn_step_traces_the_update_once_for_its_chunk(monkeypatch):
    """Tracing an update is most of the time to trace a learn step: its chunk's updates
    share one trace (`jax.checkpoint`) instead of one each."""
    config = tiny_config()
    config.learner.updates_per_iteration = 4
    settings = build.make_settings(config)
    pipeline = settings.pipeline
    traced, update = [], learner.update
    monkeypatch.setattr(learner, "update", lambda *a, **k: traced.append(1) or update(*a, **k))
    state = jax.eval_shape(functools.partial(steps.init_state, pipeline), jax.random.PRNGKey(0))
    keys = jax.ShapeDtypeStruct((pipeline.chunk, 2), jnp.uint32)
    learn = functools.partial(steps.learn_step, pipeline)
    jax.eval_shape(learn, state, keys, settings.hyper)
    assert pipeline.chunk == 4 and len(traced) == 1


def test_the_learner_compiles_one_update_and_computes_a_learn_step():
    """The driver's learner (`compiled.Learner`) is `learn_step` with its parts compiled apart:
    one compiled update for the chunk's updates, and the results of the unrolled chunk (up to
    float rounding: XLA fuses the programs differently), the KL-adaptive rate included."""
    config = tiny_config()
    config.selfplay.num_steps = 16  # games end, and their positions fill the replay
    config.learner.updates_per_iteration = 4
    config.learner.kl_target = 0.02
    settings = build.make_settings(config)
    run = compiled.compile_run(settings)
    hyper = settings.hyper
    state, _, keys = run.play(run.init(jax.random.PRNGKey(0)), hyper)
    assert keys.shape[:2] == (1, 4)
    split, split_metrics = run.learn(state, keys[0], hyper)
    whole, whole_metrics = jax.jit(functools.partial(steps.learn_step, run.pipeline))(
        state, keys[0], hyper
    )
    assert run.learn.update._cache_size() == 1
    assert int(split.train_state.step) == int(state.train_state.step) + 4
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), split, whole)
    assert split_metrics.keys() == whole_metrics.keys() and "kl" in split_metrics
    for name, value in whole_metrics.items():
        np.testing.assert_allclose(split_metrics[name], value, rtol=1e-5, err_msg=name)
