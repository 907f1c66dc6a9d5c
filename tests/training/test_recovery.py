"""Damaged run directories, signals and a full disk: a clear line, and nothing lost.

Each case damages a copy of one finished tiny run (iterations 1-4, checkpoints 2, 3, 4) the
way the world does (truncated or overwritten checkpoint files, a torn last metrics line, a
NUL-filled tail as ext4 leaves after a power cut, a full disk), or sends signals at chosen
points (inside a checkpoint save, twice, during imports), then checks that the run resumes
from the newest good checkpoint with `metrics.jsonl` holding iterations 1..n exactly once.
"""

import functools
import json
import logging
import os
import random
import shutil
import signal
import struct
import subprocess
import textwrap
import time
import types
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

from azjax import config as config_lib
from azjax import faults
from azjax.apps import api, cli
from azjax.config import build
from azjax.matches import agent as agent_lib
from azjax.runs import checkpoint
from azjax.runs import directory as runs
from azjax.runs.metrics import read_metrics
from azjax.types import RunError


def recovery_config(num_iterations: int = 4):
    config = tiny_config()
    config.train.num_iterations = num_iterations
    config.train.checkpoint_every = 1
    config.train.keep_checkpoints = 3
    return config


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("finished") / "run"
    api.train(recovery_config(), workdir, quiet=True)
    return workdir


