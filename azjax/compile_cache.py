"""JAX's persistent compilation cache for the commands: a config run again reads its compiled
programs from disk instead of compiling them (`azjax train`'s first line in seconds).

On by default for `azjax train`, `azjax sweep` and `azjax frontier`, in `$XDG_CACHE_HOME/azjax/jax`
(`~/.cache/azjax/jax`); `JAX_COMPILATION_CACHE_DIR` names another folder, and
`AZJAX_COMPILATION_CACHE=0` or `--no-compile-cache` turns it off. A multi-process CPU run
turns it off itself (`runs.distributed.initialize`). A program read back is the program
compiled, so results are bit for bit those of a compile.
"""

import os
from pathlib import Path

import jax

OFF_VALUES = ("0", "off", "false", "no")
MIN_COMPILE_SECONDS = 0.5  # programs that compile faster are compiled again, not stored


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
