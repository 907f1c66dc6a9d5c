"""Whether a run's state fits in memory, checked before it is allocated.

A replay or a self-play batch too large for memory did not fail: with
`replay.capacity=2000000000` (hundreds of GB for Tic-tac-toe) XLA's allocation waited at 0%
CPU for good, deaf to Ctrl-C and SIGTERM. `check_state` compares the bytes of the state the
devices hold (from `jax.eval_shape` of its `init`: nothing is allocated) with the memory
they can take: each accelerator's free memory (`memory_stats`), and for CPU devices the
host's available memory (`MemAvailable`), which this process's CPU devices share. The
compiled steps need more (search trees, activations: `azjax train --memory-plan`), so this
refuses what can never fit, not every run that will not.
"""

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


def host_available() -> int | None:
    """The host memory available to new allocations (Linux's MemAvailable), or None."""
    try:
        with open("/proc/meminfo") as file:
            for line in file:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


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
        copies, free, where = len(devices), host_available(), "on this host"
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
