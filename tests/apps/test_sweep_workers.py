"""Sweeps run by several worker processes on one study (slow): nothing lost and nothing run
twice when a worker is killed with SIGKILL mid-trial, in the embedded journal storage and
in a real PostgreSQL server; a worker stopped by SIGTERM re-queues its trial itself (on the
journal file, after the kill)."""

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import optuna
import pytest
from conftest import PYTHON, REPO, free_port, require_program, subprocess_env, tiny_experiment
from optuna.trial import TrialState

from azjax.apps.sweeps import liveness
from azjax.runs.metrics import read_metrics

pytestmark = pytest.mark.slow

ITERATIONS = 40  # long enough (several seconds) for the test to kill a worker mid-trial


def sweep_command(experiment, workdir, *, trials: int, storage: str | None) -> list[str]:
    space = "tic_tac_toe"  # azjax/apps/spaces/tic_tac_toe.py
    command = [PYTHON, "-m", "azjax.apps.cli", "sweep", "--config", str(experiment), "--space",
               space, "--workdir", str(workdir), "--trials", str(trials), "--heartbeat", "1",
               "--grace", "60", "--config.eval.every=4"]  # fmt: skip
    return command + (["--storage", storage] if storage else [])


def start(command, log: Path) -> subprocess.Popen:
    with open(log, "w") as out:
        return subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=subprocess_env(), cwd=REPO
        )


def load(workdir: Path, storage: str | None) -> optuna.Study:
    from azjax.apps.sweeps.report import load_study

    return load_study(workdir, storage=storage)


