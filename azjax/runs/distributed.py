"""Many hosts, one run: `jax.distributed` set up with a deadline, and what processes agree on.

`azjax train` on every host of a pod or cluster, the same command plus `--coordinator
HOST:PORT --num-processes N --process-id I` (or `--distributed auto`, which reads the
environment of Cloud TPU, SLURM, Open MPI and the other clusters `jax.distributed` knows),
trains one run over the global mesh of every device of every process:

    initialize("10.0.0.1:1234", 2, 0)        # before any JAX computation, in every process
    check_same_run(settings.config_json, workdir)   # train.train does this itself

Every process runs the same program (SPMD): the same jitted steps in the same order, each
feeding its own devices. Only process 0 writes the run's files (config, metrics, TensorBoard)
and prints; every process takes part in checkpoint saves and restores (orbax is multi-host
aware). Host-side decisions that could differ between processes (a signal received by one
host, a wall-clock deadline) are agreed on with a small collective (`any_process`, `agree`),
so no process waits forever for another that stopped.

Failures to start are one-line `UserError`s within `timeout_s`: a host that never joins, an
unreachable coordinator (`JoinError`), and processes given different configs or workdirs.
A process whose join failed cannot use JAX's distributed runtime any more and should exit
(`azjax train` exits with status 2 at once).

Process 0 serves the coordination. When it is gone, JAX's client in every other process
aborts it (a fatal log and a stack trace) within seconds to a minute; `CoordinatorWatch`
notices first, from the coordinator's port, and hands over one line to say instead.
"""

import hashlib
import json
import socket
import threading
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils

from azjax.faults import first_line, is_lost_peer, is_unreachable, within
from azjax.types import UserError

DEFAULT_TIMEOUT_S = 300.0
_settings = {"timeout_s": DEFAULT_TIMEOUT_S}


class JoinError(UserError):
    """The processes of a run did not all start and meet within the timeout."""


def _check_coordinator(coordinator: str) -> None:
    host, sep, port = coordinator.rpartition(":")
    if not sep or not host or not port.isdecimal() or not 1 <= int(port) <= 65535:
        raise UserError(f"--coordinator must be HOST:PORT (port 1-65535), got {coordinator!r}")


