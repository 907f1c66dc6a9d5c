"""The memory plan (`azjax bench --memory`, `azjax.apps.bench.memory`) on a tiny config.

The plan compiles 8 programs of the tiny config once: the command in a fresh process that
asks jax for 2 CPU devices and compiles the sharded programs (module fixture, under a
minute), keeping the plan it printed for the tests of the plan. The other command line tests
reuse that plan, so they check the command's plumbing and output, not XLA again.
"""

import dataclasses
import pickle
import subprocess
import sys

import jax
import numpy as np
import pytest
from conftest import subprocess_env, tiny_config, tiny_experiment

from azjax.apps import cli
from azjax.apps.bench import memory, memory_model
from azjax.config import build
from azjax.core import steps

# The tests of the `command` fixture (`azjax bench --memory`, eight programs to compile)
# run in the slow set (docs/testing.md).
SLOW = pytest.mark.slow

DEVICES = 2
# The linear model's error at the held-out compile (b3 = 2 x b2): the temporaries of the
# search and the learner within 15%, the whole peak (arguments and outputs exact) within 5%.
TEMP_TOLERANCE = 0.15
PEAK_TOLERANCE = 0.05


def _nbytes(tree) -> int:
    return sum(np.asarray(leaf).nbytes for leaf in jax.tree.leaves(tree))


@pytest.fixture(autouse=True)
def jax_started():
    """jax's backends are up, so that the command cannot ask for more CPU devices in this
    process (`memory.use_cpu_devices`) and change the devices of the tests after it."""
    jax.devices()


# The command, with `memory.plan` wrapped to keep what it returns (argv: the pickle's path,
# then the command's arguments).
KEEP_THE_PLAN = """
import pickle, sys
from azjax.apps import cli
from azjax.apps.bench import memory
plans, plan = [], memory.plan
memory.plan = lambda *args, **kwargs: plans.append(plan(*args, **kwargs)) or plans[-1]
code = cli.main(sys.argv[2:])
with open(sys.argv[1], "wb") as file:
    pickle.dump(plans, file)
sys.exit(code)
"""