def wait_for(condition, *, timeout: float, what: str, processes=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        for process in processes:
            assert process.poll() is None, f"a worker exited ({process.returncode}) before {what}"
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def has_checkpoint(run: Path) -> bool:
    folder = run / "checkpoints"
    return folder.is_dir() and any(p.name.isdigit() for p in folder.iterdir())


def running_trial_of(workdir: Path, storage, process, studies: dict) -> Path | None:
    """The directory of the trial `process` runs, once it holds a checkpoint."""
    if not (workdir / "sweep.json").exists():
        return None
    if not studies:  # loaded once: a study re-reads its trials, cheaper than a new storage
        studies["study"] = load(workdir, storage)
    worker = f"{socket.gethostname()}:{process.pid}"
    for trial in studies["study"].get_trials(states=(TrialState.RUNNING,)):
        run = workdir / f"trial_{liveness.root_number(trial):04d}"
        if trial.user_attrs.get(liveness.WORKER) == worker and has_checkpoint(run):
            return run
    return None


def check_every_trial_ran_once(workdir: Path, storage, trials: int) -> list:
    study = load(workdir, storage)
    latest = {}
    for trial in study.get_trials():
        if not trial.user_attrs.get(liveness.SURPLUS):
            latest[liveness.root_number(trial)] = trial
    assert len(latest) == trials
    for root, trial in latest.items():
        assert trial.state == TrialState.COMPLETE, (root, trial.state)
        records = read_metrics(workdir / f"trial_{root:04d}")
        assert [r["iteration"] for r in records] == list(range(1, ITERATIONS + 1))
        assert trial.value == records[-1]["eval/random/score"]
    return study.get_trials()


def kill_one_of_two_workers(tmp_path, storage: str | None, *, then_sigterm: bool = False) -> None:
    """Two workers on 3 trials; the first is killed (SIGKILL) mid-trial and the second
    resumes its trial. `then_sigterm`: the second is then stopped by SIGTERM mid-trial and
    re-queues that trial itself at once, and a third worker (the same command again)
    resumes it, and the killed trial if the second had not, and finishes the study."""
    experiment = tiny_experiment(tmp_path, num_iterations=ITERATIONS, checkpoint_every=4)
    workdir = tmp_path / "sweep"
    command = sweep_command(experiment, workdir, trials=3, storage=storage)
    first = start(command, tmp_path / "first.log")
    second = start(command, tmp_path / "second.log")
    studies = {}

    def checkpointed_trial(worker, which: str) -> Path:
        return wait_for(
            lambda: running_trial_of(workdir, storage, worker, studies),
            timeout=300,
            what=f"the {which} worker's checkpoint",
            processes=(worker,),
        )

    try:
        run = checkpointed_trial(first, "first")
        first.send_signal(signal.SIGKILL)
        first.wait()
        if then_sigterm:
            stopped = checkpointed_trial(second, "second")
            second.send_signal(signal.SIGTERM)
            assert second.wait(timeout=120) == 130, (tmp_path / "second.log").read_text()
        else:
            assert second.wait(timeout=300) == 0, (tmp_path / "second.log").read_text()
    finally:
        for process in (first, second):
            if process.poll() is None:
                process.kill()
                process.wait()
    log = (tmp_path / "second.log").read_text()
    if then_sigterm:
        # Re-queued at once: the stopped trial's newest copy waits for a worker.
        chain = [t for t in load(workdir, storage).get_trials()
                 if liveness.root_number(t) == int(stopped.name[-4:])]  # fmt: skip
        states = [t.state for t in chain]
        assert states[-2:] == [TrialState.FAIL, TrialState.WAITING], states
        again = subprocess.run(
            command, capture_output=True, text=True, env=subprocess_env(), cwd=REPO, timeout=300
        )
        assert again.returncode == 0, again.stdout + again.stderr
        assert f"resuming {stopped} from iteration" in again.stdout
        log += again.stdout
    assert f"resuming {run} from iteration" in log, log
    trials = check_every_trial_ran_once(workdir, storage, 3)
    killed = [t.state for t in trials if liveness.root_number(t) == int(run.name[-4:])]
    assert killed[0] == TrialState.FAIL and killed[-1] == TrialState.COMPLETE, killed
    if not then_sigterm:
        assert killed == [TrialState.FAIL, TrialState.COMPLETE]


@pytest.mark.deep  # CI: the PostgreSQL workers survive a kill
def test_two_journal_workers_survive_a_kill_and_a_sigterm(tmp_path):
    """On the journal file: kill -9 to one worker; SIGTERM to the other, which re-queues
    its trial itself; the same command again resumes what is left and finishes the study.
    (The SIGTERM was a test of its own, one worker on one trial, until 2026-11-28.)"""
    kill_one_of_two_workers(tmp_path, None, then_sigterm=True)


@contextlib.contextmanager
def postgres_server():
    """A PostgreSQL server of its own (initdb in a temporary folder, 127.0.0.1 on a free
    port), run as the `postgres` user when this is root (postgres refuses root); its URL."""
    paths = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    initdb = require_program("initdb", install="apt-get install postgresql", paths=paths)
    bindir = os.path.dirname(os.path.realpath(initdb))  # pg_ctl and createdb beside it
    folder = tempfile.mkdtemp(prefix="azjax_pg_")
    as_user = []
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data = os.path.join(folder, "data")
    port = free_port()

    def run(*command):
        subprocess.run([*as_user, *command], check=True, capture_output=True, timeout=120)

    try:
        run(f"{bindir}/initdb", "-D", data, "-U", "azjax", "--auth=trust", "-E", "UTF8")
        options = f"-p {port} -h 127.0.0.1 -k {folder}"
        run(f"{bindir}/pg_ctl", "-D", data, "-o", options, "-l", f"{folder}/log", "-w", "start")
        run(f"{bindir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "azjax", "sweep")
        yield f"postgresql://azjax@127.0.0.1:{port}/sweep"
    finally:
        if os.path.exists(os.path.join(data, "postmaster.pid")):
            subprocess.run([*as_user, f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop"],
                           capture_output=True, timeout=60)  # fmt: skip
        shutil.rmtree(folder, ignore_errors=True)


def test_two_postgres_workers_survive_a_kill(tmp_path):
    pytest.importorskip("psycopg2")
    with postgres_server() as url:
        kill_one_of_two_workers(tmp_path, url)
