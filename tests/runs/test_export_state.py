"""A run's compact resume state: `azjax export-state` and `azjax train --resume-from`
(`runs/export_state.py`): the network, optimizer and counters without the replay, resumed in
another run directory whose replay refills."""

import json
import shutil

import jax
import numpy as np
import pytest
from conftest import assert_user_error, run_cli, tiny_config

from azjax.apps import api
from azjax.config import load_config
from azjax.runs import export_state
from azjax.runs.checkpoint import Checkpointer
from azjax.runs.metrics import read_metrics
from azjax.runs.state_layout import split_state
from azjax.types import UserError


def assert_same_tree(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    jax.tree.map(lambda x, y: np.testing.assert_array_equal(np.asarray(x), np.asarray(y)), a, b)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A tiny Tic-tac-toe run of 2 iterations (a checkpoint at 2) and its export."""
    folder = tmp_path_factory.mktemp("export")
    config = tiny_config()
    config.train.num_iterations = 2
    api.train(config, folder / "run", quiet=True)
    export_state.export(folder / "run", folder / "out")
    return folder / "run", folder / "out"


def test_the_export_holds_the_state_without_the_replay(exported):
    run, out = exported
    assert sorted(p.name for p in out.iterdir()) == [
        "config.json",
        "export.json",
        "metrics.jsonl",
        "state.msgpack",
    ]
    info = json.loads((out / "export.json").read_text())
    assert info["format"] == "azjax-state" and info["version"] == 1 and info["iteration"] == 2
    assert info["source"] == run.name  # no machine's path in a file to commit
    for name, size in info["bytes"].items():
        assert (out / name).stat().st_size == size
    checkpoint = sum(p.stat().st_size for p in (run / "checkpoints/2").rglob("*") if p.is_file())
    assert info["checkpoint_bytes"] == checkpoint
    assert info["bytes"]["state.msgpack"] * 3 < checkpoint  # no replay, no games
    state = export_state.Export.open(out).state()
    assert sorted(state) == [
        "elapsed",
        "iteration",
        "key",
        "lr_multiplier",
        "num_games",
        "num_positions",
        "opt_state",
        "step",
        "variables",
    ]
    assert int(state["iteration"]) == 2
    assert json.loads((out / "config.json").read_text()) == json.loads(
        (run / "config.json").read_text()
    )
    assert read_metrics(out) == read_metrics(run)


def test_a_run_resumed_from_the_export_goes_on_with_an_empty_replay(exported, tmp_path):
    run, out = exported
    new = tmp_path / "new"
    # A budget the export has reached: no iteration runs, the state returned is the seeded one.
    seeded = api.train(load_config(str(out)), new, quiet=True, resume_from=out)
    source = Checkpointer(run)
    try:
        saved = source.restore(2, *split_state(seeded))
    finally:
        source.close()
    variables, rest = split_state(seeded)
    assert_same_tree(variables, saved.params)
    for name in ("opt_state", "step", "key", "iteration", "num_games", "num_positions"):
        assert_same_tree(rest[name], saved.trainer[name])
    assert float(rest["elapsed"]) == float(saved.trainer["elapsed"]) > 0
    assert int(seeded.iteration) == 2 and int(seeded.num_games) > 0
    # The replay is empty and the games at their start, unlike the source's.
    assert np.all(np.asarray(seeded.buffer.player) == -1)
    assert np.any(np.asarray(saved.trainer["buffer"].player) >= 0)
    assert int(seeded.buffer.next_index) == 0
    assert np.all(np.asarray(seeded.selfplay.games.step_count) == 0)


@pytest.fixture(scope="module")
def resumed(exported, tmp_path_factory):
    """`azjax train --resume-from` the export for 2 more iterations in a new workdir."""
    run, out = exported
    new = tmp_path_factory.mktemp("resumed") / "new"
    status = _cli("train", "--workdir", new, "--resume-from", out,
                  "--config.train.num_iterations=4")  # fmt: skip
    assert status == 0
    return new, out


def _cli(*argv) -> int:
    from azjax.apps import cli  # noqa: PLC0415

    return cli.main([str(a) for a in argv])


def test_its_iterations_and_compute_go_on_from_the_export(resumed):
    new, out = resumed
    records = read_metrics(new)
    assert [r["iteration"] for r in records] == [1, 2, 3, 4]
    history = read_metrics(out)
    assert records[:2] == history
    before, first = records[1], records[2]
    # The cumulated compute goes on from the export's totals, not from 0.
    for name in ("selfplay_flops", "learn_flops", "selfplay_evaluations"):
        assert first[f"total_{name}"] == pytest.approx(before[f"total_{name}"] + first[name])
    assert first["total_train_flops"] > before["total_train_flops"]
    assert first["total_positions"] == before["total_positions"] + first["positions"]
    assert first["wall_time"] > before["wall_time"]
    # An empty replay and games at their start: no Tic-tac-toe game ends within 4 plies, so
    # iteration 3 ends no game, labels no position and applies no update.
    assert first["total_games"] == before["total_games"] > 0
    assert first["updates"] == before["updates"] > 0
    assert sorted(p.name for p in (new / "checkpoints").iterdir() if p.name.isdigit()) == ["4"]


def test_the_same_command_then_resumes_from_its_checkpoint(resumed, capsys, azjax_records):
    new, out = resumed
    status, _, err = run_cli(capsys, "train", "--workdir", new, "--resume-from", out,
                             "--config.train.num_iterations=5")  # fmt: skip
    assert status == 0, err
    messages = [r.getMessage() for r in azjax_records]
    assert f"{new} already resumed from {out}; resuming from its checkpoints" in messages
    assert f"resuming {new} from iteration 4" in messages
    assert [r["iteration"] for r in read_metrics(new)] == [1, 2, 3, 4, 5]


def test_export_state_writes_a_new_or_empty_folder_only(exported, tmp_path, capsys):
    run, out = exported
    assert_user_error(capsys, ["export-state", run, out], f"{out} exists and is not an empty")
    assert_user_error(capsys, ["export-state", tmp_path, tmp_path / "x"], "not a run directory")
    assert_user_error(
        capsys, ["export-state", run, tmp_path / "x", "--step", "1"], "does not exist"
    )
    assert_user_error(capsys, ["export-state", run, "gs://bucket/x"], "a local folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing half-written
    (tmp_path / "empty").mkdir()
    status, stdout, err = run_cli(capsys, "export-state", run, tmp_path / "empty", "--step", "2")
    assert status == 0, err
    assert f"wrote {tmp_path / 'empty'}: iteration 2 of {run}" in stdout
    assert (tmp_path / "empty/state.msgpack").read_bytes() == (out / "state.msgpack").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]


def _copy(out, folder, name):
    copy = folder / name
    shutil.copytree(out, copy)
    return copy


def test_what_is_not_an_export_is_refused_in_one_line(exported, tmp_path, capsys):
    run, out = exported
    new = tmp_path / "new"

    def refused(source, *fragments):
        argv = ["train", "--workdir", new, "--resume-from", source]
        assert_user_error(capsys, argv, *fragments)

    refused(tmp_path / "none", "does not exist")
    refused(run, f"{run} is not an export of `azjax export-state` (no export.json)")
    versioned = _copy(out, tmp_path, "versioned")
    info = json.loads((versioned / "export.json").read_text())
    (versioned / "export.json").write_text(json.dumps({**info, "version": 99}))
    refused(versioned, "format version 99", "reads version 1")
    damaged = _copy(out, tmp_path, "damaged")
    data = bytearray((damaged / "state.msgpack").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (damaged / "state.msgpack").write_bytes(bytes(data))
    refused(damaged, "state.msgpack is damaged")
    incomplete = _copy(out, tmp_path, "incomplete")
    (incomplete / "metrics.jsonl").unlink()
    refused(incomplete, "is incomplete: no metrics.jsonl")
    assert_user_error(capsys, ["train", "--resume-from", out], "name its --workdir")
    assert not new.exists()  # nothing made for a refused run


def test_a_config_a_resumed_run_may_not_take_is_refused(exported, tmp_path, capsys):
    _, out = exported
    new = tmp_path / "new"

    def refused(*extra_and_fragments):
        *extra, fragment = extra_and_fragments
        argv = ["train", "--workdir", new, "--resume-from", out, *extra]
        assert_user_error(capsys, argv, fragment)

    refused("--config.network.channels=16", "network.channels: 8 -> 16")
    refused("--config.game=connect_four", "game: 'tic_tac_toe' -> 'connect_four'")
    # Allowed to change, a network of another shape still cannot take the export's arrays.
    refused("--config.network.channels=16", "--allow-config-change", "another shape (variables")
    refused("--config.game=connect_four", "--allow-config-change", "another shape (variables")
    config = tiny_config()
    config.network.channels = 16
    with pytest.raises(UserError, match="different config"):  # the Python API checks the same
        api.train(config, new, quiet=True, resume_from=out)
    with pytest.raises(UserError, match="another shape"):
        api.train(config, new, quiet=True, resume_from=out, allow_config_change=True)
    assert not new.exists()


def test_a_workdir_holding_another_runs_checkpoints_is_refused(exported, tmp_path, capsys):
    run, out = exported
    other = _copy(run, tmp_path, "other")
    records = read_metrics(other)
    records[0]["loss"] += 1.0  # another run's records
    (other / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    argv = ["train", "--workdir", other, "--resume-from", out, "--config.train.num_iterations=3"]
    assert_user_error(capsys, argv, f"{other} holds checkpoints of a run not resumed from {out}")


def test_a_gated_run_takes_its_best_network_along(tmp_path):
    config = tiny_config()
    config.train.gating = True
    config.train.gating_every = 1
    config.train.gating_games = 4
    config.seed = 2  # as in test_gating.py
    config.train.num_iterations = 2
    api.train(config, tmp_path / "run", quiet=True)
    best = read_metrics(tmp_path / "run")[-1]["gating/best_iteration"]
    name = f"gating/best_{best}.msgpack"
    export_state.export(tmp_path / "run", tmp_path / "out")
    assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "run" / name).read_bytes()
    config.train.num_iterations = 3
    api.train(config, tmp_path / "new", quiet=True, resume_from=tmp_path / "out")
    # Self-play went on with that network (the gate reads the file the last record names).
    assert (tmp_path / "new" / name).read_bytes() == (tmp_path / "run" / name).read_bytes()
    records = read_metrics(tmp_path / "new")
    assert [r["iteration"] for r in records] == [1, 2, 3]
    assert "gating/score" in records[2]