@pytest.fixture(scope="module")
def command(tmp_path_factory):
    """`azjax bench --memory --devices 2` of the tiny experiment in a fresh process: the
    finished process and the one plan it made."""
    folder = tmp_path_factory.mktemp("memory_plan")
    experiment = tiny_experiment(folder, num_iterations=1, checkpoint_every=1)
    argv = ["bench", "--memory", "--config", str(experiment), "--devices", str(DEVICES)]
    result = subprocess.run(
        [sys.executable, "-c", KEEP_THE_PLAN, str(folder / "plan.pkl"), *argv],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    [plan] = pickle.loads((folder / "plan.pkl").read_bytes())
    return result, plan


@pytest.fixture(scope="module")
def tiny_plan(command):
    return command[1]


@SLOW
def test_bytes_match_a_real_state(tiny_plan):
    config = tiny_config()
    state = steps.init_state(build.make_pipeline(config), jax.random.PRNGKey(0))
    assert tiny_plan.bytes_per_position == _nbytes(state.buffer) / config.replay.capacity
    assert tiny_plan.bytes_per_slot == _nbytes(state.selfplay) / config.selfplay.batch_size
    assert tiny_plan.parameter_bytes == _nbytes(state.train_state.variables)
    total = tiny_plan.parameter_bytes + tiny_plan.optimizer_bytes
    assert total == _nbytes(state.train_state)
    assert sum(part.total for part in tiny_plan.parts) == _nbytes(state)
    # Self-play games are split over the devices.
    assert tiny_plan.game_share == pytest.approx(1 / DEVICES)


@pytest.mark.deep  # CI: test_bytes_match_a_real_state
@SLOW
def test_fit_predicts_the_held_out_compile(tiny_plan):
    for name, model in tiny_plan.models.items():
        fitted_games = {program.games for program in model.fitted}
        assert model.check.games not in fitted_games, name
        assert abs(model.error("temp")) <= TEMP_TOLERANCE, (name, model.error("temp"))
        assert abs(model.error("peak")) <= PEAK_TOLERANCE, (name, model.error("peak"))
        for program in model.fitted:  # the model passes through its own points
            predicted = model.predict(program.games, program.positions)
            assert predicted.peak == pytest.approx(program.peak, rel=1e-9, abs=1e-6)


def test_linear_model_is_exact_on_linear_data():
    def program(games, positions):
        values = {
            q: 100.0 + 7 * i * games + 3 * positions for i, q in enumerate(memory_model.QUANTITIES)
        }
        return memory_model.ProgramMemory("p", games, positions, **values)

    model = memory_model.LinearModel.solve(
        "p", [program(1, 10), program(2, 10), program(2, 20)], program(4, 10)
    )
    assert model.error("temp") == pytest.approx(0.0, abs=1e-12)
    assert model.predict(64, 1000).peak == pytest.approx(program(64, 1000).peak)


@SLOW
def test_fits_are_the_largest_that_fit(tiny_plan):
    step = round(1 / tiny_plan.game_share)
    assert [fit.memory for fit in tiny_plan.fits] == list(memory_model.MEMORY_SIZES)
    for fit in tiny_plan.fits:
        assert fit.batch > 0 and fit.capacity > 0
        assert max(tiny_plan.required(batch=fit.batch).values()) <= fit.usable
        assert max(tiny_plan.required(batch=fit.batch + step).values()) > fit.usable
        assert max(tiny_plan.required(capacity=fit.capacity).values()) <= fit.usable
        assert fit.batch_refused == (fit.batch > tiny_plan.max_batch_by_rule)
    batches = [fit.batch for fit in tiny_plan.fits]
    assert batches == sorted(batches)
    # The largest batch and the smallest capacity that make_pipeline accepts.
    config = tiny_config()
    rule_batch, rule_capacity = tiny_plan.max_batch_by_rule, tiny_plan.min_capacity_by_rule
    assert memory._accepted(config, batch=rule_batch, capacity=512)
    assert not memory._accepted(config, batch=rule_batch + step, capacity=512)
    assert memory._accepted(config, batch=8, capacity=rule_capacity)
    assert not memory._accepted(config, batch=8, capacity=rule_capacity - 1)


@SLOW
def test_table_has_every_section(tiny_plan):
    text = tiny_plan.table()
    assert text.startswith("azjax bench --memory: tiny_tic_tac_toe")
    for needle in ("bytes per stored position", "| play_step |", "| learn_step |", "held out"):
        assert needle in text, needle
    rows = [line for line in text.splitlines() if line.startswith("| 16 GiB")]
    assert len(rows) == 1 and rows[0].count("|") == 5
    assert "estimates what the GPU/TPU compilers" in text


@pytest.fixture
def fake_plan(monkeypatch, tiny_plan):
    """`memory.plan` returning the module's plan, recording what it was asked."""
    calls = []

    def plan(config, num_devices, **kwargs):
        calls.append((config, num_devices))
        return dataclasses.replace(tiny_plan, name=config.name, num_devices=num_devices)

    monkeypatch.setattr(memory, "plan", plan)
    return calls


@SLOW
def test_cli_prints_the_plan(tmp_path, capsys, fake_plan):
    experiment = tiny_experiment(tmp_path, num_iterations=1, checkpoint_every=1)
    argv = ["bench", "--memory", "--config", str(experiment), "--devices", "2"]
    assert cli.main([*argv, "--config.selfplay.batch_size=16"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("azjax bench --memory: tiny_tic_tac_toe")
    assert "| 80 GiB |" in out
    [(config, devices)] = fake_plan
    assert devices == 2 and config.selfplay.batch_size == 16


@SLOW
def test_cli_plans_every_experiment(capsys, fake_plan):
    assert cli.main(["bench", "--memory", "--all", "--devices", "4"]) == 0
    out = capsys.readouterr().out
    names = memory.experiment_names()
    assert {"go_19x19", "xiangqi", "tic_tac_toe"} <= set(names)
    assert [config.name for config, _ in fake_plan] == names
    assert out.count("azjax bench --memory:") == len(names)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--config", "no_such_experiment"], "not found"),
        (["--config", "tic_tac_toe", "--devices", "0"], "--devices"),
        (["--config", "tic_tac_toe", "--devices", "x"], "--devices"),
        (["--config", "tic_tac_toe", "--devices", "3"], "divisible by 3 devices"),
        (["--config", "tic_tac_toe", "--all"], "--all"),
        (["--config", "tic_tac_toe", "--config.replay.capacityy=5"], "unknown config key"),
    ],
)
def test_cli_bad_input_is_one_line(argv, message, capsys):
    assert cli.main(["bench", "--memory", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("azjax: error:") and message in lines[0]


def test_overrides_need_memory(capsys):
    assert cli.main(["bench", "--config.seed=1"]) == 2
    assert "bench --memory" in capsys.readouterr().err


@SLOW
def test_cli_compiles_on_forced_cpu_devices(command):
    """The command in a fresh process asks jax for 2 CPU devices and compiles the sharded
    programs; what it prints is its plan's table."""
    result, plan = command
    assert plan.num_devices == DEVICES and plan.name == "tiny_tic_tac_toe"
    assert "the sharded programs on 2 cpu devices" in result.stdout
    assert "| 16 GiB |" in result.stdout
    assert plan.table() in result.stdout
