"""Runs count their compute: FLOPs against a count by hand, and the columns of a run's
records, cumulated across a resume."""

import json

import pytest
from conftest import tiny_config

from azjax import compile_cache
from azjax.apps.api import train
from azjax.config import build, pipeline_key
from azjax.runs import directory
from azjax.training import compute


def hand_count(game, *, channels, num_blocks, value_hidden, policy_channels=2) -> float:
    """FLOPs (2 per multiply-add) of the convolutions and dense layers of one evaluation of
    the ResNet (`core.networks`), counted from its layers. A 3x3 convolution padded to the
    board's size multiplies only the taps that fall on the board: (3H - 2)(3W - 2) of the
    9HW (the zero padding is not multiplied)."""
    height, width, planes = game.observation_shape
    points = height * width
    taps = (3 * height - 2) * (3 * width - 2)
    conv = 2 * taps * planes * channels  # stem, 3x3
    conv += num_blocks * 2 * (2 * taps * channels * channels)  # two 3x3 per block
    conv += 2 * points * channels * (policy_channels + 1)  # the heads' 1x1 convolutions
    dense = 2 * points * policy_channels * game.num_actions  # policy
    dense += 2 * points * value_hidden + 2 * value_hidden  # value: hidden, then one
    return conv + dense


def test_flops_match_a_count_by_hand():
    # Wide enough that convolutions dwarf the elementwise work (BatchNorm, ReLU, adds).
    config = tiny_config("connect_four")
    config.network.channels, config.network.num_blocks = 64, 2
    config.network.value_hidden = 32
    pipeline = build.make_pipeline(config)
    costs = compute.measure(pipeline)
    counted = hand_count(pipeline.game, channels=64, num_blocks=2, value_hidden=32)
    assert counted <= costs.forward_flops <= 1.03 * counted
    # An update: forward, backward (input and weight gradients: twice the forward, less the
    # stem's input gradient) and Adam, on the minibatch.
    per_sample = costs.update_flops / config.learner.batch_size
    assert 2.8 * counted <= per_sample <= 3.3 * counted
    # Self-play evaluates the root and each simulation in every slot at every ply.
    metrics = {}
    evaluations = compute.selfplay_evaluations(pipeline, metrics)
    assert evaluations == 8 * 4 * (1 + 4)
    capped = build.make_pipeline(_with(config, {"selfplay.full_search_fraction": 0.25}))
    cheap = capped.rules.playout_cap.cheap_search.num_simulations
    half = compute.selfplay_evaluations(capped, {"playout_cap/full_fraction": 0.5})
    assert half == 8 * (2 * (1 + 4) + 2 * (1 + cheap))


def test_a_command_keeps_the_costs_in_the_compile_cache(tmp_path, monkeypatch):
    """With the compile cache on, the costs measured for a config are kept beside the compiled
    programs and a later process reads them back instead of measuring; an entry it cannot
    read is measured again and rewritten. With the cache off, nothing is kept."""
    config = tiny_config()
    pipeline, key = build.make_pipeline(config), pipeline_key(config)
    measured, measure = [], compute._measure
    monkeypatch.setattr(compute, "_measure", lambda p: measured.append(1) or measure(p))
    monkeypatch.setattr(compute, "_COSTS", {})  # each call below: a new process
    monkeypatch.setattr(compile_cache, "folder", lambda: None)
    costs = compute.measure(pipeline, key)
    monkeypatch.setattr(compile_cache, "folder", lambda: tmp_path)
    compute._COSTS.clear()
    assert compute.measure(pipeline, key) == costs and len(measured) == 2
    (entry,) = tmp_path.iterdir()
    assert entry.name.startswith("azjax-costs-") and entry.name.endswith(".json")
    compute._COSTS.clear()
    assert compute.measure(pipeline, key) == costs and len(measured) == 2  # read back
    kept = entry.read_text()
    corrupt = [b"", b"{", b"[]", b"\xff\xfe", b'{"forward_flops": 1.0}']
    corrupt += [kept.replace('"parameters"', '"params"').encode()]
    corrupt += [b'{"forward_flops": "1", "update_flops": 1.0, "parameters": 3}']
    corrupt += [b'{"forward_flops": NaN, "update_flops": 1.0, "parameters": 3}']
    for text in corrupt:
        entry.write_bytes(text)
        compute._COSTS.clear()
        assert compute.measure(pipeline, key) == costs
        assert json.loads(entry.read_text()) == json.loads(kept), text
    assert len(measured) == 2 + len(corrupt)
    other = tiny_config()
    other.learner.batch_size = 32  # another config: another entry
    compute._COSTS.clear()
    compute.measure(build.make_pipeline(other), pipeline_key(other))
    assert len(list(tmp_path.iterdir())) == 2


