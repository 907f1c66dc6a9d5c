"""Populations (azjax/training/population.py) and population-based training
(azjax/training/pbt.py)."""

import dataclasses
import math

import jax
import numpy as np
import pytest
from conftest import tiny_config

from azjax.apps import api
from azjax.config import build
from azjax.matches.agent import load_agent
from azjax.runs import directory as runs
from azjax.runs.checkpoint import Checkpointer
from azjax.runs.state_layout import split_state
from azjax.training import compiled, pbt
from azjax.training.members import Member
from azjax.types import UserError

LEARNING_RATES = (1e-3, 3e-3)


def member_config(index: int, *, iterations: int = 4, eval_every: int = 2):
    config = tiny_config()
    config.name, config.seed = f"member{index}", index
    config.learner.learning_rate = LEARNING_RATES[index % 2]
    config.search.dirichlet_alpha = 0.3 * (index + 1)
    config.train.num_iterations = iterations
    config.eval.every = eval_every
    return config


@pytest.fixture(scope="module")
def population_and_separate_runs(tmp_path_factory):
    """Two members trained as one population, member 0 stopped at iteration 2 by the
    callback and resumed to the end by a second call, and each member trained alone."""
    root = tmp_path_factory.mktemp("population")
    configs = [member_config(0), member_config(1)]
    members = [root / "member0", root / "member1"]
    seen = []

    def stop_member0_at_2(index, record):
        seen.append((index, record["iteration"]))
        return index == 0 and record["iteration"] == 2

    api.train_population(configs, members, quiet=True, callback=stop_member0_at_2)
    after_first_call = [runs.load_metrics(m) for m in members]
    api.train_population(configs, members, quiet=True)
    for index, config in enumerate(configs):
        api.train(config, root / f"alone{index}", quiet=True)
    return root, seen, after_first_call


@pytest.mark.slow  # trains a population twice and its members alone
def test_a_population_trains_as_its_members_would_alone(population_and_separate_runs):
    # vmap turns the members' convolutions into batched ones, which XLA may sum in another
    # order: equal to float32 rounding, not promised bit for bit (on this CPU they were equal
    # but for the last printed digit of a loss).
    root, _, _ = population_and_separate_runs
    for index in range(2):
        together = runs.load_metrics(root / f"member{index}")
        alone = runs.load_metrics(root / f"alone{index}")
        assert together["iteration"].tolist() == [1, 2, 3, 4]
        for column in ("games", "total_positions", "buffer_size", "eval/random/score"):
            np.testing.assert_array_equal(together[column], alone[column], err_msg=column)
        for column in ("loss", "value_loss", "policy_loss", "root_value"):
            np.testing.assert_allclose(together[column], alone[column], rtol=1e-4, atol=1e-5)
        assert (together["hyper/learner.learning_rate"] == LEARNING_RATES[index]).all()
        a = load_agent(root / f"member{index}")  # a member loads as an ordinary agent
        b = load_agent(root / f"alone{index}")
        for x, y in zip(jax.tree.leaves(a.variables), jax.tree.leaves(b.variables), strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)


@pytest.mark.deep  # CI: the population's other tests
@pytest.mark.slow  # trains a population twice and its members alone
def test_a_stopped_member_is_frozen_and_resumes_alone(population_and_separate_runs):
    root, seen, after_first_call = population_and_separate_runs
    assert seen == [(0, 1), (1, 1), (0, 2), (1, 2), (1, 3), (1, 4)]
    assert after_first_call[0]["iteration"].tolist() == [1, 2]
    assert after_first_call[1]["iteration"].tolist() == [1, 2, 3, 4]
    assert Checkpointer(root / "member0").all_steps()[-1] == 4
    # Member 1, finished, was not stepped again by the second call.
    np.testing.assert_array_equal(
        runs.load_metrics(root / "member1")["loss"], after_first_call[1]["loss"]
    )


def test_members_must_share_their_shapes(tmp_path):
    other = member_config(1)
    other.network.channels = 16
    with pytest.raises(UserError, match="shape-changing"):
        api.train_population(
            [member_config(0), other], [tmp_path / "a", tmp_path / "b"], quiet=True
        )
    with pytest.raises(UserError, match="distinct workdirs"):
        api.train_population(
            [member_config(0), member_config(1)], [tmp_path / "a", tmp_path / "a"], quiet=True
        )


def test_members_name_their_checkpoint_barriers_apart(tmp_path):
    """Each member's checkpointer names its orbax barriers by its place in the population,
    the same in every process: two members saving in turn across processes, one finishing
    in the background while the next starts, met at one barrier name and failed ("Barrier
    ... is already ongoing"). A run alone keeps orbax's names."""
    settings = [build.make_settings(member_config(i)) for i in range(2)]
    opened = [Member.open(settings[i], tmp_path / f"m{i}", index=i) for i in range(2)]
    alone = Member.open(settings[0], tmp_path / "alone")
    prefixes = [
        m.checkpointer._manager._multiprocessing_options.barrier_sync_key_prefix
        for m in [*opened, alone]
    ]
    assert prefixes == ["azjax_member_0", "azjax_member_1", None]


