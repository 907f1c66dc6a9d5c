"""Reading checkpoints back, and damaged ones set aside.

`restore` reads one checkpoint of `workdir/checkpoints` (its items: see `checkpoint`) into the
structure and shardings of example trees, after checking the saved arrays' shapes against
them: a run of another config is one `UserError` line, files that cannot be read (truncated
or overwritten) a `DamagedCheckpoint`. `restore_newest` goes back from the newest checkpoint,
moving each damaged one to `workdir/checkpoints_damaged/` (`quarantine`) with a warning naming
what was skipped and why, and returns the first that can be read.

Each function takes the orbax manager of the `checkpoint.Checkpointer` that calls it (which
makes a fresh one after a failed save) and its `checkpoints` folder. In a multi-host run
every process calls them (process 0 moves the folders).
"""

import logging
import shutil
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np
import orbax.checkpoint as ocp

from azjax.faults import first_line
from azjax.paths import is_local
from azjax.runs import distributed
from azjax.types import UserError

_log = logging.getLogger(__name__)


class Restored(NamedTuple):
    """One checkpoint read back."""

    step: int
    params: Any
    trainer: Any  # None when not asked for
    config: dict | None  # None for checkpoints written before configs were saved with them
    metrics: list[dict] | None  # likewise


class DamagedCheckpoint(Exception):
    """A checkpoint whose files cannot be read."""

    def __init__(self, step: int, reason: str):
        super().__init__(f"checkpoint {step} is damaged: {reason}")
        self.step = step
        self.reason = reason


def _abstract(tree: Any) -> Any:
    """The restore target of an example: host (numpy) arrays restore as host arrays, on no
    device; device arrays and shapes with their shardings."""

    def target(leaf):
        return leaf if isinstance(leaf, np.ndarray) else ocp.utils.to_shape_dtype_struct(leaf)

    return jax.tree.map(target, tree)


def restore(
    manager: ocp.CheckpointManager,
    directory: Path,
    step: int,
    params_like: Any,
    trainer_like: Any | None = None,
) -> Restored:
    """Restores `step` of `directory` into the structure (and shardings) of the examples.

    `params_like` (and `trainer_like`) may also be a function of the checkpoint's own config
    (a dict, or None for checkpoints written without one) returning the example: the network
    is then shaped as that checkpoint was written, whatever the run's config says now. Host
    (numpy) examples restore as host arrays, whatever devices the checkpoint was written on.

    Raises:
      UserError: the checkpoint does not exist, or holds arrays of other shapes than the
        examples (a run of another config).
      DamagedCheckpoint: its files cannot be read.
    """
    path = directory / str(step)
    if not path.is_dir():
        raise UserError(f"checkpoint {path} does not exist")
    if callable(params_like) or callable(trainer_like):
        config = _read_config(manager, directory, step)
        params_like = params_like(config) if callable(params_like) else params_like
        trainer_like = trainer_like(config) if callable(trainer_like) else trainer_like
    _check_shapes(manager, directory, step, "params", params_like)
    if trainer_like is not None:
        _check_shapes(manager, directory, step, "trainer", trainer_like)
    items = {"params": ocp.args.StandardRestore(_abstract(params_like))}
    if trainer_like is not None:
        items["trainer"] = ocp.args.StandardRestore(_abstract(trainer_like))
    for name in ("config", "history"):
        if (path / name).is_dir():
            items[name] = ocp.args.JsonRestore()
    try:
        restored = manager.restore(step, args=ocp.args.Composite(**items))
    except Exception as error:  # orbax and tensorstore raise many types for damaged files
        raise DamagedCheckpoint(step, first_line(error)) from None
    history = restored.get("history") if "history" in items else None
    return Restored(
        step=step,
        params=restored["params"],
        trainer=restored.get("trainer") if trainer_like is not None else None,
        config=restored.get("config") if "config" in items else None,
        metrics=None if history is None else list(history["records"]),
    )


def _read_config(manager: ocp.CheckpointManager, directory: Path, step: int) -> dict | None:
    """The config item of `step`, or None where it has none."""
    if not (directory / str(step) / "config").is_dir():
        return None
    args = ocp.args.Composite(config=ocp.args.JsonRestore())
    try:
        return manager.restore(step, args=args)["config"]
    except Exception as error:
        raise DamagedCheckpoint(step, f"unreadable config: {first_line(error)}") from None


def _check_shapes(
    manager: ocp.CheckpointManager, directory: Path, step: int, item: str, like: Any
) -> None:
    """Raises UserError when the saved arrays of `item` differ in shape from `like`."""
    try:
        metadata = manager.item_metadata(step)[item]
    except Exception as error:
        raise DamagedCheckpoint(step, f"unreadable metadata: {first_line(error)}") from None
    if metadata is None:
        raise DamagedCheckpoint(step, f"no {item} item")
    try:
        saved = jax.tree.leaves(metadata.tree if hasattr(metadata, "tree") else metadata)
        expected = jax.tree.leaves(like)
    except Exception as error:
        raise DamagedCheckpoint(step, f"unreadable {item}: {first_line(error)}") from None
    # Compared as multisets: orbax may store a NamedTuple's fields in another order.
    saved_shapes = sorted(tuple(getattr(leaf, "shape", ()) or ()) for leaf in saved)
    expected_shapes = sorted(tuple(np.shape(leaf)) for leaf in expected)
    if saved_shapes != expected_shapes:
        raise UserError(
            f"checkpoint {directory / str(step)} holds a run of another shape "
            f"({item} differs from this config's); use the config it was written with"
        )


def restore_newest(
    manager: ocp.CheckpointManager,
    directory: Path,
    params_like: Any,
    trainer_like: Any | None = None,
    *,
    log=None,
) -> Restored | None:
    """Restores the newest checkpoint of `directory` that can be read, moving damaged ones
    aside (`quarantine`) with a warning through `log` (default: stderr, from process 0).

    Returns None when there is no checkpoint (or none that can be read).
    """
    if log is None:  # one warning per run, not one per process

        def log(message):
            if distributed.is_primary():
                _log.warning(message)

    for step in sorted(manager.all_steps(), reverse=True):
        try:
            return restore(manager, directory, step, params_like, trainer_like)
        except DamagedCheckpoint as damaged:
            try:
                where = f"moved it to {quarantine(manager, directory, step)}"
            except OSError as error:
                where = f"could not move it aside: {error.strerror or error}"
            log(f"azjax: warning: skipped checkpoint {step} ({damaged.reason}); {where}")
    return None


def quarantine(manager: ocp.CheckpointManager, directory: Path, step: int) -> Path:
    """Moves checkpoint `step` of `directory` to `checkpoints_damaged/` beside it, for
    inspection (process 0 moves it; every process of a multi-host run calls this)."""
    source = directory / str(step)
    folder = directory.parent / "checkpoints_damaged"
    target = folder / str(step)
    if distributed.is_primary():
        folder.mkdir(exist_ok=True)
        if target.exists():
            target = folder / f"{step}-{time.strftime('%Y%m%d-%H%M%S')}"
        if is_local(source):
            shutil.move(str(source), str(target))
        else:
            source.rename(target)
    distributed.barrier(f"azjax-quarantine-{step}")
    manager.reload()
    return target