def _with(config, overrides):
    config = config.copy_and_resolve_references()
    for key, value in overrides.items():
        group, name = key.split(".")
        config[group][name] = value
    return config


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A run of 4 iterations straight, and the same run stopped after 2 and resumed."""
    config = tiny_config()
    config.eval.every = 2
    config.selfplay.num_steps = 9  # games end within an iteration: evaluations reach them
    straight, resumed = (tmp_path_factory.mktemp(name) for name in ("straight", "resumed"))
    train(config, straight, quiet=True, progress="none")
    config.train.num_iterations = 2
    train(config, resumed, quiet=True, progress="none")
    config.train.num_iterations = 4
    train(config, resumed, quiet=True, progress="none")
    return config, directory.load_metrics(straight), directory.load_metrics(resumed)


def test_records_carry_compute_per_iteration_and_cumulated(runs):
    config, metrics, _ = runs
    pipeline = build.make_pipeline(config)
    costs = compute.measure(pipeline)
    per_iteration = 8 * 9 * (1 + 4)
    assert list(metrics["selfplay_evaluations"]) == [per_iteration] * 4
    assert list(metrics["total_selfplay_evaluations"]) == [per_iteration * i for i in (1, 2, 3, 4)]
    assert metrics["selfplay_flops"].iloc[0] == pytest.approx(per_iteration * costs.forward_flops)
    assert metrics["learn_flops"].iloc[0] == pytest.approx(2 * costs.update_flops)
    total = metrics["total_selfplay_flops"] + metrics["total_learn_flops"]
    assert list(metrics["total_train_flops"]) == pytest.approx(list(total))
    assert list(metrics["parameters"].unique()) == [costs.parameters]
    # Evaluations every 2 iterations: 4 games against random, 4 simulations per move.
    evaluated = list(metrics["eval_evaluations"])
    assert evaluated[0] == evaluated[2] == 0 and evaluated[1] > 0 and evaluated[3] > 0
    assert evaluated[1] % (2 * (1 + 4)) == 0  # a half of 2 games, 5 evaluations a move
    assert metrics["total_eval_evaluations"].iloc[-1] == sum(evaluated)
    assert list(metrics["total_eval_flops"]) == pytest.approx(
        [costs.forward_flops * sum(evaluated[: i + 1]) for i in range(4)]
    )
    # Positions, updates and samples from the run's own counters.
    assert list(metrics["total_positions"]) == [72, 144, 216, 288]
    assert list(metrics["total_learner_updates"]) == list(metrics["updates"].astype(int))
    assert list(metrics["total_samples"]) == list(16 * metrics["updates"].astype(int))
    assert metrics["learner_updates"].sum() == metrics["updates"].iloc[-1]


def test_a_resumed_run_counts_as_a_straight_one(runs):
    _, straight, resumed = runs
    columns = [c for c in straight.columns if c.startswith("total_") or c in compute.COUNTS]
    assert "total_train_flops" in columns
    assert straight[columns].equals(resumed[columns])


def test_plots_take_flops_and_positions_on_the_x_axis(runs, tmp_path):
    pytest.importorskip("matplotlib")
    from azjax.runs import plots

    _, metrics, _ = runs
    labels = {
        "flops": "training FLOPs (self-play and learning)",
        "positions": "self-play positions",
    }
    for x, label in labels.items():
        figure = plots.plot_run(metrics, tmp_path / f"{x}.png", x=x)
        assert figure.axes[0].get_xlabel() == label
        assert (tmp_path / f"{x}.png").stat().st_size > 0
    table = directory.evaluations(metrics)
    assert list(table["total_train_flops"]) == list(metrics["total_train_flops"].iloc[[1, 3]])
