"""Many hosts, one run: several processes on this machine talking through localhost.

Each process is a child `azjax train` with `--coordinator localhost:PORT --num-processes N
--process-id I` and `XLA_FLAGS=--xla_force_host_platform_device_count=D` (set before jax
starts, so only in a child), its collectives going through gloo (JAX's CPU collectives).
Checked: 2 processes x 2 devices train exactly what 1 process x 4 devices trains, through a
SIGTERM or Ctrl-C to one host that stops every host at the same iteration, saved, and a
resume; a host that never joins, an unreachable coordinator and processes given different
configs end in one line within the timeout; and checkpoints restore on other numbers of
devices and processes.
"""

import json
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import jax
import numpy as np
import pytest
from conftest import PYTHON, REPO, free_port, slurm_environment, subprocess_env, tiny_experiment

from azjax import paths
from azjax.apps import cli
from azjax.config import to_json
from azjax.runs import distributed
from azjax.runs.metrics import read_metrics
from azjax.types import StorageLost, UserError

# Self-play and replay numbers that must agree exactly between device layouts.
EXACT_KEYS = (
    "games",
    "average_game_length",
    "buffer_size",
    "first_player_win_rate",
    "total_games",
    "total_positions",
)
LEARNING_KEYS = ("loss", "value_loss", "policy_loss", "grad_norm", "l2")


def start(
    workdir: Path,
    experiment: Path,
    *,
    processes: int = 1,
    devices: int,
    extra: tuple[str, ...] = (),
    timeout_s: int = 300,
    only: tuple[int, ...] | None = None,
    extra_for: dict[int, tuple[str, ...]] | None = None,
    env: dict[str, str] | None = None,
) -> list[subprocess.Popen]:
    """`azjax train` as `processes` processes of `devices` CPU devices each (only the
    process ids in `only`, when given; `extra_for[I]`: more arguments for process I); their
    stdout and stderr together, line-buffered."""
    env = subprocess_env(
        XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
        JAX_PLATFORMS="cpu",
        PYTHONUNBUFFERED="1",
        **(env or {}),
    )
    port = free_port()
    command = [PYTHON, "-m", "azjax.apps.cli", "train", "--config", str(experiment)]
    command += ["--workdir", str(workdir), *extra]
    children = []
    for index in range(processes) if only is None else only:
        hosts = []
        if processes > 1:
            hosts = ["--coordinator", f"localhost:{port}", "--num-processes", str(processes)]
            hosts += ["--process-id", str(index), "--distributed-timeout", str(timeout_s)]
        hosts += list((extra_for or {}).get(index, ()))
        children.append(
            subprocess.Popen(
                command + hosts,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=env,
                cwd=REPO,
            )
        )
    return children


def finish(children: list[subprocess.Popen], timeout: float = 600) -> list[tuple[int, str]]:
    """(exit status, output) of each child. A child still running after `timeout` seconds
    fails the test with the stacks of every child (SIGABRT: the fault handler prints them,
    `subprocess_env`), so that a hang shows where each process waited."""
    results = []
    for child in children:
        try:
            output = child.communicate(timeout=timeout)[0]
        except subprocess.TimeoutExpired:
            stacks = []
            for index, hung in enumerate(children):
                if index < len(results):  # exited and read already
                    status, text = results[index]
                    stacks.append(f"--- process {index} (exit {status}) ---\n{text[-2000:]}")
                    continue
                if hung.poll() is None:
                    hung.send_signal(signal.SIGABRT)
                try:
                    text = hung.communicate(timeout=30)[0]
                except subprocess.TimeoutExpired:
                    hung.kill()
                    text = hung.communicate()[0]
                stacks.append(f"--- process {index} ---\n{(text or '')[-6000:]}")
            pytest.fail("a child process hung:\n" + "\n".join(stacks))
        results.append((child.returncode, output))
    return results


def train(workdir, experiment, **kwargs) -> list[str]:
    """Runs to the end; every process must exit with status 0. Returns their outputs."""
    results = finish(start(workdir, experiment, **kwargs))
    for status, output in results:
        assert status == 0, output[-4000:]
    return [output for _, output in results]