@pytest.fixture
def run_copy(finished_run, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(finished_run, copy)
    return copy


@pytest.fixture
def no_orbax_logs(caplog):
    """Fails the test where a record that orbax logged reached a handler: outside pytest its
    failures print hundreds of lines of log and tracebacks to stderr."""
    yield
    logged = [r.getMessage()[:200] for r in caplog.records if "orbax" in Path(r.pathname).parts]
    assert not logged, logged


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


def test_a_save_cut_short_is_removed_on_resume(finished_run, run_copy, tmp_path):
    """orbax's temporary folder of a save that a kill (or a vanished folder) cut short is
    removed when the run resumes, in a single process too, and the run goes on as it would
    have without it. (A save of the same step again replaces it: these name steps that are
    not saved again, as after a preemption's off-interval save, or an older orbax's name.)"""
    folders = ("4.orbax-checkpoint-tmp-1764000000", "7.orbax-checkpoint-tmp")
    for name in folders:
        shutil.copytree(finished_run / "checkpoints" / "4", run_copy / "checkpoints" / name)
    clean = tmp_path / "clean"
    shutil.copytree(finished_run, clean)
    state = api.train(recovery_config(5), run_copy, quiet=True)
    assert not [p.name for p in (run_copy / "checkpoints").iterdir() if "orbax" in p.name]
    assert checkpoint_steps(run_copy) == [3, 4, 5] and iterations(run_copy) == [1, 2, 3, 4, 5]
    expected = api.train(recovery_config(5), clean, quiet=True)
    assert_same_variables(state.train_state.variables, expected.train_state.variables)


@pytest.mark.parametrize("how", ["truncate", "overwrite"])
def test_damaged_newest_checkpoint_resume_falls_back(run_copy, how, capfd):
    assert damage_files(run_copy / "checkpoints" / "4", how) > 0
    state = api.train(recovery_config(5), run_copy, quiet=True)
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
    api.train(recovery_config(6), run_copy, quiet=True)
    assert iterations(run_copy) == [1, 2, 3, 4, 5, 6]
    assert "partial line" in capfd.readouterr().err


def test_lost_last_metrics_line_is_restored_from_the_checkpoint(run_copy):
    """The newest checkpoint's own records rebuild the file (here its last line was cut)."""
    path = run_copy / "metrics.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:10])
    api.train(recovery_config(5), run_copy, quiet=True)
    records = read_metrics(run_copy)
    assert [r["iteration"] for r in records] == [1, 2, 3, 4, 5]
    assert json.dumps(records[3]) == lines[3]


def test_records_after_the_checkpoint_resumed_from_are_dropped(run_copy):
    """A session killed after writing iteration 5's record but before its checkpoint."""
    record = dict(read_metrics(run_copy)[-1], iteration=5)
    with (run_copy / "metrics.jsonl").open("a") as stream:
        stream.write(json.dumps(record) + "\n")
    api.train(recovery_config(5), run_copy, quiet=True)
    assert iterations(run_copy) == [1, 2, 3, 4, 5]


def test_checkpoints_keep_their_own_config(run_copy):
    """After --allow-config-change, older checkpoints load with the config they were written
    with; config.json holds the newest."""
    config = recovery_config(5)
    config.eval.num_simulations = 7  # an evaluation key: no change of the computation
    config.learner.learning_rate = 0.5  # changes the computation (but not compiled code)
    api.train(config, run_copy, quiet=True, allow_config_change=True)
    assert agent_lib.load_agent(run_copy, step=4).settings.tunable["learner.learning_rate"] == 1e-3
    newest = agent_lib.load_agent(run_copy)
    assert newest.iteration == 5 and newest.settings.tunable["learner.learning_rate"] == 0.5
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
    api.train(config, workdir)  # iterations 1-3, checkpoints 2 and 3
    shutil.rmtree(workdir / "checkpoints" / "3")  # as if killed before saving iteration 3
    config.train.num_iterations = 4
    api.train(config, workdir)
    steps = read_scalar_events(workdir / "tensorboard")
    assert steps["loss"] == [1, 2, 3, 4]
    assert iterations(workdir) == [1, 2, 3, 4]


def can_mount_tmpfs() -> bool:
    return os.geteuid() == 0 and shutil.which("mount") is not None


@pytest.mark.skipif(not can_mount_tmpfs(), reason="needs root to mount a small tmpfs")
def test_full_disk_gives_one_line_and_keeps_the_last_good_checkpoint(
    tmp_path, capfd, no_orbax_logs
):
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], check=True)
    try:
        workdir = disk / "run"
        experiment = write_experiment(tmp_path, num_iterations=2)
        argv = ["train", "--config", str(experiment), "--workdir", str(workdir)]
        assert cli.main(argv) == 0
        capfd.readouterr()
        filler = disk / "filler"
        free = shutil.disk_usage(disk).free
        with filler.open("wb") as stream:  # leave a few kilobytes
            stream.write(b"\x00" * max(free - 16 * 1024, 0))
        more = [*argv, "--config.train.num_iterations=4"]
        for _ in range(2):  # the save fails; a resume on the still-full disk too
            status = cli.main(more)
            err = capfd.readouterr().err  # file descriptor 2: orbax's logs and C++ too
            assert status == 1, err
            lines = err.strip().splitlines()
            assert lines[-1].startswith("azjax: error: the disk is full"), err
            assert "last good checkpoint is iteration 2" in lines[-1] or "cannot write" in lines[-1]
            assert len(lines) == 1, err  # no orbax log records, no library tracebacks
            assert checkpoint_steps(workdir) == [2]
        filler.unlink()
        assert cli.main(more) == 0
        assert checkpoint_steps(workdir) == [2, 4]
        assert iterations(workdir) == [1, 2, 3, 4]
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.slow
@pytest.mark.skipif(not can_mount_tmpfs(), reason="needs root to mount a small tmpfs")
def test_full_disk_in_azjax_train_prints_one_line(tmp_path):
    """`azjax train` as people run it, where orbax's logging reaches stderr (under pytest
    the logging plugin takes it)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], check=True)
    try:
        workdir = disk / "run"
        experiment = write_experiment(tmp_path, num_iterations=4)
        api.train(experiment_config(2, 2), workdir, quiet=True)
        free = shutil.disk_usage(disk).free
        with (disk / "filler").open("wb") as stream:  # leave a few kilobytes
            stream.write(b"\x00" * max(free - 16 * 1024, 0))
        result = subprocess.run(
            [PYTHON, "-m", "azjax.apps.cli", "train", "--config", str(experiment)]
            + ["--workdir", str(workdir)],
            capture_output=True, text=True, env=subprocess_env(), timeout=300,
        )  # fmt: skip
        assert result.returncode == 1, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("azjax: error: the disk is full"), result.stderr
        assert checkpoint_steps(workdir) == [2]
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
    from azjax.runs import checkpoint
    from azjax.apps import cli

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
    api.train(experiment_config(6, 1), workdir, quiet=True)
    assert iterations(workdir) == [1, 2, 3, 4, 5, 6]


@pytest.mark.slow
def test_second_signal_stops_at_once_and_the_run_resumes(tmp_path):
    experiment = write_experiment(tmp_path, num_iterations=4, checkpoint_every=1)
    workdir = tmp_path / "run"
    result = run_signal_script(tmp_path, "SIGINT,SIGINT", 3, workdir, experiment)
    assert result.returncode == 130, result.stdout + result.stderr
    assert "stopped at once" in result.stderr and "Traceback" not in result.stderr
    assert checkpoint_steps(workdir) == [1, 2]  # the save in flight never finished
    api.train(experiment_config(4, 1), workdir, quiet=True)
    assert checkpoint_steps(workdir)[-1] == 4
    assert iterations(workdir) == [1, 2, 3, 4]
    straight = api.train(experiment_config(4, 1), tmp_path / "straight", quiet=True)
    resumed = agent_lib.load_agent(workdir)
    assert_same_variables(straight.train_state.variables, resumed.variables)


def test_ctrl_c_during_imports_exits_cleanly(tmp_path):
    experiment = write_experiment(tmp_path, num_iterations=2)
    command = [PYTHON, "-m", "azjax.apps.cli", "train", "--config", str(experiment)]
    command += ["--workdir", str(tmp_path / "run")]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env()
    )
    time.sleep(1.0)  # inside the imports of jax, flax and orbax (several seconds here)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 130, out + err
    assert "Traceback" not in err, err


def test_checkpoints_of_another_network_shape_load_with_their_own_config(tmp_path):
    """After `--allow-config-change` to a wider network, an older checkpoint still loads, as
    the network it was written with."""
    narrow = tiny_config()
    untrained_run(tmp_path, narrow)  # checkpoint 0: 8 channels
    wide = tiny_config()
    wide.network.channels = 12
    settings = build.make_settings(wide, pipeline=False)
    runs.prepare_workdir(settings, tmp_path, allow_config_change=True)
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
    channels = [json.loads(a.settings.config_json)["network"]["channels"] for a in (old, new)]
    assert channels == [8, 12]
    assert old.variables.params["stem"]["conv"]["kernel"].shape[-1] == 8
    assert new.variables.params["stem"]["conv"]["kernel"].shape[-1] == 12


def _tiny_checkpointer(workdir, **options):
    return checkpoint.Checkpointer(workdir, **options)


def _save(checkpointer, step: int, size: int = 16) -> None:
    params = {"w": np.full((size, 1000), step, np.float32)}
    checkpointer.save(
        step, params, {"iteration": np.array(step, np.int32)}, config={}, metrics=[], force=True
    )


def _restore_newest(checkpointer, size: int = 16):
    like = ({"w": np.zeros((size, 1000), np.float32)}, {"iteration": np.array(0, np.int32)})
    return checkpointer.restore_newest(*like)


def delete_folder(folder) -> None:
    """`rm -rf folder`, done: repeated until the folder itself is unlinked. One pass racing
    orbax's background writer can leave the folder in place (a file made in it meanwhile:
    "Directory not empty"), and then nothing vanished: CI saw no warning once so."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        while os.fstat(descriptor).st_nlink > 0:
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        os.close(descriptor)


