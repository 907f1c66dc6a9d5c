"""Supervised pretraining on game records (`training.record_data`, `training.pretrain`): the
positions and targets read from records, the network learning the recorded moves, exact
resumption, the replay seeded, the compute counted, and bad records."""

import json
import signal
import subprocess
import sys

import jax
import numpy as np
import pytest
from conftest import tiny_config

from azjax import games, interrupt
from azjax.apps.api import train
from azjax.runs.metrics import read_metrics
from azjax.training import record_data
from azjax.types import UserError


def play(game, choose, seed: int):
    """One game of `game` from its start, moves chosen by `choose(legal ids, rng)`: the
    actions and player 0's reward."""
    rng = np.random.default_rng(seed)
    state, actions = game.init(jax.random.PRNGKey(0)), []
    step = jax.jit(game.step)
    while not bool(state.terminated):
        legal = np.flatnonzero(np.asarray(state.legal_action_mask))
        action = int(choose(legal, rng))
        actions.append(action)
        state = step(state, action)
    return actions, float(state.rewards[0])


def lowest_column(legal, rng):
    """A teacher that is easy to imitate: the lowest legal column, one game in four at random."""
    return legal[0] if rng.random() < 0.75 else rng.choice(legal)


def write_jsonl(path, game, games_played):
    names = {1.0: "1-0", -1.0: "0-1", 0.0: "1/2-1/2"}
    with path.open("w") as stream:
        for actions, result in games_played:
            moves = [str(a + 1) for a in actions]  # Connect Four's notation: columns 1-7
            line = {"game": game.name, "moves": moves, "result": names[result]}
            stream.write(json.dumps(line) + "\n")
    return path


@pytest.fixture(scope="module")
def connect_four():
    return games.make("connect_four")


@pytest.fixture(scope="module")
def played(connect_four):
    return [play(connect_four, lowest_column, seed) for seed in range(60)]


@pytest.fixture
def records_file(tmp_path, connect_four, played):
    return write_jsonl(tmp_path / "games.jsonl", connect_four, played)


def records_config(path, updates=40, **records):
    config = tiny_config("connect_four")
    config.records.path = str(path)
    config.records.updates = updates
    config.records.eval_every = 20
    config.records.holdout = 0.2
    for name, value in records.items():
        config.records[name] = value
    config.train.num_iterations = 1
    return config


def test_positions_are_the_games_replayed(connect_four, played, records_file):
    data = record_data.load(connect_four, records_file, holdout=0.2, log=lambda _: None)
    total = sum(len(actions) for actions, _ in played)
    assert len(data.train) + len(data.holdout) == total
    assert data.train.games + data.holdout.games == len(played)
    assert 0 < data.holdout.games < len(played) // 2
    # The first trained game, stepped here by hand: observations, movers and value targets.
    first = next(
        i for i in range(len(played)) if not record_data.is_held_out(f"{records_file}:{i + 1}", 0.2)
    )
    actions, result = played[first]
    state = connect_four.init(jax.random.PRNGKey(0))
    for ply, action in enumerate(actions):
        expected = np.asarray(connect_four.encode_observation(connect_four.observe(state)))
        np.testing.assert_array_equal(data.train.obs[ply], expected)
        mover = int(state.current_player)
        assert data.train.action[ply] == action
        assert data.train.value[ply] == (result if mover == 0 else -result)
        state = connect_four.step(state, action)
    targets = data.train.targets(np.arange(3), connect_four.num_actions)
    np.testing.assert_array_equal(targets.argmax(-1), data.train.action[:3])


def test_held_out_split_is_stable():
    sources = [f"games/{i}.sgf" for i in range(2000)]
    held = [s for s in sources if record_data.is_held_out(s, 0.1)]
    assert 150 < len(held) < 250
    assert held == [s for s in sources if record_data.is_held_out(s, 0.1)]
    assert not any(record_data.is_held_out(s, 0.0) for s in sources)


def test_the_network_learns_the_recorded_moves(tmp_path, records_file):
    config = records_config(records_file, updates=300)
    config.records.eval_every = 100
    config.network.channels = 16
    config.learner.batch_size = 64
    config.learner.learning_rate = 3e-3
    train(config, tmp_path / "run", quiet=True)
    lines = [json.loads(line) for line in (tmp_path / "run/pretrain/metrics.jsonl").open()]
    assert [line["updates"] for line in lines] == [100, 200, 300]
    # The teacher plays the lowest legal column three moves in four.
    assert lines[-1]["holdout_move_accuracy"] > 0.6
    assert lines[-1]["holdout_policy_loss"] < np.log(7) - 0.3  # uniform: log 7
    record = read_metrics(tmp_path / "run")[0]
    # The self-play iteration's compute adds to the pretraining's.
    assert record["total_learn_flops"] > lines[-1]["total_learn_flops"] > 0
    assert record["wall_time"] > lines[-1]["seconds"]