def iterations(workdir) -> list[int]:
    return [r["iteration"] for r in read_metrics(workdir)]


def checkpoint_steps(workdir) -> list[int]:
    folder = Path(workdir) / "checkpoints"
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())


def read_item(workdir, step: int, item: str) -> dict:
    """A checkpoint item as numpy arrays, whatever devices wrote it."""
    import orbax.checkpoint as ocp  # noqa: PLC0415

    path = Path(workdir) / "checkpoints" / str(step) / item
    checkpointer = ocp.PyTreeCheckpointer()
    metadata = checkpointer.metadata(path)
    tree = metadata.item_metadata.tree if hasattr(metadata, "item_metadata") else metadata.tree
    args = jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), tree)
    return checkpointer.restore(path, args=ocp.args.PyTreeRestore(restore_args=args))


# Fast checks: flags, paths, single-process behaviour of the agreement helpers.


def test_gs_workdir_stays_a_cloud_path():
    path = paths.workdir_path("gs://bucket/runs/c4")
    assert str(path) == "gs://bucket/runs/c4"
    assert str(path / "checkpoints" / "12") == "gs://bucket/runs/c4/checkpoints/12"
    assert not paths.is_local(path)
    assert str(paths.workdir_path(path)) == "gs://bucket/runs/c4"  # idempotent
    # What `Path.resolve()` did before: a local folder named gs:.
    assert str(Path("gs://bucket/runs/c4")) == "gs:/bucket/runs/c4"


def test_copy_tree_copies_files_and_folders(tmp_path):
    source = tmp_path / "a"
    (source / "b" / "c").mkdir(parents=True)
    (source / "x.csv").write_text("1")
    (source / "b" / "c" / "y.jsonl").write_bytes(b"\x00\x01")
    paths.copy_tree(source, tmp_path / "copy")
    assert (tmp_path / "copy" / "x.csv").read_text() == "1"
    assert (tmp_path / "copy" / "b" / "c" / "y.jsonl").read_bytes() == b"\x00\x01"
    paths.copy_tree(tmp_path / "missing", tmp_path / "nothing")
    assert not (tmp_path / "nothing").exists()


class _HungCloudPath:
    """A cloud path (not a `pathlib.Path`) whose writes never get an answer."""

    def __init__(self, name, hung):
        self.name, self._hung = name, hung
        self.parent = self

    def __truediv__(self, name):
        return _HungCloudPath(f"{self.name}/{name}", self._hung)

    def __str__(self):
        return self.name

    def mkdir(self, **kwargs):
        pass

    def write_bytes(self, data):
        self._hung.wait()


@pytest.mark.parametrize("write", ["write_atomically", "copy_tree"])
def test_cloud_writes_that_get_no_answer_stop_within_the_runs_budget(tmp_path, write):
    """After `bound_cloud_writes(T)` (a training run's `train.storage_timeout_s`), a write
    to cloud storage that never returns raises StorageLost after T seconds, in one line
    that names the file and says how to resume; with no budget (0) it waits."""
    hung = threading.Event()
    bucket = _HungCloudPath("gs://bucket/run", hung)
    (tmp_path / "tensorboard").mkdir()
    (tmp_path / "tensorboard" / "events").write_bytes(b"x")

    def attempt():
        if write == "write_atomically":
            paths.write_atomically(bucket / "metrics.jsonl", b"{}")
        else:
            paths.copy_tree(tmp_path, bucket)

    try:
        paths.bound_cloud_writes(0.3)
        started = time.monotonic()
        with pytest.raises(StorageLost) as lost:
            attempt()
        assert time.monotonic() - started < 5
        said = str(lost.value)
        assert said.startswith("lost the connection to gs://bucket/run/"), said
        assert "no answer within 0.3 s (train.storage_timeout_s)" in said and "\n" not in said
        assert "run the same command again" in said, said
        paths.bound_cloud_writes(0)
        unbounded = threading.Thread(target=attempt, daemon=True)
        unbounded.start()
        unbounded.join(0.6)
        assert unbounded.is_alive()  # still waiting for the storage's own answer
    finally:
        paths.bound_cloud_writes(0)
        hung.set()


