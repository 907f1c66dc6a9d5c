"""Gating (AlphaGo Zero's best network plays self-play) and the evaluation ladder (pure MCTS
rising by N simulations after each evaluation the agent won every game of)."""

import json
import shutil

import flax.serialization
import jax
import numpy as np
import pytest
from conftest import assert_same_variables, tiny_config

from azjax import config as config_lib
from azjax.apps import api
from azjax.config import build
from azjax.matches import agent as agent_lib
from azjax.matches import arena
from azjax.runs import directory as runs
from azjax.runs.metrics import read_metrics
from azjax.training import compiled, gating
from azjax.training import evaluation as evaluation_lib
from azjax.types import UserError


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("gating", 1, "must be true or false"),
        ("gating_every", 0, r"must be in \[1, inf\)"),
        ("gating_games", 0, r"must be in \[2, inf\)"),
        ("gating_games", 5, "must be even"),
        ("gating_threshold", 0.0, r"must be in \(0.0, 1.0\]"),
        ("gating_threshold", 1.01, r"must be in \(0.0, 1.0\]"),
    ],
)
def test_bad_gating_keys_are_config_errors(key, value, message):
    saved = json.loads(config_lib.to_json(tiny_config()))
    saved["train"][key] = value
    with pytest.raises(UserError, match=f"'train.{key}' {message}"):
        config_lib.from_dict(saved, source="config.json")


def test_gating_threshold_one_is_allowed():
    config = tiny_config()
    config.train.gating_threshold = 1.0
    config_lib.validate(config)


@pytest.mark.parametrize("spec", ["ladder:0", "ladder:x", "ladder:", "ladder:-3"])
def test_bad_ladder_specs_are_config_errors(spec):
    config = tiny_config()
    config.eval.opponents = (spec,)
    with pytest.raises(UserError, match="ladder:N needs a positive number"):
        config_lib.validate(config)


def test_ladder_spec_parses_and_plays_only_in_training():
    assert config_lib.parse_opponent_spec("ladder:500") == ("ladder", 500)
    game = build.make_game(tiny_config())
    with pytest.raises(UserError, match="only in training evaluations"):
        agent_lib.make_opponent(game, "ladder:1")


def test_a_config_saved_before_gating_loads_and_resumes(tmp_path):
    """Runs saved before the gating keys existed load with gating off, and resume."""
    config = tiny_config()
    saved = json.loads(config_lib.to_json(config))
    for key in config_lib.GATING_KEYS:
        del saved["train"][key.split(".")[1]]
    (tmp_path / "config.json").write_text(json.dumps(saved))
    loaded = config_lib.read_config_file(tmp_path / "config.json")
    assert loaded.train.gating is False and loaded.train.gating_games == 40
    runs.prepare_workdir(build.make_settings(config), tmp_path, allow_config_change=False)
    config.train.gating = True  # it changes what the run computes: not resumable
    with pytest.raises(UserError, match="train.gating: False -> True"):
        runs.prepare_workdir(build.make_settings(config), tmp_path, allow_config_change=False)
    # Nor is it part of the compiled step functions.
    assert config_lib.pipeline_key(config) == config_lib.pipeline_key(tiny_config())


