"""Damaged run directories, signals and a full disk: a clear line, and nothing lost.

Each case damages a copy of one finished tiny run (iterations 1-4, checkpoints 2, 3, 4) the
way the world does (truncated or overwritten checkpoint files, a torn last metrics line, a
NUL-filled tail as ext4 leaves after a power cut, a full disk), or sends signals at chosen
points (inside a checkpoint save, twice, during imports), then checks that the run resumes
from the newest good checkpoint with `metrics.jsonl` holding iterations 1..n exactly once.
"""

import json
import os
import shutil
import signal
import struct
import subprocess
import textwrap
from pathlib import Path

import jax
import numpy as np
import pytest
from conftest import (
    PYTHON,
    assert_same_variables,
    subprocess_env,
    tiny_config,
    tiny_experiment,
    untrained_run,
)

from azjax import agent as agent_lib
from azjax import cli
from azjax import train as train_lib
from azjax.metrics import read_metrics


def recovery_config(num_iterations: int = 4):
    config = tiny_config()
    config.train.num_iterations = num_iterations
    config.train.checkpoint_every = 1
    config.train.keep_checkpoints = 3
    return config


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("finished") / "run"
    train_lib.train(recovery_config(), workdir, quiet=True)
    return workdir


@pytest.fixture
def run_copy(finished_run, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(finished_run, copy)
    return copy


def iterations(workdir) -> list[int]:
    return [r["iteration"] for r in read_metrics(workdir)]


def checkpoint_steps(workdir) -> list[int]:
    return sorted(
        int(p.name) for p in (Path(workdir) / "checkpoints").iterdir() if p.name.isdigit()
    )


def damage_files(folder: Path, how: str) -> int:
    """Truncates or overwrites every data file under `folder`; returns how many."""
    count = 0
    for path in folder.rglob("*"):
        if path.is_file() and path.stat().st_size > 0:
            if how == "truncate":
                with path.open("r+b") as stream:
                    stream.truncate(path.stat().st_size // 3)
            else:
                path.write_bytes(os.urandom(path.stat().st_size))
            count += 1
    return count


def test_finished_run_layout(finished_run):
    assert checkpoint_steps(finished_run) == [2, 3, 4]
    assert iterations(finished_run) == [1, 2, 3, 4]


@pytest.mark.parametrize("how", ["truncate", "overwrite"])
def test_damaged_newest_checkpoint_resume_falls_back(run_copy, how, capfd):
    assert damage_files(run_copy / "checkpoints" / "4", how) > 0
    state = train_lib.train(recovery_config(5), run_copy, quiet=True)
    err = capfd.readouterr().err
    assert "skipped checkpoint 4" in err and "checkpoints_damaged" in err
    assert (run_copy / "checkpoints_damaged" / "4").is_dir()
    assert int(state.iteration) == 5
    assert checkpoint_steps(run_copy) == [3, 4, 5]  # 4 redone from 3, then 5
    # Iteration 4 was redone from checkpoint 3: every iteration recorded once.
    assert iterations(run_copy) == [1, 2, 3, 4, 5]


def test_damaged_checkpoint_load_agent_and_evaluate_fall_back(run_copy, capsys):
    damage_files(run_copy / "checkpoints" / "4" / "params", "truncate")
    status = cli.main(
        ["evaluate", "--workdir", str(run_copy), "--opponent", "random", "--games", "2"]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "skipped checkpoint 4" in captured.err
    assert "(iteration 3," in captured.out
    assert agent_lib.load_agent(run_copy).iteration == 3


@pytest.mark.parametrize(
    "tail",
    [b'{"iteration": 5, "loss": 0.7', b"\x00" * 300, b'{"iteration": 5, "lo\n' + b"\x00" * 64],
    ids=["cut-line", "nul-tail", "cut-line-then-nul"],
)
def test_torn_metrics_file_resumes_with_each_iteration_once(run_copy, tail, capfd):
    with (run_copy / "metrics.jsonl").open("ab") as stream:
        stream.write(tail)
    train_lib.train(recovery_config(6), run_copy, quiet=True)
    assert iterations(run_copy) == [1, 2, 3, 4, 5, 6]
    assert "partial line" in capfd.readouterr().err


def test_lost_last_metrics_line_is_restored_from_the_checkpoint(run_copy):
    """The newest checkpoint's own records rebuild the file (here its last line was cut)."""
    path = run_copy / "metrics.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:10])
    train_lib.train(recovery_config(5), run_copy, quiet=True)
    records = read_metrics(run_copy)
    assert [r["iteration"] for r in records] == [1, 2, 3, 4, 5]
    assert json.dumps(records[3]) == lines[3]


def test_records_after_the_checkpoint_resumed_from_are_dropped(run_copy):
    """A session killed after writing iteration 5's record but before its checkpoint."""
    record = dict(read_metrics(run_copy)[-1], iteration=5)
    with (run_copy / "metrics.jsonl").open("a") as stream:
        stream.write(json.dumps(record) + "\n")
    train_lib.train(recovery_config(5), run_copy, quiet=True)
    assert iterations(run_copy) == [1, 2, 3, 4, 5]


def test_checkpoints_keep_their_own_config(run_copy):
    """After --allow-config-change, older checkpoints load with the config they were written
    with; config.json holds the newest."""
    config = recovery_config(5)
    config.eval.num_simulations = 7  # an evaluation key: no change of the computation
    config.learner.learning_rate = 0.5  # changes the computation (but not compiled code)
    train_lib.train(config, run_copy, quiet=True, allow_config_change=True)
    assert agent_lib.load_agent(run_copy, step=4).config.learner.learning_rate == 1e-3
    newest = agent_lib.load_agent(run_copy)
    assert newest.iteration == 5 and newest.config.learner.learning_rate == 0.5
    assert newest.num_simulations == 7
    assert json.loads((run_copy / "config.json").read_text())["learner"]["learning_rate"] == 0.5


def read_scalar_events(folder: Path) -> dict[str, list[int]]:
    """The steps of each scalar tag as TensorBoard shows them: event files in order, a
    SessionLog START at step s purging the earlier events at steps >= s."""
    from tensorboardX.proto.event_pb2 import Event, SessionLog  # noqa: PLC0415

    steps: dict[str, list[int]] = {}
    for path in sorted(folder.glob("events.out.tfevents.*")):
        data = path.read_bytes()
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset : offset + 8])
            event = Event.FromString(data[offset + 12 : offset + 12 + length])
            offset += 12 + length + 4
            if event.HasField("session_log") and event.session_log.status == SessionLog.START:
                steps = {
                    tag: [s for s in values if s < event.step] for tag, values in steps.items()
                }
            for value in event.summary.value:
                steps.setdefault(value.tag, []).append(event.step)
    return steps


def test_tensorboard_shows_each_iteration_once_after_a_resume(tmp_path):
    config = recovery_config(3)
    config.train.checkpoint_every = 2
    workdir = tmp_path / "run"
    train_lib.train(config, workdir)  # iterations 1-3, checkpoints 2 and 3
    shutil.rmtree(workdir / "checkpoints" / "3")  # as if killed before saving iteration 3
    config.train.num_iterations = 4
    train_lib.train(config, workdir)
    steps = read_scalar_events(workdir / "tensorboard")
    assert steps["loss"] == [1, 2, 3, 4]
    assert iterations(workdir) == [1, 2, 3, 4]


def can_mount_tmpfs() -> bool:
    return os.geteuid() == 0 and shutil.which("mount") is not None


@pytest.mark.skipif(not can_mount_tmpfs(), reason="needs root to mount a small tmpfs")
def test_full_disk_gives_one_line_and_keeps_the_last_good_checkpoint(tmp_path, capsys):
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], check=True)
    try:
        workdir = disk / "run"
        experiment = write_experiment(tmp_path, num_iterations=2)
        argv = ["train", "--config", str(experiment), "--workdir", str(workdir)]
        assert cli.main(argv) == 0
        capsys.readouterr()
        filler = disk / "filler"
        free = shutil.disk_usage(disk).free
        with filler.open("wb") as stream:  # leave a few kilobytes
            stream.write(b"\x00" * max(free - 16 * 1024, 0))
        more = [*argv, "--config.train.num_iterations=4"]
        for _ in range(2):  # the save fails; a resume on the still-full disk too
            status = cli.main(more)
            err = capsys.readouterr().err
            assert status == 1, err
            lines = err.strip().splitlines()
            assert lines[-1].startswith("azjax: error: the disk is full"), err
            assert "last good checkpoint is iteration 2" in lines[-1] or "cannot write" in lines[-1]
            assert "Traceback" not in err
            assert checkpoint_steps(workdir) == [2]
        filler.unlink()
        assert cli.main(more) == 0
        assert checkpoint_steps(workdir) == [2, 4]
        assert iterations(workdir) == [1, 2, 3, 4]
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def experiment_config(num_iterations: int, checkpoint_every: int):
    """The config of `write_experiment`'s file, for resuming its runs in this process."""
    config = tiny_config()
    config.train.num_iterations = num_iterations
    config.train.checkpoint_every = checkpoint_every
    return config


