"""orbax checkpoints of a run: their layout, when they are saved, and saves that fail.

A checkpoint `workdir/checkpoints/<iteration>` holds four items:

- `params`: the network `Variables`, all an agent needs;
- `trainer`: everything else that resumes a run exactly (optimizer state, update count,
  replay buffer, self-play games in progress, RNG key, counters, wall-clock time);
- `config`: the resolved config (JSON) the checkpoint was written with, so that it loads with
  its own settings even after `--allow-config-change`;
- `history`: every metrics record of iterations 1..n (JSON), from which `metrics.jsonl` is
  rewritten on resume, so the file always matches the checkpoint resumed from. (Not named
  `metrics`: orbax reads an item of that name for its own best-checkpoint tracking.)

How a trainer state splits into `params` and `trainer`, and a replay written on another
number of devices re-laid, is `state_layout`. Loading an agent restores `params` (not the
trainer item). Reading checkpoints back, and moving one that cannot be read to
`workdir/checkpoints_damaged/`, is `checkpoint_restore`, to which a `Checkpointer` hands its
orbax manager. Where the `checkpoints` folder vanishes under a run
(deleted while it trains), it is made again with a one-line warning and the run goes on; a
full disk is one `RunError` line; what a save cut short left (orbax's temporary folder) is
removed when the run resumes. orbax's own log records and the "Event loop is closed" noise
of its abandoned reads are silenced: every failure they report reaches the caller as an
exception. Cloud storage that stops answering (after tensorstore's own retries, 32 over about
a quarter of an hour) is one `RunError` line too, naming the last complete checkpoint, from
which the same command resumes.

When to save is orbax's decision: every `save_interval_steps` steps, and at the step where
every process of a multi-host run has agreed to stop after a preemption notice (SIGTERM to
any host; JAX's preemption sync point). Saves are asynchronous: `save` returns once the
arrays are copied off the devices and the files are written in the background; `wait` (also
called by the next save and by `close`) blocks until they are on disk. In a multi-host run
every process calls every method here (orbax writes each array from the process holding it,
and the JSON items and directory moves from process 0).
"""

import contextlib
import logging
import shutil
import time
from pathlib import Path
from typing import Any

import orbax.checkpoint as ocp
from orbax.checkpoint import checkpoint_managers

from azjax.faults import (
    first_line,
    is_disk_full,
    is_missing_path,
    is_unreachable,
    lacks_generations,
    silence_orbax,
    within,
)
from azjax.paths import FolderWatch, is_local, workdir_path
from azjax.runs import checkpoint_restore, distributed
from azjax.runs.generations import check_generations, no_generations
from azjax.runs.orbax_writes import stop_failed_writes
from azjax.types import RunError, StorageLost, UserError

_log = logging.getLogger(__name__)
_SETTLE_S = 3.0  # how long the writes of a failed save are given to stop
_QUIET_S = 0.5  # a failed save's folders, removed, stayed away this long: its writes stopped


class _NoAnswer(Exception):
    """A save or wait that `storage_timeout_s` ran out on (`Checkpointer._bounded`)."""


