"""The errors that are not bugs, each as the one line `azjax` prints for it.

A bug keeps its traceback. These are the machine's or the user's limits, met deep inside a
library where no `UserError` could be raised: a path name longer than the file system takes,
memory run out, a `JAX_PLATFORMS` platform jax cannot start, and a server or another process
of the run that stopped answering.
"""

import errno
import os
import sys
import traceback

from azjax.faults import first_line, is_lost_peer, is_out_of_memory, is_unreachable


def _name_too_long(error: BaseException | None) -> OSError | None:
    """The OSError "File name too long" (a path a user gave) in `error`'s chain, or None."""
    while error is not None:
        if isinstance(error, OSError) and error.errno == errno.ENAMETOOLONG:
            return error
        error = error.__cause__ or error.__context__
    return None


def _no_platform(error: BaseException) -> bool:
    """Whether jax failed to start the platform `JAX_PLATFORMS` names (a bare AssertionError
    in its backend setup for `cuda` without the plugin, a RuntimeError for `tpu` without
    libtpu). Where jax left its own frames out of the traceback (an error raised in a
    computation's dispatch: `azjax evaluate`, `bench`), jax is asked again: its backends
    raise again where they failed to start."""
    if not os.environ.get("JAX_PLATFORMS"):
        return False
    frames = traceback.extract_tb(error.__traceback__)
    if (frames and frames[-1].filename.endswith("xla_bridge.py")) or (
        "Unable to initialize backend" in str(error)
    ):
        return True
    jax = sys.modules.get("jax")
    if jax is None:
        return False
    try:
        jax.devices()
    except Exception:  # noqa: BLE001  (any failure to start: that platform is not here)
        return True
    return False


def one_line(error: BaseException) -> tuple[str, int, bool] | None:
    """(the line after "azjax: error: ", the exit status, whether to exit at once) for an
    error that is not a bug, or None (a bug: let its traceback show). A lost server or
    process exits at once: the writes still retrying it would hold the exit for minutes."""
    if (too_long := _name_too_long(error)) is not None:
        return (
            f"{too_long.filename}: a name in this path is longer than the file system takes "
            "(255 bytes a name): use a shorter one",
            2,
            False,
        )
    if is_out_of_memory(error):
        return (
            f"out of memory ({first_line(error)}): lower the batch sizes or replay.capacity "
            "(`azjax train --memory-plan` shows what fits); what was saved is kept",
            1,
            False,
        )
    if _no_platform(error):
        why = str(error).split("\n", 1)[0] or "no plugin or device for it"
        return (
            f"JAX_PLATFORMS={os.environ['JAX_PLATFORMS']}: jax cannot start that platform "
            f"here ({why}); unset the variable, or install jax for it (pip install "
            "'jax[cuda12]' or 'jax[tpu]')",
            2,
            False,
        )
    if is_unreachable(error) or is_lost_peer(error):
        # A server stopped answering outside a checkpoint save: the bucket (metrics,
        # TensorBoard) or, in a multi-host run, another process (a collective between them
        # failed) or the coordination service (DEADLINE_EXCEEDED).
        if is_lost_peer(error):  # a collective's peer closed: a process, not storage
            lost = f"another process of this run ({first_line(error)})"
        else:
            lost = f"a server (storage or another host: {first_line(error)})"
        return (
            f"lost the connection to {lost}; "
            "what was saved is kept: run the same command again (on every host) to resume",
            1,
            True,
        )
    return None