def write_experiment(folder: Path, *, num_iterations: int, checkpoint_every: int = 2) -> Path:
    return tiny_experiment(folder, num_iterations=num_iterations, checkpoint_every=checkpoint_every)


# A child process that trains and sends itself signals from inside a checkpoint save.
SIGNAL_SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    from azjax import checkpoint, cli

    signals, at_save = sys.argv[1], int(sys.argv[2])
    real_save = checkpoint.Checkpointer.save
    saves = []

    def save(self, step, *args, **kwargs):
        saves.append(step)
        if len(saves) == at_save:
            for name in signals.split(","):
                os.kill(os.getpid(), getattr(signal, name))
                time.sleep(0.05)
        return real_save(self, step, *args, **kwargs)

    checkpoint.Checkpointer.save = save
    sys.exit(cli.main(sys.argv[3:]))
""")


def run_signal_script(tmp_path, signals: str, at_save: int, workdir: Path, experiment: Path):
    argv = ["train", "--config", str(experiment), "--workdir", str(workdir)]
    return subprocess.run(
        [PYTHON, "-c", SIGNAL_SCRIPT, signals, str(at_save), *argv],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=300,
    )


@pytest.mark.slow
def test_signal_inside_a_save_finishes_it_and_exits_130(tmp_path):
    """A scheduler's SIGTERM (Ctrl-C's SIGINT takes the same path: tests/test_train.py sends
    one between iterations) lands inside a checkpoint save."""
    experiment = write_experiment(tmp_path, num_iterations=6, checkpoint_every=1)
    workdir = tmp_path / "run"
    result = run_signal_script(tmp_path, "SIGTERM", 2, workdir, experiment)
    assert result.returncode == 130, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert "interrupted: saved iteration 2" in result.stdout
    assert checkpoint_steps(workdir) == [1, 2]
    assert iterations(workdir) == [1, 2]
    # The run resumes and finishes (in this process, sharing compiled functions).
    train_lib.train(experiment_config(6, 1), workdir, quiet=True)
    assert iterations(workdir) == [1, 2, 3, 4, 5, 6]


@pytest.mark.slow
def test_second_signal_stops_at_once_and_the_run_resumes(tmp_path):
    experiment = write_experiment(tmp_path, num_iterations=4, checkpoint_every=1)
    workdir = tmp_path / "run"
    result = run_signal_script(tmp_path, "SIGINT,SIGINT", 3, workdir, experiment)
    assert result.returncode == 130, result.stdout + result.stderr
    assert "stopped at once" in result.stderr and "Traceback" not in result.stderr
    assert checkpoint_steps(workdir) == [1, 2]  # the save in flight never finished
    train_lib.train(experiment_config(4, 1), workdir, quiet=True)
    assert checkpoint_steps(workdir)[-1] == 4
    assert iterations(workdir) == [1, 2, 3, 4]
    straight = train_lib.train(experiment_config(4, 1), tmp_path / "straight", quiet=True)
    resumed = agent_lib.load_agent(workdir)
    assert_same_variables(straight.train_state.variables, resumed.variables)


def test_ctrl_c_during_imports_exits_cleanly(tmp_path):
    experiment = write_experiment(tmp_path, num_iterations=2)
    command = [PYTHON, "-m", "azjax.cli", "train", "--config", str(experiment)]
    command += ["--workdir", str(tmp_path / "run")]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env()
    )
    import time  # noqa: PLC0415

    time.sleep(1.0)  # inside the imports of jax, flax and orbax (several seconds here)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 130, out + err
    assert "Traceback" not in err, err


def test_checkpoints_of_another_network_shape_load_with_their_own_config(tmp_path):
    """After `--allow-config-change` to a wider network, an older checkpoint still loads, as
    the network it was written with."""
    from azjax import build, checkpoint  # noqa: PLC0415
    from azjax import config as config_lib  # noqa: PLC0415

    narrow = tiny_config()
    untrained_run(tmp_path, narrow)  # checkpoint 0: 8 channels
    wide = tiny_config()
    wide.network.channels = 12
    train_lib.prepare_workdir(wide, tmp_path, allow_config_change=True)
    network = build.make_network_for(wide, build.make_game(wide))
    checkpointer = checkpoint.Checkpointer(tmp_path)
    checkpointer.save(
        1,
        network.init(jax.random.PRNGKey(1)),
        {"iteration": np.int32(1)},
        config=json.loads(config_lib.to_json(wide)),
        metrics=[],
    )
    checkpointer.close()
    old = agent_lib.load_agent(tmp_path, step=0)
    new = agent_lib.load_agent(tmp_path)
    assert old.config.network.channels == 8 and new.config.network.channels == 12
    assert old.variables.params["stem"]["conv"]["kernel"].shape[-1] == 8
    assert new.variables.params["stem"]["conv"]["kernel"].shape[-1] == 12