def test_iterate_self_plays_with_the_given_network_and_trains_the_learners():
    config = tiny_config()
    run = compiled.compile_run(build.make_settings(config))
    hyper = build.make_hyperparams(config)
    state = run.init(jax.random.PRNGKey(0))
    for _ in range(2):  # until the replay holds enough positions for the learner to update
        state, _ = compiled.iterate(run, state, hyper)
    assert int(state.buffer.size) >= config.replay.min_size
    other = run.init(jax.random.PRNGKey(1)).train_state.variables
    # The best network as a resumed run has it: read from bytes, put on the devices.
    best = flax.serialization.from_bytes(
        jax.device_get(other), flax.serialization.to_bytes(jax.device_get(other))
    )
    best = jax.device_put(best, run.shardings.train_state.variables)

    plain, _ = compiled.iterate(run, state, hyper)
    same, _ = compiled.iterate(run, state, hyper, state.train_state.variables)
    gated, _ = compiled.iterate(run, state, hyper, best)
    # With the learner's own network, gating changes nothing.
    jax.tree.map(lambda x, y: np.testing.assert_array_equal(x, y), plain, same)
    # With another one, self-play's positions are those of that network...
    with_best = state.replace(train_state=state.train_state._replace(variables=best))
    played, _, learn_keys = run.play(with_best, hyper)
    jax.tree.map(lambda x, y: np.testing.assert_array_equal(x, y), played.buffer, gated.buffer)
    assert not np.array_equal(plain.buffer.policy, gated.buffer.policy)
    # ...and the learner then trained its own network on them, not the best one.
    expected = played.replace(train_state=state.train_state)
    for keys in learn_keys:
        expected, _ = run.learn(expected, keys, hyper)
    jax.tree.map(lambda x, y: np.testing.assert_array_equal(x, y), expected, gated)
    assert int(gated.train_state.step) == int(state.train_state.step) + 2
    # One compiled self-play for all three: the best network's sharding matches.
    assert run.play._cache_size() == 1


def gated_config(num_iterations: int):
    config = tiny_config()
    config.train.gating = True
    config.train.gating_every = 1
    config.train.gating_games = 4
    # With seed 2 the scores are 1, 0.5, 0.625, 0.25: accepted at 1 and 3, not at 2 and 4.
    config.seed = 2
    config.train.gating_threshold = 0.55
    config.train.num_iterations = num_iterations
    config.train.checkpoint_every = 2
    return config


@pytest.fixture(scope="module")
def straight_gated_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("gated")
    state = api.train(gated_config(4), workdir, quiet=True)
    return workdir, state


def test_gated_run_logs_each_match_and_keeps_the_best_network_on_disk(straight_gated_run):
    workdir, state = straight_gated_run
    records = read_metrics(workdir)
    best = 0
    for record in records:
        accepted = record["gating/score"] >= 0.55
        assert record["gating/accepted"] == int(accepted)
        best = record["iteration"] if accepted else best
        assert record["gating/best_iteration"] == best
        assert record["gating_seconds"] > 0
    pointer = json.loads((workdir / "gating" / "best.json").read_text())
    assert pointer == {"iteration": best, "file": f"best_{best}.msgpack"}
    # Files: the current best and those the kept checkpoints (2 and 4) resume with.
    needed = {best} | {r["gating/best_iteration"] for r in records if r["iteration"] in (2, 4)}
    assert sorted(p.name for p in (workdir / "gating").glob("*.msgpack")) == sorted(
        f"best_{i}.msgpack" for i in needed
    )
    assert {r["gating/accepted"] for r in records} == {0, 1}  # both happened
    assert best != int(state.iteration)  # the learner's network is not the best


def test_gated_run_that_died_after_the_best_changed_resumes_exactly(straight_gated_run, tmp_path):
    """A run that died after iteration 4 but before its checkpoint (so its best network may
    be newer than the checkpoint of iteration 2) resumes from 2 as the straight run went."""
    straight_dir, straight = straight_gated_run
    best = [r["gating/best_iteration"] for r in read_metrics(straight_dir)]
    assert best[1] != best[3]  # the case this test is about
    workdir = tmp_path / "run"
    api.train(gated_config(4), workdir, quiet=True)
    shutil.rmtree(workdir / "checkpoints" / "4")
    resumed = api.train(gated_config(4), workdir, quiet=True)
    assert_same_variables(straight.train_state.variables, resumed.train_state.variables)
    keys = ("iteration", "gating/score", "gating/accepted", "gating/best_iteration")
    assert [{k: r[k] for k in keys} for r in read_metrics(workdir)] == [
        {k: r[k] for k in keys} for r in read_metrics(straight_dir)
    ]
    files = sorted(p.name for p in (straight_dir / "gating").iterdir())
    assert sorted(p.name for p in (workdir / "gating").iterdir()) == files
    for name in files:  # the same best networks, bit for bit
        assert (workdir / "gating" / name).read_bytes() == (
            straight_dir / "gating" / name
        ).read_bytes()
    # Neither the best network read back from its file nor the gating match compiled again.
    run = compiled.compile_run(build.make_settings(gated_config(4)))
    assert run.play._cache_size() == 1
    assert all(match._cache_size() == 1 for match in gating._MATCHES.values())