def _remove(path) -> None:
    if is_local(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.rmtree()
        except OSError:
            pass


class Checkpointer:
    """Saves and restores checkpoints under `workdir/checkpoints/<step>`.

    Args:
      workdir: the run directory (a local path or a cloud URI such as gs://bucket/run).
      max_to_keep: the newest checkpoints kept; older ones are deleted.
      save_interval_steps: `save` writes steps that are a multiple of it (and a preemption's
        sync step); `save(..., force=True)` writes any step.
      asynchronous: write in the background (`wait` blocks until done).
      barrier_prefix: names this checkpointer's barriers across processes (orbax's
        `barrier_sync_key_prefix`): the same in every process, distinct between the
        checkpointers of one process. orbax names a save's barriers by their purpose alone,
        so two checkpointers saving in turn (a population's members), one finishing in the
        background while the next starts, met at one barrier name twice and failed with
        "Barrier ... is already ongoing" (seen twice in a sweep spanning two processes).
      clean_up: remove what saves cut short left (orbax's `STEP.orbax-checkpoint-tmp`
        folders, from a kill or a vanished folder; orbax removes them in the background and
        waits for that before its first save). Only for the run's own trainer: a reader must
        not remove the save in flight of a run training meanwhile.
    """

    def __init__(
        self,
        workdir: str | Path,
        *,
        max_to_keep: int = 3,
        save_interval_steps: int = 1,
        asynchronous: bool = True,
        barrier_prefix: str | None = None,
        clean_up: bool = False,
        storage_timeout_s: float = 0.0,
    ):
        self.workdir = workdir_path(workdir)
        if is_local(self.workdir):
            self.workdir = self.workdir.resolve()
        self.directory = self.workdir / "checkpoints"
        self._pending: int | None = None  # the step being written in the background
        self._lost = 0  # saves lost in a row to a vanished folder
        # How long a save to cloud storage, or the wait for it, may go without an answer (0: as
        # long as it takes).
        self._timeout = 0.0 if is_local(self.workdir) else storage_timeout_s
        self._abandoned = False  # storage stopped answering: orbax's manager is left behind
        self._settings = (max_to_keep, save_interval_steps, asynchronous, barrier_prefix, clean_up)
        silence_orbax()
        if not is_local(self.workdir):
            check_generations(self.directory)
        try:
            self._manager = self._make_manager()
        except OSError as error:
            raise UserError(f"cannot use {self.directory}: {error.strerror or error}") from None
        self._folder = FolderWatch(self.directory)  # notices the folder deleted under a run

    def _make_manager(self) -> ocp.CheckpointManager:
        max_to_keep, save_interval_steps, asynchronous, barrier_prefix, clean_up = self._settings
        policy = checkpoint_managers.AnySavePolicy(
            [
                checkpoint_managers.FixedIntervalPolicy(save_interval_steps),
                checkpoint_managers.PreemptionCheckpointingPolicy(),
            ]
        )
        options = ocp.CheckpointManagerOptions(
            max_to_keep=max_to_keep,
            enable_async_checkpointing=asynchronous,
            create=True,
            cleanup_tmp_directories=clean_up,
            save_decision_policy=policy,
            multiprocessing_options=ocp.options.MultiprocessingOptions(
                barrier_sync_key_prefix=barrier_prefix
            ),
        )
        handlers = {
            "params": ocp.StandardCheckpointHandler(),
            "trainer": ocp.StandardCheckpointHandler(),
            "config": ocp.JsonCheckpointHandler(),
            "history": ocp.JsonCheckpointHandler(),
        }
        return ocp.CheckpointManager(self.directory, options=options, item_handlers=handlers)

    def latest_step(self) -> int | None:
        """The newest saved step, or None."""
        return self._manager.latest_step()

    def all_steps(self) -> list[int]:
        """Saved steps, oldest first."""
        return sorted(self._manager.all_steps())

    def should_save(self, step: int) -> bool:
        """orbax's decision for `step`: a multiple of the save interval, or the step at which
        every process agreed to stop after a preemption notice (call it at every step, in
        every process: the preemption sync point needs that)."""
        return self._manager.should_save(step)

    def reached_preemption(self, step: int) -> bool:
        """Whether `step` is the preemption sync point: every process saves and stops there."""
        return self._manager.reached_preemption(step)

    def save(
        self,
        step: int,
        params: Any,
        trainer: Any,
        *,
        config: dict,
        metrics: list[dict],
        force: bool = False,
    ) -> bool:
        """Starts writing the four items of `step` when orbax's policy says so (or `force`).

        Returns as soon as the arrays are copied off the devices (`wait` for the files);
        a previous save still in flight is waited for first. Where the `checkpoints` folder
        has vanished (deleted while the run trains), it is made again first, with a warning;
        where it vanishes during this call, once more.

        Returns:
          Whether a save of `step` was started.

        Raises:
          RunError: the disk is full (the earlier checkpoints are intact), or the folder
            keeps vanishing.
        """
        args = ocp.args.Composite(
            params=ocp.args.StandardSave(params),
            trainer=ocp.args.StandardSave(trainer),
            config=ocp.args.JsonSave(dict(config)),
            history=ocp.args.JsonSave({"records": list(metrics)}),
        )
        # The save in flight first (within `storage_timeout_s`): where it fails, `wait` makes
        # the folder again; else a vanished folder is made here.
        previous = self.wait() if self._pending is not None else True
        if self._folder.gone() and previous:
            self._warn(f"azjax: warning: {self.directory} vanished; made it again")
            self._renew()
        for attempt in range(2):
            try:
                started = self._bounded(
                    lambda: self._manager.save(step, args=args, force=force), step
                )
                break
            except StorageLost:
                raise
            except Exception as error:
                self._failed(error, step, retry=attempt == 0)
        if started:
            self._pending = step
        return started

    def wait(self) -> bool:
        """Blocks until the save in flight (if any) is on disk.

        Returns:
          True, or False where the `checkpoints` folder vanished while that save was written
          (it is made again, with a warning; save the state once more to keep it).

        Raises:
          RunError: the disk is full (the partial save is removed), or the folder vanished
            under two saves in a row.
          StorageLost: cloud storage stopped answering, or did not take the save within
            `storage_timeout_s`; the checkpointer is then abandoned (`close` leaves orbax's
            writes in flight behind).
        """
        if self._abandoned:
            return False
        try:
            self._bounded(self._manager.wait_until_finished, self._pending)
        except StorageLost:
            raise
        except Exception as error:
            self._failed(error, None, retry=True)
            return False
        if self._pending is not None:
            self._lost = 0
        self._pending = None
        return True

    def _bounded(self, function, step: int | None):
        """`function()` (a save of `step`, or the wait for it), within `storage_timeout_s`
        where one is set: StorageLost after it, and the checkpointer abandoned."""
        if not self._timeout or step is None:
            return function()
        try:
            return within(self._timeout, function, _NoAnswer())
        except _NoAnswer:
            failed = {s for s in (self._pending, step) if s is not None}
            self._pending, self._abandoned = None, True
            raise StorageLost(
                f"lost the connection to {self.directory}: no answer within "
                f"{self._timeout:g} s (train.storage_timeout_s) while iteration {max(failed)} "
                f"was being saved; {self._last_good(failed)}: run the same command again to "
                "resume from it"
            ) from None

    def _failed(self, error: Exception, step: int | None, *, retry: bool):
        """Handles a failed save: returns where the `checkpoints` folder had vanished (made
        again, with a warning) and `retry` allows; else raises RunError naming the last good
        checkpoint on a full disk, storage that stopped answering or a vanishing folder, or
        re-raises `error` (a bug)."""
        # The failure may be the background write of the previous save, or this one's.
        failed = {s for s in (self._pending, step) if s is not None}
        if is_disk_full(error):
            self._pending = None
            for bad in sorted(failed):
                self._discard_partial(bad)
            raise RunError(
                "the disk is full: no space left to save iteration "
                f"{max(failed, default='?')} in {self.directory}; {self._last_good(failed)}"
            ) from None
        if lacks_generations(error):  # an emulator that is not quite Cloud Storage
            self._pending = None
            raise no_generations(self.directory) from None
        if is_unreachable(error):  # the bucket stopped answering: keep what it holds
            self._pending, self._abandoned = None, True
            raise StorageLost(
                f"lost the connection to {self.directory} while iteration "
                f"{max(failed, default='?')} was being saved ({first_line(error)}); "
                f"{self._last_good(failed)}: run the same command again to resume from it"
            ) from None
        # Gone, or partly gone: a deletion racing orbax's writers may leave the folder itself
        # (its files removed under the save in flight, which then fails on a missing path).
        vanished = self._folder.gone() or is_missing_path(error)
        if not vanished:
            raise error
        self._pending = None
        self._lost += 1
        self._renew(discard=failed)
        if not retry or self._lost > 1:
            raise RunError(
                f"{self.directory} vanished while iteration {max(failed, default='?')} was "
                f"being saved, more than once; {self._last_good(failed, 'no checkpoint is left')}"
            ) from None
        lost = ", ".join(map(str, sorted(failed))) or "?"
        self._warn(
            f"azjax: warning: {self.directory} vanished while iteration {lost} was being "
            "saved; made it again"
        )

    def _last_good(self, failed, none: str = "no checkpoint was saved") -> str:
        try:
            steps = self.all_steps()  # orbax's list, read when the manager was made
        except Exception:  # storage that does not answer
            return "the checkpoints saved before it are kept"
        last = [s for s in steps if s not in failed]
        return f"the last good checkpoint is iteration {last[-1]}" if last else none

    def _renew(self, discard=()) -> None:
        """Makes the `checkpoints` folder again (without what saves of the steps in `discard`
        left) and a fresh orbax manager: the old one keeps raising its failed save."""
        stop_failed_writes(self._manager, _SETTLE_S)
        if distributed.is_primary():
            self.directory.mkdir(parents=True, exist_ok=True)
            for step in discard:
                self._remove_partial(step)
        distributed.barrier("azjax-renew-checkpoints")
        try:
            self._manager.close()
        except Exception:  # the failed save, again
            pass
        self._manager = self._make_manager()
        self._folder.renew()

    @staticmethod
    def _warn(message: str) -> None:
        if distributed.is_primary():
            _log.warning(message)

    def _discard_partial(self, step: int) -> None:
        """Removes what a failed save of `step` left behind (orbax's temporary folders)."""
        stop_failed_writes(self._manager, _SETTLE_S)
        if distributed.is_primary():
            self._remove_partial(step)
        distributed.barrier(f"azjax-discard-{step}")
        self._manager.reload()

    def _remove_partial(self, step: int) -> None:
        """Removes `step`'s folders until none comes back for `_QUIET_S`: writes of the failed
        save that orbax could not stop (tensorstore's) may still make them again."""
        deadline, quiet = time.monotonic() + _SETTLE_S, time.monotonic() + _QUIET_S
        while time.monotonic() < min(deadline, quiet):
            for path in self.directory.glob(f"{step}*"):
                if path.name == str(step) or path.name.startswith(f"{step}.orbax-checkpoint-tmp"):
                    _remove(path)
                    quiet = time.monotonic() + _QUIET_S
            time.sleep(_QUIET_S / 5)

    def restore(
        self, step: int, params_like: Any, trainer_like: Any | None = None
    ) -> checkpoint_restore.Restored:
        """Restores `step` into the structure (and shardings) of the given example trees
        (`checkpoint_restore.restore`: `params_like` may be a function of the checkpoint's
        own config).

        Raises:
          UserError: the checkpoint does not exist, or holds arrays of other shapes than the
            examples (a run of another config).
          checkpoint_restore.DamagedCheckpoint: its files cannot be read.
        """
        return checkpoint_restore.restore(
            self._manager, self.directory, step, params_like, trainer_like
        )

    def restore_newest(
        self, params_like: Any, trainer_like: Any | None = None, *, log=None
    ) -> checkpoint_restore.Restored | None:
        """Restores the newest checkpoint that can be read, moving damaged ones aside.

        Returns None when there is no checkpoint (or none that can be read).
        """
        return checkpoint_restore.restore_newest(
            self._manager, self.directory, params_like, trainer_like, log=log
        )

    def quarantine(self, step: int) -> Path:
        """Moves checkpoint `step` to `workdir/checkpoints_damaged/` for inspection (process 0
        moves it; every process of a multi-host run calls this)."""
        return checkpoint_restore.quarantine(self._manager, self.directory, step)

    def __del__(self) -> None:
        try:
            self._folder.close()
        except Exception:  # a Checkpointer that never opened its folder, or at exit
            pass

    def close(self, *, timeout_s: float | None = None) -> None:
        """Waits for the save in flight (RunError on a full disk), then closes (not orbax's
        manager where storage stopped answering: its writes would hold the exit). With
        `timeout_s` (a run that lost a process: `distributed.saves_wait_s`), a save not
        finished by then is abandoned, and so is one that fails."""
        if timeout_s is not None:
            try:
                within(timeout_s, self._manager.wait_until_finished, _NoAnswer())
            except Exception:  # noqa: BLE001  (the run is failing already; what is saved is kept)
                self._pending, self._abandoned = None, True
        try:
            self.wait()
        finally:
            self._folder.close()
            if not self._abandoned:
                self._manager.close()


@contextlib.contextmanager
def closing(checkpointers):
    """Closes `checkpointers` after the block, waiting for their saves in flight; after an
    error that says another process of the run is gone, briefly or not at all
    (`distributed.saves_wait_s`)."""
    wait_s = None
    try:
        yield
    except Exception as error:
        wait_s = distributed.saves_wait_s(error)
        raise
    finally:
        for checkpointer in checkpointers:
            checkpointer.close(timeout_s=wait_s)


def read_checkpoint(workdir, step: int | None, *examples) -> checkpoint_restore.Restored:
    """Checkpoint `step` of `workdir` (None: its newest readable one) restored like
    `examples` (`Checkpointer.restore`), the checkpointer closed after.

    Raises:
      UserError: no readable checkpoint, or checkpoint `step` damaged.
    """
    checkpointer = Checkpointer(workdir)
    try:
        if step is None:
            restored = checkpointer.restore_newest(*examples)
            if restored is None:
                raise UserError(f"no readable checkpoint in {workdir}/checkpoints")
            return restored
        try:
            return checkpointer.restore(step, *examples)
        except checkpoint_restore.DamagedCheckpoint as damaged:
            raise UserError(
                f"checkpoint {step} of {workdir} is damaged: {damaged.reason}"
            ) from None
    finally:
        checkpointer.close()
