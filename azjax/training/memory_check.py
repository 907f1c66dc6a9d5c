"""Whether a run's state fits in memory, checked before it is allocated.

A replay or a self-play batch too large for memory did not fail: with
`replay.capacity=2000000000` (hundreds of GB for Tic-tac-toe) XLA's allocation waited at 0%
CPU for good, deaf to Ctrl-C and SIGTERM. `check_state` compares the bytes of the state the
devices hold (from `jax.eval_shape` of its `init`: nothing is allocated) with the memory
they can take: each accelerator's free memory (`memory_stats`), and for CPU devices the
memory this process can still allocate on its host (`host_available`), which its CPU devices
share. The compiled steps need more (search trees, activations: `azjax train
--memory-plan`), so this refuses what can never fit, not every run that will not.
"""

import resource

import jax
import numpy as np

from azjax.types import UserError


def _bytes_per_device(tree) -> int:
    """Bytes one device holds of `tree` (ShapeDtypeStructs, with their shardings)."""
    total = 0
    for leaf in jax.tree.leaves(tree):
        sharding = getattr(leaf, "sharding", None)
        shape = leaf.shape if sharding is None else sharding.shard_shape(leaf.shape)
        total += int(np.prod(shape, dtype=np.int64)) * np.dtype(leaf.dtype).itemsize
    return total


def _read_int(path: str) -> int | None:
    """The integer a kernel file holds ("max" and unreadable files: None)."""
    try:
        with open(path) as file:
            return int(file.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _mem_available() -> int | None:
    """Linux's MemAvailable: the host's memory free to new allocations."""
    try:
        with open("/proc/meminfo") as file:
            for line in file:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_available(
    cgroups: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup"
) -> int | None:
    """What this process's memory cgroup (a container's limit: Docker's --memory, a
    Kubernetes pod's) still takes: its limit less its use; None without a limit. In a
    container `/proc/meminfo` shows the whole host's memory, not the limit."""
    try:
        with open(cgroups) as file:
            lines = file.read().splitlines()
    except OSError:
        lines = []
    v2, v1 = ("memory.max", "memory.current"), ("memory.limit_in_bytes", "memory.usage_in_bytes")
    places = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":  # cgroup v2
            places.append((f"{root}{path}", v2))
        elif "memory" in controllers.split(","):  # cgroup v1
            places.append((f"{root}/memory{path}", v1))
    # Inside a container those paths may not be mounted: its own root is its cgroup.
    places += [(root, v2), (f"{root}/memory", v1)]
    for folder, (limit_file, usage_file) in places:
        limit = _read_int(f"{folder.rstrip('/')}/{limit_file}")
        if limit is not None and limit < 2**60:  # v1 writes "no limit" as about 2**63
            return max(0, limit - (_read_int(f"{folder.rstrip('/')}/{usage_file}") or 0))
    return None


def _address_space_available() -> int | None:
    """What `ulimit -v` (RLIMIT_AS) leaves this process: the limit less its virtual size;
    None without a limit. XLA's allocation beyond it failed without a word, and reading the
    state then waited for good (`HostLoop.restore`)."""
    limit, _ = resource.getrlimit(resource.RLIMIT_AS)
    if limit == resource.RLIM_INFINITY:
        return None
    size = 0
    try:
        with open("/proc/self/status") as file:
            for line in file:
                if line.startswith("VmSize:"):
                    size = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return max(0, limit - size)


def host_available() -> int | None:
    """The host memory this process can still allocate: the least of the host's free memory
    (MemAvailable), its container's limit (cgroup) and its `ulimit -v`; None if none is
    known."""
    known = [
        x
        for x in (_mem_available(), _cgroup_available(), _address_space_available())
        if x is not None
    ]
    return min(known) if known else None


def _gib(count: float) -> str:
    return f"{count / 2**30:.1f} GiB"


def check_state(init, *args) -> None:
    """Raises UserError where the state `init(*args)` would make (a jitted function with
    its output shardings) cannot fit in the memory of the devices it goes to."""
    state = jax.eval_shape(init, *args)
    leaves = jax.tree.leaves(state)
    sharding = getattr(leaves[0], "sharding", None) if leaves else None
    devices = list(sharding.addressable_devices) if sharding is not None else jax.local_devices()
    per_device = _bytes_per_device(state)
    replay = _bytes_per_device(getattr(state, "buffer", None))
    if devices[0].platform == "cpu":  # the host's memory, shared by its CPU devices
        copies, free, where = len(devices), host_available(), "to this process on this host"
    else:
        stats = [d.memory_stats() or {} for d in devices]
        if not all("bytes_limit" in s for s in stats):
            return
        free = min(s["bytes_limit"] - s.get("bytes_in_use", 0) for s in stats)
        copies, where = 1, f"on each {devices[0].platform} device"
    if free is None or per_device * copies <= free:
        return
    raise UserError(
        f"the run's state needs {_gib(per_device * copies)} (the replay buffer "
        f"{_gib(replay * copies)}), more than the {_gib(free)} free {where}: lower "
        "replay.capacity or selfplay.batch_size (`azjax train --memory-plan` shows what fits)"
    )
