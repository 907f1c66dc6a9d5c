"""JAX's persistent compilation cache for the commands: a config run again reads its compiled
programs from disk instead of compiling them (`azjax train`'s first line in seconds).

On by default for `azjax train`, `azjax sweep` and `azjax frontier`, in `$XDG_CACHE_HOME/azjax/jax`
(`~/.cache/azjax/jax`); `JAX_COMPILATION_CACHE_DIR` names another folder, and
`AZJAX_COMPILATION_CACHE=0` or `--no-compile-cache` turns it off. A multi-process CPU run
turns it off itself (`runs.distributed.initialize`). A program read back is the program
compiled, so results are bit for bit those of a compile.

`release` drops the compiled programs a process holds, for commands that train one config
after another in one process (the frontier's sizes, a sweep worker's trials, an ablation).

Results that take seconds to compute and depend on the code alone keep there too, each in a
file of its own (`entry`: `compute.measure`'s FLOP counts), keyed by what they are of and
by jax's and azjax's versions and azjax's source.
"""

import functools
import hashlib
import json
import os
from pathlib import Path

import jax
import jaxlib

from azjax import __version__

OFF_VALUES = ("0", "off", "false", "no")
MIN_COMPILE_SECONDS = 0.5  # programs that compile faster are compiled again, not stored
# A process training config after config drops its compiled programs past this share of its
# memory mappings (`release`).
RELEASE_ABOVE = 0.5
ENTRY_PREFIX = "azjax-"  # `entry` files: azjax-KIND-HASH.json (JAX's end in -cache, -atime)

_folder: Path | None = None  # the folder `enable` turned the cache on in (None: off)


def default_folder() -> Path:
    """The user's cache folder for compiled programs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "azjax" / "jax"


def enable(on: bool = True) -> Path | None:
    """Turns the cache on (before the first compile) unless `on` is False or the environment
    turns it off; returns its folder, or None when it is off.

    An unwritable folder leaves it off: a cache is never a reason for a command to fail.
    """
    global _folder
    _folder = None
    if not on or os.environ.get("AZJAX_COMPILATION_CACHE", "").lower() in OFF_VALUES:
        jax.config.update("jax_enable_compilation_cache", False)
        return None
    if jax.config.jax_compilation_cache_dir:  # set already (JAX_COMPILATION_CACHE_DIR, a
        _folder = Path(jax.config.jax_compilation_cache_dir)  # caller): left as it is
        return _folder
    folder = str(default_folder())
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(folder, os.W_OK):
        return None
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    _folder = Path(folder)
    return _folder


def folder() -> Path | None:
    """The cache's folder while `enable` has turned it on in this process (and nothing has
    turned it off since: a multi-process CPU run, `runs.distributed`); None otherwise."""
    return _folder if jax.config.jax_enable_compilation_cache else None


@functools.cache
def source_digest() -> str:
    """A digest of azjax's source files: a result kept for one version of the code is not
    read back by another (the version number stays the same between releases)."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0")
        try:
            digest.update(path.read_bytes() + b"\0")
        except OSError:  # a cache is never a reason for a command to fail
            continue
    return digest.hexdigest()


def entry(kind: str, key) -> Path | None:
    """The file that keeps a result of `kind` for `key` (JSON: what fixes the result), keyed
    also by jax's, jaxlib's and azjax's versions, azjax's source and the platform; None while
    the cache is off. Callers read it, ignoring an unreadable one, and write it with
    `paths.write_atomically`, ignoring an `OSError`."""
    where = folder()
    if where is None:
        return None
    versions = {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "azjax": __version__}
    versions.update(source=source_digest(), platform=jax.default_backend())
    text = json.dumps({"kind": kind, "key": key, **versions}, sort_keys=True)
    name = f"{ENTRY_PREFIX}{kind}-{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"
    return where / name


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