def test_a_checkpoints_folder_deleted_between_saves_is_made_again(tmp_path, capfd, no_orbax_logs):
    checkpointer = _tiny_checkpointer(tmp_path, max_to_keep=2)
    _save(checkpointer, 1)
    assert checkpointer.wait()
    shutil.rmtree(tmp_path / "checkpoints")
    for step in (2, 3, 4):
        _save(checkpointer, step)
        assert checkpointer.wait()
    checkpointer.close()
    (warning,) = capfd.readouterr().err.strip().splitlines()  # and nothing of orbax's
    assert warning == f"azjax: warning: {tmp_path / 'checkpoints'} vanished; made it again"
    assert checkpoint_steps(tmp_path) == [3, 4]
    checkpointer = _tiny_checkpointer(tmp_path)
    assert _restore_newest(checkpointer).step == 4
    checkpointer.close()


def test_a_checkpoints_folder_deleted_during_a_save_is_made_again(tmp_path, capfd, no_orbax_logs):
    """Deleted while orbax writes in the background (most often: the write of 16 MB has not
    finished), or just after (then the next save notices): one warning either way."""
    _delete_during_a_save_and_save_again(tmp_path, capfd)


@pytest.mark.deep
def test_a_checkpoints_folder_deleted_during_a_save_300_times_is_made_again_each_time(
    tmp_path, capfd, no_orbax_logs
):
    """The race behind one CI failure: the save made again collided with the failed save's
    writes, which orbax had not stopped ("File exists" on `2.orbax-checkpoint-tmp`). Before
    `azjax.runs.orbax_writes`, 3 of 600 such rounds failed on 2 loaded CPUs; run it beside a
    busy process (`yes > /dev/null &`)."""
    for attempt in range(300):
        _delete_during_a_save_and_save_again(tmp_path / str(attempt), capfd)


def _delete_during_a_save_and_save_again(workdir, capfd) -> None:
    size = 4000
    checkpointer = _tiny_checkpointer(workdir)
    _save(checkpointer, 1, size)
    assert checkpointer.wait()
    _save(checkpointer, 2, size)
    delete_folder(workdir / "checkpoints")
    written = checkpointer.wait()  # False where the write failed: save the state again
    _save(checkpointer, 2 if not written else 3, size)
    assert checkpointer.wait()
    checkpointer.close()
    (warning,) = capfd.readouterr().err.strip().splitlines()
    assert warning.startswith(f"azjax: warning: {workdir / 'checkpoints'} vanished")
    assert warning.endswith("made it again")
    assert ("while iteration 2 was being saved" in warning) == (not written)
    checkpointer = _tiny_checkpointer(workdir)
    restored = _restore_newest(checkpointer, size)
    assert restored.step == (2 if not written else 3)
    assert float(restored.params["w"][0, 0]) == restored.step
    checkpointer.close()