def test_an_interrupted_pretraining_resumes_exactly(tmp_path, records_file, monkeypatch):
    config = records_config(records_file, updates=40)
    whole = train(config, tmp_path / "whole", quiet=True)
    calls = {"n": 0}

    def stop_after_25():
        calls["n"] += 1
        return signal.SIGINT if calls["n"] > 25 else None

    monkeypatch.setattr(interrupt, "requested", stop_after_25)
    with pytest.raises(KeyboardInterrupt):
        train(config, tmp_path / "parts", quiet=True)
    monkeypatch.undo()
    resumed = train(config, tmp_path / "parts", quiet=True)
    for a, b in zip(
        jax.tree.leaves(whole.train_state.variables),
        jax.tree.leaves(resumed.train_state.variables),
        strict=True,
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert (tmp_path / "whole/pretrain/metrics.jsonl").read_text().count("\n") == 2
    first = [json.loads(x) for x in (tmp_path / "whole/pretrain/metrics.jsonl").open()]
    second = [json.loads(x) for x in (tmp_path / "parts/pretrain/metrics.jsonl").open()]
    for a, b in zip(first, second, strict=True):
        assert {k: v for k, v in a.items() if k != "seconds"} == {
            k: v for k, v in b.items() if k != "seconds"
        }


def test_records_seed_the_replay(connect_four, records_file):
    from azjax.core import replay  # noqa: PLC0415

    data = record_data.load(connect_four, records_file, holdout=0.2, log=lambda _: None)
    buffer = replay.init(100, connect_four.observation_shape, 7, num_shards=2)
    seeded = record_data.seed_replay(buffer, data.train, num_shards=2)
    value = np.asarray(seeded.value).reshape(2, 50)
    assert np.isfinite(value).all()  # more positions than slots: both rings full
    np.testing.assert_array_equal(np.asarray(seeded.value)[:50], data.train.value[-100:-50])
    small = record_data.seed_replay(replay.init(4000, (6, 7, 2), 7), data.train, num_shards=1)
    assert int(small.size) == len(data.train) and int(small.next_index) == 0
    # At the end of the ring: self-play (from slot 0) fills the empty slots first.
    assert np.isnan(np.asarray(small.value)[: 4000 - len(data.train)]).all()
    np.testing.assert_array_equal(np.asarray(small.value)[-len(data.train) :], data.train.value)
    np.testing.assert_array_equal(np.asarray(small.player)[-len(data.train) :], data.train.mover)


def test_bad_records_are_skipped_or_refused(tmp_path, connect_four, played):
    path = write_jsonl(tmp_path / "games.jsonl", connect_four, played[:5])
    with path.open("a") as stream:
        stream.write(
            json.dumps({"game": "connect_four", "moves": ["1"] * 7, "result": "1-0"}) + "\n"
        )
    lines = []
    data = record_data.load(connect_four, path, holdout=0.0, log=lines.append)
    assert data.train.games == 5
    assert any("games.jsonl:6" in line for line in lines)
    with pytest.raises(UserError, match="games.jsonl:6"):
        record_data.load(connect_four, path, holdout=0.0, strict=True, log=lines.append)


def test_train_command_refuses_bad_records_in_one_line(tmp_path, connect_four, played):
    path = write_jsonl(tmp_path / "games.jsonl", connect_four, played[:3])
    path.write_text(
        path.read_text() + '{"game": "connect_four", "moves": ["9"], "result": "1-0"}\n'
    )
    command = [
        sys.executable,
        "-m",
        "azjax.apps.cli",
        "train",
        "--config",
        "connect_four",
        "--workdir",
        str(tmp_path / "run"),
        f"--config.records.path={path}",
        "--config.records.strict=true",
        "--config.train.num_iterations=1",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "games.jsonl:4" in result.stderr
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_go_records_carry_ownership_and_score_of_their_last_position():
    game = games.make("go_9x9")
    played = [play(game, lambda legal, rng: rng.choice(legal), seed) for seed in range(2)]
    played[1] = (played[1][0][:30], played[1][1])  # a game that stops early (a resignation)
    from azjax.games import records  # noqa: PLC0415

    start = jax.device_get(game.init(jax.random.PRNGKey(0)))
    chunk = [
        records.Record(source=f"g{i}", start=start, actions=tuple(a), result=r)
        for i, (a, r) in enumerate(played)
    ]
    data = record_data.positions(game, chunk)
    first = len(played[0][0])
    for index, (actions, _) in enumerate(played):
        state = game.init(jax.random.PRNGKey(0))
        for action in actions:
            state = game.step(state, action)
        rows = slice(0, first) if index == 0 else slice(first, None)
        sign = np.where(data.mover[rows] == 0, 1, -1)
        expected = np.asarray(game.ownership(state)).astype(np.int8)
        np.testing.assert_array_equal(data.ownership[rows], sign[:, None] * expected[None])
        np.testing.assert_allclose(data.score[rows], sign * float(game.final_score(state)))