def test_local_workdirs_stay_as_given(tmp_path):
    assert paths.workdir_path("runs/c4") == Path("runs/c4")
    assert isinstance(paths.workdir_path(tmp_path), Path)
    assert paths.workdir_path(tmp_path) == tmp_path
    assert paths.is_local(paths.workdir_path("runs/c4"))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--num-processes", "2"], "go together"),
        (["--coordinator", "localhost:1", "--num-processes", "2"], "missing --process-id"),
        (["--coordinator", "localhost", "--num-processes", "2", "--process-id", "0"], "HOST:PORT"),
        (["--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"], "between 0 and 1"),
    ],
)
def test_distributed_flags_are_checked_before_joining(argv, message, capsys):
    assert cli.main(["train", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("azjax: error: ") and message in err and len(err.splitlines()) == 1


def test_single_process_needs_no_distributed_setup(tiny, tmp_path):
    assert distributed.initialize() is False
    assert distributed.process_count() == 1 and distributed.is_primary()
    assert distributed.any_process(True, False) == (True, False)
    assert distributed.agree(1.5) == 1.5
    distributed.check_same_run(to_json(tiny), tmp_path)  # nothing to compare with
    tree = {"a": jax.numpy.arange(3), "b": np.float32(2)}
    host = distributed.to_host(tree)
    np.testing.assert_array_equal(host["a"], [0, 1, 2])
    with pytest.raises(UserError, match="go together"):
        distributed.initialize(num_processes=2)


# Failures to start: one line within the timeout, not a hang.


@pytest.mark.parametrize("process_id", [0, 1])
def test_a_host_that_never_joins_is_a_clear_error_within_the_timeout(tmp_path, process_id):
    """Process 0 alone waits for process 1 (which never starts); process 1 alone finds no
    coordinator."""
    experiment = tiny_experiment(tmp_path, num_iterations=1, checkpoint_every=1)
    started = time.monotonic()
    [child] = start(
        tmp_path / "run", experiment, processes=2, devices=1, timeout_s=5, only=(process_id,)
    )
    [(status, output)] = finish([child], timeout=120)
    assert time.monotonic() - started < 60
    assert status == 2, output
    lines = [line for line in output.splitlines() if line.startswith("azjax")]
    assert lines == [lines[-1]] and lines[-1].startswith(f"azjax: error: process {process_id}:")
    assert "did not all join the coordinator" in lines[-1] and "within 5 s" in lines[-1]
    assert "Traceback" not in output


@pytest.mark.slow
def test_processes_with_different_configs_stop_with_one_line(tmp_path):
    experiment = tiny_experiment(tmp_path, num_iterations=1, checkpoint_every=1)
    children = start(
        tmp_path / "run", experiment, processes=2, devices=1, extra_for={1: ("--config.seed=7",)}
    )
    for status, output in finish(children, timeout=300):
        assert status == 2, output
        assert "azjax: error: the processes of this run were given different configs" in output
        assert "Traceback" not in output
    assert not (tmp_path / "run" / "checkpoints").exists()


AUTO_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
import jax
from conftest import tiny_config
from azjax.config import to_json
from azjax.runs import distributed
from azjax.types import UserError

assert distributed.initialize(auto=True, timeout_s=60)  # from the SLURM variables
index = jax.process_index()
assert (jax.process_count(), jax.device_count(), len(jax.local_devices())) == (2, 4, 2)
assert distributed.any_process(index == 1, False) == (True, False)
assert distributed.agree(10.0 + index) == 10.0  # process 0's value everywhere
distributed.check_same_run(to_json(tiny_config()), "runs/same")
try:
    distributed.check_same_run(to_json(tiny_config()), f"runs/process{{index}}")
except UserError as error:
    print("refused:", error)
"""


def test_distributed_auto_reads_a_slurm_environment(tmp_path):
    """`--distributed auto` (the Python API here): JAX's cluster detection finds the
    processes in SLURM's variables; processes given different workdirs are refused."""
    env = subprocess_env(
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
        JAX_PLATFORMS="cpu",
        **slurm_environment(2),
    )
    script = AUTO_SCRIPT.format(tests=str(Path(REPO) / "tests"))
    children = [
        subprocess.Popen(
            [PYTHON, "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**env, "SLURM_PROCID": str(index)},
        )
        for index in range(2)
    ]
    for status, output in finish(children, timeout=180):
        assert status == 0, output[-3000:]
        assert "refused: the processes of this run were given different workdirs" in output


# Training over two processes.


def _same_state(path, actual, desired) -> None:
    """Integer-exact, except the searched root values kept for value-target mixing: floats
    the network computes, which differ in the last bits between device layouts as the
    learning does (checked to the same tolerance)."""
    if "root_value" in jax.tree_util.keystr(path):
        np.testing.assert_allclose(actual, desired, rtol=1e-4, atol=1e-5)
    else:
        np.testing.assert_array_equal(actual, desired)


def wait_for_line(child: subprocess.Popen, prefix: str) -> str:
    seen = []
    for line in child.stdout:
        seen.append(line)
        if line.startswith(prefix):
            return "".join(seen)
    text = "".join(seen)
    azjax = [line for line in seen if line.startswith("azjax")]
    pytest.fail(f"the run ended before {prefix!r}:\n{''.join(azjax)}...\n{text[-3000:]}")


# SIGINT in deep (CI time budget): its stop is agreed through `distributed.any_process`,
# the collective every multi-process run in CI calls each iteration (its flags false there).
@pytest.mark.parametrize(
    "signal_name",
    [
        pytest.param("SIGTERM", marks=pytest.mark.deep),  # CI: the killed-process test below
        pytest.param("SIGINT", marks=pytest.mark.deep),
    ],
)
def test_two_processes_stopped_by_a_signal_to_one_and_resumed_train_as_one_process(
    tmp_path, signal_name
):
    """2 processes x 2 devices train what 1 process x 4 devices trains straight, through a
    stop: SIGTERM (a preemption notice: JAX's sync point, orbax's preemption save) or
    Ctrl-C to process 1 only stops both processes after the same iteration, which is saved;
    both exit with 130, and the same two processes resume the run to its end. Self-play and
    replay agree exactly, learning to float tolerance; process 0 alone prints and writes the
    run's files. (Two tests until 2026-11-28: the same two layouts straight, and the stop
    resumed in one process of one device; 2 hosts -> 2 tasks of other devices is
    `tests/test_cloud.py`'s SLURM resume.)"""
    last = 8  # the signal comes after iteration 2; the stop is agreed an iteration or so on
    experiment = tiny_experiment(tmp_path, num_iterations=last, checkpoint_every=4)
    many, one = tmp_path / "two_processes", tmp_path / "one_process"
    train(one, experiment, devices=4)

    children = start(many, experiment, processes=2, devices=2)
    before = wait_for_line(children[0], "it    2")
    children[1].send_signal(getattr(signal, signal_name))
    (status0, output0), (status1, output1) = finish(children, timeout=300)
    output0 = before + output0
    assert status0 == status1 == 130, output0[-3000:] + output1[-3000:]
    word = "preempted" if signal_name == "SIGTERM" else "interrupted"
    assert f"{word}: saved iteration" in output0, output0[-3000:]
    assert "Traceback" not in output0 + output1
    stopped = checkpoint_steps(many)[-1]
    assert 2 <= stopped < last and iterations(many) == list(range(1, stopped + 1))
    assert "on 4 cpu device(s)" in output0
    assert "it " not in output1 and "done" not in output1

    outputs = train(many, experiment, processes=2, devices=2)
    assert f"resuming {many} from iteration {stopped}" in outputs[0]
    assert f"done: {last} iterations" in outputs[0], outputs[0][-3000:]
    assert "it " not in outputs[1] and "done" not in outputs[1]
    assert json.loads((many / "config.json").read_text()) == json.loads(
        (one / "config.json").read_text()
    )
    records, expected = read_metrics(many), read_metrics(one)
    assert [r["iteration"] for r in records] == list(range(1, last + 1))
    for record, reference in zip(records, expected, strict=True):
        for key in EXACT_KEYS:
            assert record[key] == reference[key], key
        for key in LEARNING_KEYS:
            np.testing.assert_allclose(record[key], reference[key], rtol=1e-4, atol=1e-5)
    # The saved state: self-play, replay, counters and key integer-exact; learning (and the
    # searched root values in the replay) to float tolerance.
    trainer, reference = read_item(many, last, "trainer"), read_item(one, last, "trainer")
    for name in reference:
        if name in ("opt_state", "elapsed"):
            continue
        jax.tree_util.tree_map_with_path(_same_state, trainer[name], reference[name])
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5),
        (trainer["opt_state"], read_item(many, last, "params")),
        (reference["opt_state"], read_item(one, last, "params")),
    )


def test_the_coordinator_watch_calls_lost_once_its_port_refuses_and_not_after_stop():
    """`CoordinatorWatch` (processes other than 0): quiet while the coordinator's port takes
    connections, one call of `lost` naming it soon after the port closes; a watch stopped
    (the run ended) says nothing when it closes."""
    server = socket.create_server(("127.0.0.1", 0))
    address = f"127.0.0.1:{server.getsockname()[1]}"
    said, called = [], threading.Event()
    watch = distributed.CoordinatorWatch(
        address, lambda message: (said.append(message), called.set()), interval_s=0.05
    )
    stopped = distributed.CoordinatorWatch(address, said.append, interval_s=0.05)
    time.sleep(0.5)
    assert said == []
    stopped.stop()
    server.close()
    assert called.wait(5)
    time.sleep(0.3)
    assert len(said) == 1 and f"its coordinator at {address} stopped answering" in said[0]
    assert said[0].startswith("lost the connection to process 0 of this run"), said[0]
    watch.stop()


def test_after_a_lost_process_only_process_0_waits_for_its_saves_and_briefly(monkeypatch):
    """A process other than 0 that lost another does not wait for its saves in flight (JAX's
    client aborts it in their barrier); process 0 waits a while; other errors, and a run of
    one process, wait as usual."""
    gloo = ValueError("UNKNOWN: Gloo AllGather failed: Connection closed by peer")
    assert distributed.saves_wait_s(gloo) is None  # one process
    monkeypatch.setattr(distributed, "process_count", lambda: 2)
    for index, expected in ((0, distributed.LOST_PROCESS_SAVE_WAIT_S), (1, 0.0)):
        monkeypatch.setattr(jax, "process_index", lambda index=index: index)
        assert distributed.saves_wait_s(gloo) == expected
        assert distributed.saves_wait_s(ConnectionRefusedError("refused")) == expected
        assert distributed.saves_wait_s(ValueError("a bug")) is None


@pytest.mark.slow
@pytest.mark.parametrize("killed", [pytest.param(0, marks=pytest.mark.deep), 1])  # CI: one
def test_a_process_killed_stops_the_other_with_one_line_and_both_resume(tmp_path, killed):
    """kill -9 of either process of two: the other stops at once with one line that says a
    process was lost and how to resume (status 1, no abort, no stack trace). Process 1 lost
    fails a collective in process 0; process 0 lost takes the coordination service with it,
    which `CoordinatorWatch` sees before JAX's client would abort process 1. After process 0
    was killed the two processes resume the run from its checkpoints, compiling again: the
    programs the first run left in JAX's persistent compilation cache (every one, in a cache
    of this test's own) would wait forever in their first collective."""
    last = 12
    experiment = tiny_experiment(tmp_path, num_iterations=last, checkpoint_every=2)
    workdir = tmp_path / "run"
    cache = {
        "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "jax_cache"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    }
    children = start(workdir, experiment, processes=2, devices=1, env=cache)
    # Process 0 finishes each save; after iteration 5 the save of iteration 2 is finished.
    wait_for_line(children[0], "it    5")
    children[killed].kill()
    survivor = 1 - killed
    ((status, output),) = finish([children[survivor]], timeout=240)
    children[killed].wait()
    said = [line for line in output.splitlines() if line.startswith("azjax")]
    assert status == 1 and "Traceback" not in output, output[-3000:]
    assert len(said) == 1, output[-3000:]
    # Process 1 learns of process 0's end from a collective (gloo) or from the watch,
    # whichever comes first.
    lost = ("another process of this run", "process 0 of this run")[: 2 - killed]
    assert any(said[0].startswith(f"azjax: error: lost the connection to {w}") for w in lost)
    assert "run the same command again (on every host) to resume" in said[0], said[0]
    assert "storage" not in said[0], said[0]  # a peer that closed is a process, not storage
    saved = checkpoint_steps(workdir)[-1]
    assert saved >= 2
    if killed == 1:
        return
    outputs = train(workdir, experiment, processes=2, devices=1, env=cache)
    assert f"resuming {workdir} from iteration {saved}" in outputs[0], outputs[0][-3000:]
    assert f"done: {last} iterations" in outputs[0]
    assert [r["iteration"] for r in read_metrics(workdir)] == list(range(1, last + 1))


# Restore anywhere: a checkpoint written on some devices resumes on others.


@pytest.mark.deep  # CI: test_sharding relayouts a run from 8 devices to 1 and back in one process
def test_checkpoints_restore_on_eight_devices_and_on_one(tmp_path):
    """8 devices -> 1 device -> 8 devices, two iterations each."""
    experiment = tiny_experiment(tmp_path, num_iterations=2, checkpoint_every=1)
    workdir = tmp_path / "run"
    train(workdir, experiment, devices=8)
    for devices, last in ((1, 4), (8, 6)):
        more = (f"--config.train.num_iterations={last}",)
        [output] = train(workdir, experiment, devices=devices, extra=more)
        assert f"resuming {workdir} from iteration {last - 2}" in output, output[-3000:]
        assert f"on {devices} cpu device(s)" in output
        assert iterations(workdir) == list(range(1, last + 1))
        assert checkpoint_steps(workdir)[-1] == last


# Populations across hosts: the members' vmapped program spans every process's devices.

POPULATION_CHILD = """
import sys
from pathlib import Path

sys.path.insert(0, {tests!r})
from conftest import tiny_config

from azjax.apps import api
from azjax.runs import distributed
from azjax.training.pbt import PBT

root, port = Path(sys.argv[1]), sys.argv[4]
processes, process_id = int(sys.argv[2]), int(sys.argv[3])
if processes > 1:
    distributed.initialize(f"localhost:{{port}}", processes, process_id, timeout_s=120)
configs = []
for index in range(int(sys.argv[5])):
    config = tiny_config()
    config.seed = index
    config.learner.learning_rate *= 1 + index
    config.train.num_iterations = 4
    config.eval.every = 2
    config.eval.num_games = 4
    configs.append(config)
pbt = PBT(every=2, objective="eval/random/score", fraction=0.5)
api.train_population(
    configs, [root / f"m{{i}}" for i in range(len(configs))], progress="lines", pbt=pbt
)
"""


MEMBERS = 4


def start_population(root: Path, *, processes: int, devices: int) -> list[subprocess.Popen]:
    """A 4-member PBT population of `tiny_config` as `processes` processes of `devices` CPU
    devices each; their stdout and stderr together, line-buffered."""
    env = subprocess_env(
        XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
        JAX_PLATFORMS="cpu",
        PYTHONUNBUFFERED="1",
    )
    script = POPULATION_CHILD.format(tests=str(Path(REPO) / "tests"))
    port = str(free_port())
    argv = [str(root), str(processes)]
    return [
        subprocess.Popen(
            [PYTHON, "-c", script, *argv, str(index), port, str(MEMBERS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=REPO,
        )
        for index in range(processes)
    ]


def train_population(root: Path, *, processes: int, devices: int) -> list[str]:
    """Runs `start_population` to the end; every process must exit with status 0."""
    results = finish(start_population(root, processes=processes, devices=devices))
    for status, output in results:
        assert status == 0, output[-4000:]
    return [output for _, output in results]


# Deep (CI time budget): in CI a sweep worker trains populations over two processes
# (below), and test_population compares a population with its members trained alone.
@pytest.mark.deep
def test_a_population_spans_two_processes_as_it_runs_in_one(tmp_path):
    """A 4-member PBT population as 2 processes x 2 devices, killed (SIGKILL, no notice)
    during its fourth iteration and resumed as 1 process x 4 devices, trains what 1 process
    x 4 devices trains straight: the members' self-play exactly, their learning to float
    tolerance, the same PBT decisions (process 0 evaluates; every process decides on its
    values); process 0 alone prints and writes files."""
    many, one = tmp_path / "two_processes", tmp_path / "one_process"
    children = start_population(many, processes=2, devices=2)
    before = wait_for_line(children[0], f"[m{MEMBERS - 1}] it    3")
    for child in children:
        child.kill()
    (_, _), (_, output1) = finish(children)
    assert f"training a population of {MEMBERS}" in before and "[m1] it" in before
    assert "training a population" not in output1 and "it " not in output1
    for index in range(MEMBERS):  # iteration 2's checkpoint, written by both processes
        assert checkpoint_steps(many / f"m{index}")[:1] == [2]
    [resumed] = train_population(many, processes=1, devices=4)
    assert "from iteration" in resumed, resumed[-3000:]
    train_population(one, processes=1, devices=4)
    for name in (f"m{index}" for index in range(MEMBERS)):
        records, expected = read_metrics(many / name), read_metrics(one / name)
        assert [r["iteration"] for r in records] == [1, 2, 3, 4]
        for record, reference in zip(records, expected, strict=True):
            for key in EXACT_KEYS:
                assert record[key] == reference[key], (name, key)
            for key in LEARNING_KEYS:
                np.testing.assert_allclose(record[key], reference[key], rtol=1e-4, atol=1e-5)
            assert record.get("eval/random/score") == reference.get("eval/random/score")
        assert [r["iteration"] for r in records if "eval/random/score" in r] == [2, 4]
        assert (many / name / "pbt.jsonl").read_text() == (one / name / "pbt.jsonl").read_text()
        assert checkpoint_steps(many / name) == checkpoint_steps(one / name)


@pytest.mark.deep  # CI: test_sweep_workers (one study) and the killed-process test
@pytest.mark.slow
def test_a_sweep_worker_spans_two_processes(tmp_path):
    """`azjax sweep --population 2` as two processes of one device each (a pod slice of two
    hosts): process 0 asks Optuna and writes the sweep; both train each batch as one
    population over the two devices; every trial finishes with a value, process 1 prints
    nothing of its own and exits 0 with process 0."""
    experiment = tiny_experiment(tmp_path, num_iterations=4, checkpoint_every=2)
    workdir = tmp_path / "sweep"
    env = subprocess_env(
        XLA_FLAGS="--xla_force_host_platform_device_count=1",
        JAX_PLATFORMS="cpu",
        PYTHONUNBUFFERED="1",
    )
    port = free_port()
    command = [PYTHON, "-m", "azjax.apps.cli", "sweep", "--config", str(experiment), "--space",
               "tic_tac_toe", "--workdir", str(workdir), "--trials", "2", "--population", "2",
               "--config.eval.every=2", "--coordinator", f"localhost:{port}",
               "--num-processes", "2", "--distributed-timeout", "120"]  # fmt: skip
    children = [
        subprocess.Popen(
            [*command, "--process-id", str(index)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=REPO,
        )
        for index in range(2)
    ]
    (status0, output0), (status1, output1) = finish(children)
    assert status0 == status1 == 0, output0[-3000:] + output1[-3000:]
    assert "training a population of 2" in output0 and "on 2 cpu device(s)" in output0
    assert "trial 0: done" in output0 and "trial 1: done" in output0, output0[-3000:]
    assert "trial" not in output1 and "training" not in output1, output1[-3000:]
    for trial in ("trial_0000", "trial_0001"):
        assert iterations(workdir / trial) == [1, 2, 3, 4]
        assert checkpoint_steps(workdir / trial) == [2, 4]
