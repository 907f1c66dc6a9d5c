"""One training process at a time in a run directory (`runs.lock`): a second run is refused
in one line naming the first's pid and host, and a run killed with SIGKILL leaves nothing
that stops the next one."""

import os
import signal
import socket
import subprocess
import time

import pytest
from conftest import PYTHON, assert_user_error, subprocess_env, tiny_experiment

from azjax.apps.cli import main
from azjax.runs import lock
from azjax.runs.metrics import read_metrics
from azjax.types import UserError

HOLD_AND_WAIT = """
import sys, time
from pathlib import Path
from azjax.apps.cli import main
from azjax.runs import lock
with lock.hold(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_second_holder_is_refused_naming_the_first(tmp_path):
    with lock.hold(tmp_path / "run"):
        message = f"is in use by pid {os.getpid()} on {socket.gethostname()}"
        with pytest.raises(UserError, match=message), lock.hold(tmp_path / "run"):
            pass
    with lock.hold(tmp_path / "run"):  # released on leaving
        pass


def test_a_process_killed_holding_the_lock_leaves_it_free(tmp_path):
    holder = subprocess.Popen([PYTHON, "-c", HOLD_AND_WAIT, str(tmp_path)], text=True,
                              stdout=subprocess.PIPE, env=subprocess_env())  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match=f"in use by pid {holder.pid} on "):
            with lock.hold(tmp_path):
                pass
    finally:
        holder.kill()
        holder.wait(timeout=30)
    with lock.hold(tmp_path):  # its file is left, naming a process that holds nothing
        assert (tmp_path / lock.NAME).exists()


def test_the_other_processes_of_a_run_take_no_lock(tmp_path):
    with lock.hold(tmp_path), lock.hold(tmp_path, primary=False):
        pass


@pytest.mark.slow
def test_a_second_train_in_a_running_runs_folder_is_refused_and_one_killed_resumes(
    tmp_path, capsys
):
    """`azjax train` twice on one workdir: the second is refused (status 2) while the first
    trains; after the first is killed with SIGKILL, the same command resumes it, each
    iteration in metrics.jsonl once."""
    experiment = tiny_experiment(tmp_path, num_iterations=1000, checkpoint_every=1)
    run = tmp_path / "run"
    argv = ["train", "--config", str(experiment), "--workdir", str(run)]
    first = subprocess.Popen([PYTHON, "-m", "azjax.apps.cli", *argv], text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             env=subprocess_env())  # fmt: skip
    try:
        for line in first.stdout:  # its third iteration: two checkpoints written
            if line.startswith("it    3/"):
                break
        assert first.poll() is None
        assert_user_error(capsys, argv, f"{run} is in use by pid {first.pid} on ")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    time.sleep(0.1)
    done = len(read_metrics(run))
    again = [*argv, f"--config.train.num_iterations={done + 2}"]
    assert main(again) == 0
    iterations = [r["iteration"] for r in read_metrics(run)]
    assert iterations == list(range(1, done + 3))
