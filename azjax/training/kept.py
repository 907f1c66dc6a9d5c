"""A run's compiled steps kept whole across processes: a warm start reads them back without
tracing or lowering anything.

    play = kept.Kept(jax.jit(...), "play_step", settings.pipeline_key, mesh)
    play(state, hyper)        # a jitted function's call

JAX's persistent cache (`compile_cache`) saves the compiles, but finds a program by its
lowered text, so every process still traces and lowers the step functions: seconds on a
CPU, a third of a warm start. `Kept` keys a program instead by what fixes it (the config's
pipeline key, the mesh, the arguments' shapes and shardings, the XLA flags) and by jax's and
azjax's versions and azjax's source (`compile_cache.entry`), and keeps it serialized in the
compile cache's folder (`azjax-program-*.bin`). While the cache is off (`--no-compile-cache`,
multi-process CPU runs) it is the jitted function.

A kept program is compiled for its file, with the persistent cache bypassed: XLA:CPU cannot
serialize again a program it read back from that cache. A file that cannot be read, or a
call whose arguments differ from the kept program's, falls back to the jitted function. The
file is a pickle holding machine code, as trusted as the persistent cache's executables: it
lives in the user's cache folder and azjax alone writes it.
"""

import os
import pickle
import weakref
import zlib

import jax
import numpy as np
from jax.experimental import serialize_executable
from jax.experimental.compilation_cache import compilation_cache as persistent

from azjax import compile_cache
from azjax.paths import write_atomically

KIND = "program"


_LIVE: weakref.WeakSet = weakref.WeakSet()  # every `Kept`, for `_forget_released`
_SEEN = [0]  # `compile_cache.generation()` when `_forget_released` last looked


def _forget_released() -> None:
    """Drops every `Kept`'s program once `compile_cache.release` has dropped jax's, so that
    their machine code goes too (a process that trains config after config)."""
    if _SEEN[0] != compile_cache.generation():
        _SEEN[0] = compile_cache.generation()
        for kept in list(_LIVE):
            kept.compiled = None


class Kept:
    """`jitted` with its compiled program read from, or written to, the compile cache."""

    def __init__(self, jitted, name: str, pipeline_key: str, mesh):
        self.jitted, self.name = jitted, name
        self.key = {"name": name, "pipeline": pipeline_key, "mesh": repr(mesh)}
        self.compiled = None  # None: not looked up yet; False: the jitted function's calls
        _LIVE.add(self)

    def __getattr__(self, attribute):  # lower, trace, eval_shape: the jitted function's
        return getattr(self.jitted, attribute)

    def __call__(self, *args):
        leaves = jax.tree.leaves(args)
        if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
            return self.jitted(*args)  # traced inside another function (eval_shape, jit)
        _forget_released()
        if self.compiled is None:
            self.compiled = self._kept(args, leaves) or False
        if self.compiled:
            try:
                return self.compiled(*args)
            except (TypeError, ValueError):  # other shapes or shardings than the kept one's
                self.compiled = False
        return self.jitted(*args)

    def _kept(self, args, leaves):
        """The program for `args`: read back, or compiled and written; None while the
        compile cache is off."""
        signature = [
            (type(leaf).__name__, np.shape(leaf), str(getattr(leaf, "dtype", "")))
            + (repr(getattr(leaf, "sharding", None)),)
            for leaf in leaves
        ]
        key = {**self.key, "arguments": repr(signature), "tree": repr(jax.tree.structure(args))}
        key.update(xla_flags=os.environ.get("XLA_FLAGS", ""), devices=repr(jax.devices()))
        path = compile_cache.entry(KIND, key, suffix="bin")
        if path is None:
            return None
        try:
            payload, in_tree, out_tree = pickle.loads(zlib.decompress(path.read_bytes()))
            return serialize_executable.deserialize_and_load(payload, in_tree, out_tree)
        except Exception:  # noqa: BLE001  (missing, damaged or from another build: compiled)
            pass
        compiled = _fresh(self.jitted.lower(*args))
        try:
            data = pickle.dumps(serialize_executable.serialize(compiled))
            write_atomically(path, zlib.compress(data, 1))
        except Exception:  # noqa: BLE001  (not serializable, or not written: not kept)
            pass
        return compiled


def _fresh(lowered):
    """`lowered` compiled by XLA, not read back from the persistent cache (whose programs
    XLA:CPU cannot serialize again); the cache is on again after."""
    jax.config.update("jax_enable_compilation_cache", False)
    persistent.reset_cache()
    try:
        return lowered.compile()
    finally:
        jax.config.update("jax_enable_compilation_cache", True)
        persistent.reset_cache()
