"""orbax checkpoints of a run: network variables and the rest of the trainer state.

Two items per step: `params` (the network `Variables`, all an agent needs) and `trainer`
(optimizer state, replay buffer, self-play games, RNG key, counters), so that loading an
agent never reads the replay buffer, while resuming restores everything exactly.
"""

from pathlib import Path
from typing import Any

import jax
import orbax.checkpoint as ocp

from azjax.types import UserError


def _abstract(tree: Any) -> Any:
    return jax.tree.map(ocp.utils.to_shape_dtype_struct, tree)


class Checkpointer:
    """Saves and restores (params, trainer) pytrees under `workdir/checkpoints/<step>`."""

    def __init__(self, workdir: str | Path, *, max_to_keep: int = 3):
        self.directory = Path(workdir).resolve() / "checkpoints"
        options = ocp.CheckpointManagerOptions(
            max_to_keep=max_to_keep, enable_async_checkpointing=False, create=True
        )
        self._manager = ocp.CheckpointManager(
            self.directory, options=options, item_names=("params", "trainer")
        )

    def latest_step(self) -> int | None:
        """The newest saved step, or None."""
        return self._manager.latest_step()

    def save(self, step: int, params: Any, trainer: Any) -> None:
        """Writes both items for `step` and waits until they are on disk."""
        self._manager.save(
            step,
            args=ocp.args.Composite(
                params=ocp.args.StandardSave(params), trainer=ocp.args.StandardSave(trainer)
            ),
            force=True,
        )
        self._manager.wait_until_finished()

    def restore(self, step: int, params_like: Any, trainer_like: Any | None = None):
        """Restores `step` into the structure (and shardings) of the given example trees.

        Returns (params, trainer); trainer is None when `trainer_like` is None.

        Raises:
          UserError: the checkpoint is missing or cannot be read.
        """
        items = {"params": ocp.args.StandardRestore(_abstract(params_like))}
        if trainer_like is not None:
            items["trainer"] = ocp.args.StandardRestore(_abstract(trainer_like))
        try:
            restored = self._manager.restore(step, args=ocp.args.Composite(**items))
        except Exception as error:  # orbax raises many types for damaged files
            message = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise UserError(
                f"checkpoint {self.directory / str(step)} is missing or corrupt: {message[:200]}"
            ) from None
        return restored["params"], restored.get("trainer") if trainer_like is not None else None

    def close(self) -> None:
        self._manager.close()


def has_checkpoint(workdir: str | Path) -> bool:
    """Whether `workdir/checkpoints` holds at least one finalized step."""
    directory = Path(workdir) / "checkpoints"
    return directory.is_dir() and any(p.name.isdigit() for p in directory.iterdir())