def test_pbt_ranks_copies_the_best_and_perturbs():
    settings = pbt.PBT(every=2, objective="loss", direction="minimize", fraction=0.25)
    values = [3.0, 1.0, math.nan, 2.0, 0.5, 4.0, 2.5, 1.5]
    sources = pbt.decide(settings, values, iteration=2)
    # Quarter of 8 = 2: the worst two (NaN ranks last, then 4.0) copy from the best two.
    assert [k for k, s in enumerate(sources) if s != k] == [2, 5]
    assert {sources[2], sources[5]} <= {4, 1}
    assert pbt.decide(settings, values, iteration=2) == sources  # reproducible on resume
    maximize = pbt.PBT(objective="x", direction="maximize", fraction=0.25)
    assert [k for k, s in enumerate(pbt.decide(maximize, [1, 2, 3, 4], 1)) if s != k] == [0]

    explore = pbt.PBT(
        keys=("learner.learning_rate", "search.dirichlet_fraction", "selfplay.temperature_moves"),
        factors=(1.25,),
    )
    values = {
        "learner.learning_rate": 1e-3,
        "search.dirichlet_fraction": 0.9,
        "selfplay.temperature_moves": 2,
    }
    after = pbt.perturb(explore, values, iteration=2, member=0)
    assert after["learner.learning_rate"] == pytest.approx(1.25e-3)
    assert after["search.dirichlet_fraction"] == 1.0  # kept within [0, 1]
    assert after["selfplay.temperature_moves"] == 3  # an integer moves by at least one
    down = pbt.perturb(dataclass_replace(explore, factors=(0.8,)), values, 2, 0)
    assert down["selfplay.temperature_moves"] == 1


def dataclass_replace(settings, **changes):
    return dataclasses.replace(settings, **changes)


def test_pbt_settings_are_checked():
    configs = [build.make_settings(member_config(0)), build.make_settings(member_config(1))]
    assert pbt.PBT(every=2).check(configs).objective == "eval/random/score"
    assert pbt.PBT(every=2).check(configs).keys == (
        "learner.learning_rate",
        "search.dirichlet_alpha",
    )
    with pytest.raises(UserError, match="eval.every"):
        pbt.PBT(every=3).check(configs)
    with pytest.raises(UserError, match="not among"):
        pbt.PBT(every=2, keys=("network.channels",)).check(configs)
    with pytest.raises(UserError, match="at least 2"):
        pbt.PBT().check(configs[:1])


@pytest.mark.slow  # a population of 4 compiles its own steps (about 40 s)
def test_pbt_copies_the_network_and_optimizer_but_not_the_replay(tmp_path):
    configs = [member_config(k, iterations=2, eval_every=0) for k in range(4)]
    members = [tmp_path / f"m{k}" for k in range(4)]
    settings = pbt.PBT(every=2, objective="loss", direction="minimize", seed=3)
    api.train_population(configs, members, quiet=True, pbt=settings)
    decisions = [pbt.read_decisions(m) for m in members]
    assert all(len(d) == 1 and d[0]["iteration"] == 2 for d in decisions)
    exploited = [k for k, d in enumerate(decisions) if d[0]["action"] == "exploit"]
    assert len(exploited) == 1  # a quarter of 4
    target = exploited[0]
    source = next(k for k, m in enumerate(members) if m.name == decisions[target][0]["source"])
    losses = [runs.load_metrics(m)["loss"].iloc[-1] for m in members]
    assert losses[target] == max(losses) and losses[source] == min(losses)

    def saved(index):
        run = compiled.compile_run(build.make_settings(configs[0]))
        like = split_state(run.init(jax.random.PRNGKey(0)))
        return Checkpointer(members[index]).restore(2, *like)

    copy, original = saved(target), saved(source)
    for x, y in zip(jax.tree.leaves(copy.params), jax.tree.leaves(original.params), strict=True):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(
        jax.tree.leaves(copy.trainer["opt_state"]),
        jax.tree.leaves(original.trainer["opt_state"]),
        strict=True,
    ):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(copy.trainer["buffer"].obs, original.trainer["buffer"].obs)
    # The new hyperparameters: the source's, perturbed; saved with the checkpoint.
    after = decisions[target][0]["hyperparameters"]
    ratio = after["learner.learning_rate"] / configs[source].learner.learning_rate
    assert ratio == pytest.approx(0.8) or ratio == pytest.approx(1.25)
    assert copy.config["learner"]["learning_rate"] == pytest.approx(after["learner.learning_rate"])