def test_a_training_run_whose_checkpoints_folder_is_deleted_goes_on(tmp_path, capfd, no_orbax_logs):
    workdir = tmp_path / "run"

    def delete_checkpoints(record):
        if record["iteration"] == 2:  # checkpoint 1 is on disk, or still being written
            delete_folder(workdir / "checkpoints")

    api.train(recovery_config(4), workdir, quiet=True, callback=delete_checkpoints)
    err = capfd.readouterr().err
    (warning,) = [line for line in err.splitlines() if line.strip()]
    assert "checkpoints vanished" in warning and warning.endswith("made it again"), err
    assert checkpoint_steps(workdir) == [2, 3, 4]
    assert iterations(workdir) == [1, 2, 3, 4]
    state = api.train(recovery_config(5), workdir, quiet=True)  # resumes from 4
    assert int(state.iteration) == 5 and iterations(workdir) == [1, 2, 3, 4, 5]


def test_the_checkpoints_folder_vanishing_under_two_saves_in_a_row_stops_the_run(
    tmp_path, capfd, no_orbax_logs
):
    """The first loss is a warning (save again); the second in a row one RunError line."""
    checkpointer = _tiny_checkpointer(tmp_path)
    _save(checkpointer, 1)
    assert checkpointer.wait()

    def vanish(deleted: list):  # deletes once (closing the manager calls it again)
        if not deleted:
            shutil.rmtree(tmp_path / "checkpoints")
            deleted.append(True)
        raise ValueError("Checkpoint directory does not exist: ...")  # as orbax reports it

    for attempt in range(2):
        _save(checkpointer, 2)
        checkpointer._manager.wait_until_finished()  # written, then deleted under the wait
        checkpointer._manager.wait_until_finished = functools.partial(vanish, [])
        if attempt == 0:
            assert not checkpointer.wait()
    with pytest.raises(RunError) as raised:
        checkpointer.wait()
    assert str(raised.value) == (
        f"{tmp_path / 'checkpoints'} vanished while iteration 2 was being saved, more than "
        "once; no checkpoint is left"
    )
    checkpointer.close()
    (warning,) = capfd.readouterr().err.strip().splitlines()
    assert warning == (
        f"azjax: warning: {tmp_path / 'checkpoints'} vanished while iteration 2 was being "
        "saved; made it again"
    )
    assert checkpoint_steps(tmp_path) == []


def test_orbax_log_records_and_closed_event_loops_are_silenced(tmp_path, caplog):
    """orbax's records (its failures reach the caller as exceptions) and the "Event loop is
    closed" errors of reads that orbax gave up on are dropped; nothing else is."""
    _tiny_checkpointer(tmp_path).close()  # installs the filter
    absl = logging.getLogger("absl")
    with caplog.at_level(logging.INFO):
        absl.error("not from orbax: shown")
        absl.handle(
            absl.makeRecord(
                "absl", logging.ERROR, "/venv/orbax/checkpoint/m.py", 1, "hidden", (), None
            )
        )
    assert "not from orbax: shown" in caplog.text and "hidden" not in caplog.text
    seen = []
    hook = faults.quiet_unraisable(seen.append)
    for error in (RuntimeError("Event loop is closed"), RuntimeError("other"), ValueError("x")):
        hook(types.SimpleNamespace(exc_type=type(error), exc_value=error))
    assert [str(u.exc_value) for u in seen] == ["other", "x"]


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_damaged_checkpoints_are_skipped_in_one_line_each(tmp_path, capfd, no_orbax_logs):
    """Random bytes over half the files of a checkpoint of many arrays, as often as a few
    seeds give: one warning line each time, nothing else on stderr."""
    for seed in range(4):
        workdir = tmp_path / str(seed)
        checkpointer = _tiny_checkpointer(workdir)
        params = {f"w{i}": np.ones((50, 100 * (i + 1)), np.float32) for i in range(12)}
        trainer = {f"x{i}": np.arange(1000 * (i + 1), dtype=np.int32) for i in range(12)}
        for step in (1, 2):
            checkpointer.save(step, params, trainer, config={}, metrics=[], force=True)
            checkpointer.wait()
        checkpointer.close()
        rng = random.Random(seed)
        for path in sorted((workdir / "checkpoints" / "2").rglob("*")):
            if path.is_file() and path.stat().st_size > 0 and rng.random() < 0.5:
                path.write_bytes(rng.randbytes(path.stat().st_size))
        checkpointer = _tiny_checkpointer(workdir)
        restored = checkpointer.restore_newest(params, trainer)
        checkpointer.close()
        lines = capfd.readouterr().err.strip().splitlines()
        if restored.step == 1:
            (warning,) = lines
            assert warning.startswith("azjax: warning: skipped checkpoint 2"), lines
        else:  # the random bytes spared what this restore reads
            assert lines == []
