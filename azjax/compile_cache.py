"""JAX's persistent compilation cache for the commands: a config run again reads its compiled
programs from disk instead of compiling them (`azjax train`'s first line in seconds).

On by default for `azjax train`, `azjax sweep` and `azjax frontier`, in `$XDG_CACHE_HOME/azjax/jax`
(`~/.cache/azjax/jax`); `JAX_COMPILATION_CACHE_DIR` names another folder, and
`AZJAX_COMPILATION_CACHE=0` or `--no-compile-cache` turns it off. A multi-process CPU run
turns it off itself (`runs.distributed.initialize`). A program read back is the program
compiled, so results are bit for bit those of a compile.

`release` drops the compiled programs a process holds, for commands that train one config
after another in one process (the frontier's sizes, a sweep worker's trials, an ablation).
"""

import os
from pathlib import Path

import jax

OFF_VALUES = ("0", "off", "false", "no")
MIN_COMPILE_SECONDS = 0.5  # programs that compile faster are compiled again, not stored
# A process training config after config drops its compiled programs past this share of its
# memory mappings (`release`).
RELEASE_ABOVE = 0.5


def default_folder() -> Path:
    """The user's cache folder for compiled programs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "azjax" / "jax"


def enable(on: bool = True) -> Path | None:
    """Turns the cache on (before the first compile) unless `on` is False or the environment
    turns it off; returns its folder, or None when it is off.

    An unwritable folder leaves it off: a cache is never a reason for a command to fail.
    """
    if not on or os.environ.get("AZJAX_COMPILATION_CACHE", "").lower() in OFF_VALUES:
        jax.config.update("jax_enable_compilation_cache", False)
        return None
    if jax.config.jax_compilation_cache_dir:  # set already (JAX_COMPILATION_CACHE_DIR, a
        return Path(jax.config.jax_compilation_cache_dir)  # caller): left as it is
    folder = str(default_folder())
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(folder, os.W_OK):
        return None
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    return Path(folder)


def mappings_in_use() -> float | None:
    """The share of the memory mappings Linux allows a process (`vm.max_map_count`) that
    this process holds; None where the system does not tell."""
    try:
        limit = int(Path("/proc/sys/vm/max_map_count").read_text())
        with open("/proc/self/maps", "rb") as maps:
            used = sum(1 for _ in maps)
    except (OSError, ValueError):
        return None
    return used / limit


def release(*, above: float | None = None) -> bool:
    """Drops every compiled program this process holds (jax's in-memory caches: a jitted
    function compiles again on its next call, or reads the persistent cache); with `above`,
    only once the process holds more than that share of its memory mappings. Returns whether
    it dropped them.

    On a CPU each compiled program holds about ten memory mappings of its machine code, and
    Linux allows a process 65,530: a process that compiles config after config (a sweep
    worker's trials, the frontier's sizes) reaches that after some thousands of programs, and
    LLVM then stops it ("Unable to allocate section memory") or a cache write crashes.
    """
    if above is not None and (mappings_in_use() or 0.0) <= above:
        return False
    jax.clear_caches()
    return True