def test_a_missing_best_network_is_a_user_error(straight_gated_run, tmp_path):
    workdir = tmp_path / "run"
    shutil.copytree(straight_gated_run[0], workdir)
    for path in (workdir / "gating").glob("*.msgpack"):
        path.unlink()
    config = gated_config(5)
    with pytest.raises(UserError, match="cannot be restored"):
        api.train(config, workdir, quiet=True)


class _ScriptedMatch:
    """Stands in for a ladder's compiled match: plays the next scripted outcomes."""

    def __init__(self, script, played):
        self.script, self.played = script, played

    def __call__(self, level):
        def match(params_a, params_b, key):
            self.played.append(level)
            outcomes = np.asarray(self.script.pop(0))
            lengths = np.full(outcomes.shape, 5, np.int32)  # what the compute count reads
            return arena.MatchResult(outcomes, None, lengths, None, None)

        return match


def scripted_evaluation(script, played):
    config = tiny_config()
    game = build.make_game(config)
    network = build.make_network_for(config, game)
    evaluation = evaluation_lib.make_evaluation(
        game,
        build.make_agent_searcher(config, game, network),
        opponents=("ladder:100",),
        num_games=4,
        seed=0,
    )
    evaluation._ladder_match = _ScriptedMatch(script, played)
    return evaluation


def test_the_ladder_rises_exactly_after_evaluations_won_entirely():
    won, drew_one, lost_one = [1, 1, 1, 1], [1, 1, 0, 1], [1, -1, 1, 1]
    played = []
    evaluation = scripted_evaluation([won, won, drew_one, lost_one, won, won], played)
    evaluation.begin(None, [])
    records = [{"iteration": i, **evaluation(None, i)} for i in range(1, 7)]
    assert played == [100, 200, 300, 300, 300, 400]
    assert [r["eval/ladder:100/simulations"] for r in records] == played
    assert [r["eval/ladder:100/win_rate"] for r in records] == [1, 1, 0.75, 0.75, 1, 1]
    # A session resumed after any of these evaluations goes on where the ladder stood.
    for done in range(7):
        played = []
        resumed = scripted_evaluation([won], played)
        resumed.begin(None, [{"iteration": 0, "loss": 1.0}, *records[:done]])
        resumed(None, done + 1)
        assert played == [[100, 200, 300, 300, 300, 400, 500][done]], done
    assert evaluation_lib.ladder_level("ladder:100", records) == 500
    assert evaluation_lib.ladder_level("ladder:7", records) == 7  # another ladder's records


@pytest.mark.slow
def test_ladder_in_a_training_run_logs_its_level_and_resumes_it(tmp_path):
    config = tiny_config()
    config.eval.every = 1
    config.eval.opponents = ("ladder:1",)
    config.eval.num_games = 2
    config.train.num_iterations = 2
    api.train(config, tmp_path, quiet=True)
    config.train.num_iterations = 3  # resumable
    api.train(config, tmp_path, quiet=True)
    records = read_metrics(tmp_path)
    assert records[0]["eval/ladder:1/simulations"] == 1
    for done in (1, 2):
        expected = evaluation_lib.ladder_level("ladder:1", records[:done])
        assert records[done]["eval/ladder:1/simulations"] == expected
    for record in records:
        rates = [record[f"eval/ladder:1/{k}_rate"] for k in ("win", "draw", "loss")]
        assert sum(rates) == pytest.approx(1) and record["eval/ladder:1/games"] == 2
