"""Trials whose worker died: heartbeats, and claiming and re-queueing abandoned trials.

One mechanism for both storages (Optuna's own heartbeat serves only its RDBStorage): a worker
writes the user attr `worker` ("host:pid") when it starts a trial, and a daemon thread writes
`heartbeat` (unix time) every `interval` seconds while it runs. A RUNNING trial is abandoned
when its newest sign of life (heartbeat, or the start of the trial) is older than `grace`,
or at once when its worker ran on this host and that process is gone (a rerun right after a
kill -9 resumes without waiting).

Claiming is atomic: the claimant sets the trial FAIL and only the worker whose FAIL took
effect re-queues it. In a database the row lock makes the loser's write raise
`UpdateFinishedTrialError`; a journal file accepts both writes (its replay drops the second
silently), so claims hold the sweep directory's lock and re-read the state under it. The
re-queued copy is a WAITING trial with the same parameters and the system attrs of Optuna's
`RetryHeartbeatStaleTrialCallback` (`failed_trial` = the root trial, `retry_history`), which
`study.ask()` pops atomically; it trains in its root trial's directory, so it resumes from
that directory's newest checkpoint.
"""

import contextlib
import os
import socket
import threading
import time

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import FrozenTrial, TrialState

HEARTBEAT = "heartbeat"
WORKER = "worker"
SURPLUS = "surplus"
_LIVENESS_ATTRS = (HEARTBEAT, WORKER)


def worker_name() -> str:
    """This process as a trial's `worker` attr: "host:pid"."""
    return f"{socket.gethostname()}:{os.getpid()}"


def root_number(trial: FrozenTrial) -> int:
    """The number of the first trial of a retry chain (the trial's directory)."""
    return trial.system_attrs.get("failed_trial", trial.number)


def is_retry(trial: FrozenTrial) -> bool:
    return "failed_trial" in trial.system_attrs


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def abandoned(trial: FrozenTrial, *, grace: float, now: float | None = None) -> str | None:
    """Why the RUNNING `trial` counts as abandoned, or None while its worker lives."""
    now = time.time() if now is None else now
    started = trial.datetime_start.timestamp() if trial.datetime_start else 0.0
    beat = trial.user_attrs.get(HEARTBEAT)
    last = max(started, beat if isinstance(beat, int | float) else 0.0)
    if now - last > grace:
        return f"no heartbeat for {now - last:.0f} s"
    host, _, pid = str(trial.user_attrs.get(WORKER, "")).rpartition(":")
    if host == socket.gethostname() and pid.isdecimal() and int(pid) != os.getpid():
        if not _pid_alive(int(pid)):
            return f"its worker (pid {pid}) is gone"
    return None


def claim(
    storage: optuna.storages.BaseStorage,
    trial: FrozenTrial,
    *,
    grace: float,
    lock: contextlib.AbstractContextManager,
) -> FrozenTrial | None:
    """Sets the abandoned `trial` FAIL; the trial as it was if this worker's FAIL took effect
    (so that this worker alone re-queues it), else None (someone else claimed or it lived)."""
    with lock:
        try:
            current = storage.get_trial(trial._trial_id)
        except KeyError:
            return None
        if current.state != TrialState.RUNNING or abandoned(current, grace=grace) is None:
            return None
        try:
            if not storage.set_trial_state_values(current._trial_id, TrialState.FAIL):
                return None
        except UpdateFinishedTrialError:
            return None
    return current


def requeue(study: optuna.Study, trial: FrozenTrial) -> None:
    """Adds a WAITING copy of the failed `trial` (same parameters) that `ask()` will pop."""
    system_attrs = {"failed_trial": trial.number, "retry_history": [], **trial.system_attrs}
    system_attrs["retry_history"] = [*system_attrs["retry_history"], trial.number]
    user_attrs = {k: v for k, v in trial.user_attrs.items() if k not in _LIVENESS_ATTRS}
    study.add_trial(
        optuna.trial.create_trial(
            state=TrialState.WAITING,
            params=trial.params,
            distributions=trial.distributions,
            user_attrs=user_attrs,
            system_attrs=system_attrs,
        )
    )


class Heartbeat:
    """A daemon thread writing the `heartbeat` attr of this worker's running trials.

    A trial that another worker claimed meanwhile (this process was frozen past the grace
    period) is reported by `lost`, so that the worker stops training it.
    """

    def __init__(self, storage: optuna.storages.BaseStorage, interval: float):
        self._storage, self._interval = storage, interval
        self._trials: set[int] = set()
        self._lost: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="azjax-heartbeat", daemon=True)

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def start(self, trial_id: int) -> None:
        """Marks the trial as this worker's (worker attr, a first heartbeat) and keeps it alive."""
        self._storage.set_trial_user_attr(trial_id, WORKER, worker_name())
        self._storage.set_trial_user_attr(trial_id, HEARTBEAT, time.time())
        with self._lock:
            self._trials.add(trial_id)

    def stop(self, trial_id: int) -> None:
        with self._lock:
            self._trials.discard(trial_id)
            self._lost.discard(trial_id)

    def lost(self, trial_id: int) -> bool:
        with self._lock:
            return trial_id in self._lost

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            with self._lock:
                trials = sorted(self._trials - self._lost)
            for trial_id in trials:
                try:
                    self._storage.set_trial_user_attr(trial_id, HEARTBEAT, time.time())
                except UpdateFinishedTrialError:
                    with self._lock:
                        self._lost.add(trial_id)
                except Exception:  # a storage hiccup: the next beat tries again
                    pass