def initialize(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    auto: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> bool:
    """Joins this process to a multi-process run (`jax.distributed.initialize`).

    Call it in every process before any JAX computation. With nothing given (and `auto`
    False) it does nothing: a single-process run.

    Args:
      coordinator: "HOST:PORT" of process 0, which serves the coordination; every process
        connects to it.
      num_processes: the number of processes of the run.
      process_id: this process's index in [0, num_processes).
      auto: read what is not given from the environment (Cloud TPU, SLURM, Open MPI, ...:
        `jax.distributed`'s cluster detection).
      timeout_s: how long to wait for every process to join (and, later, for the checks
        that they agree); JAX's own shutdown barrier waits as long.

    Returns:
      True when this process is part of a distributed run (also when JAX's distributed
      runtime was initialised before, by the caller).

    Raises:
      UserError: flags missing or out of range, no cluster found by `auto`, JAX already
        computing before this call.
      JoinError: the processes did not all join within `timeout_s` (a host that never
        started, another --num-processes, an unreachable coordinator).
    """
    explicit = (coordinator, num_processes, process_id)
    if jax.distributed.is_initialized():
        _settings["timeout_s"] = timeout_s
        return True
    if not auto and all(value is None for value in explicit):
        return False
    if not auto and any(value is None for value in explicit):
        flags = ("--coordinator", "--num-processes", "--process-id")
        missing = ", ".join(f for f, v in zip(flags, explicit, strict=True) if v is None)
        raise UserError(
            "--coordinator, --num-processes and --process-id go together (or --distributed "
            f"auto on a cluster); missing {missing}"
        )
    if coordinator is not None:
        _check_coordinator(coordinator)
    if num_processes is not None and num_processes < 1:
        raise UserError(f"--num-processes must be at least 1, got {num_processes}")
    if process_id is not None and num_processes is not None:
        if not 0 <= process_id < num_processes:
            raise UserError(
                f"--process-id must be between 0 and {num_processes - 1}, got {process_id}"
            )
    if timeout_s <= 0:
        raise UserError(f"the distributed timeout must be positive, got {timeout_s}")
    # Collectives between processes on CPU (tests, CPU clusters) go through gloo; jax 0.10's
    # default already, set where an older default ("none") would leave CPU processes apart.
    if jax.config.jax_cpu_collectives_implementation in (None, "", "none"):
        jax.config.update("jax_cpu_collectives_implementation", "gloo")

    def join():
        # JAX's own deadline comes later than ours: at its deadline it aborts the process
        # (a fatal log and a stack trace), where ours is one line.
        jax.distributed.initialize(
            coordinator,
            num_processes,
            process_id,
            initialization_timeout=int(timeout_s) + 60,
            shutdown_timeout_seconds=max(1, int(timeout_s)),
        )

    who = "this process" if process_id is None else f"process {process_id}"
    where = f" at {coordinator}" if coordinator else ""
    size = f"the {num_processes} processes" if num_processes else "the processes"
    try:
        late = (
            f"{who}: {size} did not all join the coordinator{where} within {timeout_s:g} s (a "
            "host that never started or failed before joining, another --num-processes, or "
            "a coordinator that cannot be reached)"
        )
        within(timeout_s, join, JoinError(late))
    except JoinError:
        raise
    except (ValueError, RuntimeError, TypeError) as error:
        text = first_line(error)
        if "before any JAX computations" in text or "must be called before" in text:
            raise UserError(
                "azjax.runs.distributed.initialize must be called before any JAX computation"
            ) from None
        if auto:
            raise UserError(
                f"--distributed auto found no cluster to join ({text}); pass --coordinator, "
                "--num-processes and --process-id"
            ) from None
        raise UserError(f"cannot join the distributed run: {text}") from None
    _settings["timeout_s"] = timeout_s
    if jax.devices()[0].platform == "cpu" and jax.config.jax_enable_compilation_cache:
        # A CPU program that collects between processes, read back from JAX's persistent
        # compilation cache (JAX_COMPILATION_CACHE_DIR), waits forever in its first
        # collective (jax 0.10): such runs compile.
        jax.config.update("jax_enable_compilation_cache", False)
    return True


class CoordinatorWatch:
    """Watches the coordinator of a multi-process run from a process other than 0, through
    a connection to its port held open: when process 0 ends, its end of the connection
    closes at once, and a new connection is refused (nothing listens there any more; a
    connection the coordinator closed itself is made again); when `misses` connections in
    a row get no answer within `interval_s`, its host is gone. Then `lost(message)` is
    called, in the watch's thread (it should exit the process). `stop()` before the
    processes' shutdown, which process 0 outlives, so a run that ends never calls it."""

    def __init__(
        self,
        coordinator: str,
        lost: Callable[[str], None],
        *,
        interval_s: float = 0.5,
        misses: int = 3,
    ):
        host, _, port = coordinator.rpartition(":")
        self._address = (host.strip("[]"), int(port))
        self._coordinator, self._lost = coordinator, lost
        self._interval_s, self._misses = interval_s, misses
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="azjax-coordinator", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        missed = 0
        while missed < self._misses and not self._stopped.is_set():
            try:
                connection = socket.create_connection(self._address, timeout=self._interval_s)
            except ConnectionRefusedError:
                break
            except OSError:
                missed += 1
                self._stopped.wait(self._interval_s)
                continue
            missed = 0
            with connection:
                self._hold(connection)
        if not self._stopped.is_set():
            self._lost(
                f"lost the connection to process 0 of this run (its coordinator at "
                f"{self._coordinator} stopped answering); what was saved is kept: run the "
                "same command again (on every host) to resume"
            )

    def _hold(self, connection: socket.socket) -> None:
        """Returns when the connection closes, or the watch stops."""
        connection.settimeout(self._interval_s)  # to see `stop()` in time
        while not self._stopped.is_set():
            try:
                if not connection.recv(4096):
                    return
            except TimeoutError:
                continue
            except OSError:
                return

    def stop(self) -> None:
        self._stopped.set()


# How long a process that lost another waits for its saves in flight. Process 0 finishes a
# save that every process had written (past the barrier after the writes only the commit is
# left, seconds; before it, the save never ends); a process other than 0 would wait for the
# coordination service of process 0, gone, and JAX's client aborts it there: it does not.
LOST_PROCESS_SAVE_WAIT_S = 10.0


def saves_wait_s(error: BaseException) -> float | None:
    """How long to wait for the saves in flight after `error`: None (as long as they take)
    unless it says that another process of a multi-process run is gone (a collective or the
    coordination service did not answer); then `LOST_PROCESS_SAVE_WAIT_S` in process 0 and
    0 in the others."""
    if process_count() == 1 or not (is_lost_peer(error) or is_unreachable(error)):
        return None
    return LOST_PROCESS_SAVE_WAIT_S if is_primary() else 0.0


def process_count() -> int:
    """The number of processes of the run (1 without `jax.distributed`)."""
    return jax.process_count()


def is_primary() -> bool:
    """Whether this is process 0, the one that writes the run's files and prints."""
    return jax.process_index() == 0


def _gather(values: np.ndarray) -> np.ndarray:
    """[P, ...]: `values` of every process, in process order (a collective)."""
    return np.asarray(multihost_utils.process_allgather(values))


def _digest(text: str) -> np.ndarray:
    """[8] int32: the SHA-256 of `text` in a form every backend gathers exactly."""
    return np.frombuffer(hashlib.sha256(text.encode()).digest(), dtype=np.int32).copy()


def check_same_run(config_json: str, workdir) -> None:
    """Raises UserError on every process when the processes were given different resolved
    configs (`config_json`: `Settings.config_json`) or workdirs (each process compares every
    other's hash with its own).

    Does nothing in a single-process run.

    Raises:
      UserError: the configs or the workdirs differ (or a process never got this far
        within the timeout).
    """
    if process_count() == 1:
        return
    mine = np.stack([_digest(config_json), _digest(str(workdir))])
    timeout_s = _settings["timeout_s"]
    late = (
        f"process {jax.process_index()}: not every process reached the config check within "
        f"{timeout_s:g} s"
    )
    gathered = within(timeout_s, lambda: _gather(mine), JoinError(late))
    for index, what, fix in (
        (0, "configs", "the same --config file, overrides and experiment files"),
        (1, "workdirs", "the same --workdir, on storage every host shares"),
    ):
        first = gathered[0][index]
        differ = [p for p in range(len(gathered)) if not np.array_equal(gathered[p][index], first)]
        if differ:
            names = ", ".join(map(str, differ))
            raise UserError(
                f"the processes of this run were given different {what}: process(es) {names} "
                f"differ from process 0; every host needs {fix}"
            )


def any_process(*flags: bool) -> tuple[bool, ...]:
    """For each flag, whether it is true on any process (a collective: every process must
    call it at the same point with as many flags)."""
    if process_count() == 1:
        return tuple(bool(flag) for flag in flags)
    gathered = _gather(np.asarray([int(bool(flag)) for flag in flags], dtype=np.int32))
    return tuple(bool(value) for value in np.any(gathered.reshape(-1, len(flags)), axis=0))


def agree(value: float) -> float:
    """Process 0's `value`, on every process (a collective: every process calls it)."""
    if process_count() == 1:
        return value
    return float(multihost_utils.broadcast_one_to_all(np.float32(value)))


def broadcast_json(value: Any = None) -> Any:
    """Process 0's `value` (anything `json` writes), on every process (a collective)."""
    if process_count() == 1:
        return value
    data = json.dumps(value).encode() if is_primary() else b""
    size = int(multihost_utils.broadcast_one_to_all(np.int32(len(data))))
    buffer = np.zeros(size, np.uint8)
    if is_primary():
        buffer[:] = np.frombuffer(data, np.uint8)
    return json.loads(bytes(np.asarray(multihost_utils.broadcast_one_to_all(buffer))).decode())


def barrier(name: str) -> None:
    """Waits until every process has reached the barrier `name` (nothing with one process)."""
    if process_count() > 1:
        multihost_utils.sync_global_devices(name)


def to_host(tree: Any) -> Any:
    """`jax.device_get` that also reads arrays spread over several processes.

    Arrays that this process holds entirely, or a replica of, are read locally; arrays
    sharded over other processes' devices are gathered (a collective: every process must
    call it with the same tree).
    """

    def leaf(value):
        if isinstance(value, jax.Array):
            # A computation that failed (an allocation) raises here; `device_get` of an
            # output beside the one that failed would wait for good, deaf to signals (jaxlib).
            value.block_until_ready()
        if isinstance(value, jax.Array) and not value.is_fully_addressable:
            if value.is_fully_replicated:
                return np.asarray(value.addressable_data(0))
            return np.asarray(multihost_utils.process_allgather(value, tiled=True))
        return jax.device_get(value)

    return jax.tree.map(leaf, tree)
