"""The members of the host loop (`host_loop`): a member is one run directory, with its
`Settings` (`config.settings`), `Checkpointer`, `MetricsWriter` and evaluation, and where it
stands. Here a member goes to and from its checkpoints: its state restored (relaid out for
this device count) and its metrics writer opened at the iteration resumed, and its state
saved with its config and records.

A single run's state is the member's own (`Single`); a population's is stacked, each array
with a leading member axis (`Stacked`: `member`, `stack`). The host loop is the same for both:
it sees the members through one of the two. The methods of `Member` take one member's state.
"""

import dataclasses
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from azjax.config.settings import Settings
from azjax.runs.checkpoint import Checkpointer
from azjax.runs.checkpoint_restore import Restored
from azjax.runs.export_state import Export
from azjax.runs.metrics import MetricsWriter
from azjax.runs.state_layout import join_state, relayout, split_state
from azjax.training.evaluation import Evaluation
from azjax.types import UserError


def member(tree, index: int):
    """Member `index` of a stacked [K, ...] tree."""
    return jax.tree.map(lambda x: x[index], tree)


def stack(trees):
    """The [K, ...] tree of K members' trees."""
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


class Single:
    """A single run's members: its state is its one member's."""

    def member(self, tree, index: int):
        return tree

    def join(self, trees, shardings=None):
        (tree,) = trees
        return tree

    def select(self, run, active, new, old):
        return new


class Stacked:
    """A population's members: along a leading axis of every array of its state."""

    def member(self, tree, index: int):
        """Member `index`'s view of `tree`."""
        return member(tree, index)

    def join(self, trees, shardings=None):
        """The members' `trees` stacked: host arrays (the same on every process) without
        `shardings`, else placed so (compiled, so that arrays spread over processes stack)."""
        if shardings is None:
            return jax.tree.map(lambda *xs: np.stack(xs), *trees)
        return jax.jit(stack, out_shardings=shardings)(trees)

    def select(self, run, active, new, old):
        """`new` for the `active` members, `old` for the frozen ones (`run.select`)."""
        return run.select(np.asarray(active), new, old)


@dataclasses.dataclass
class Member:
    """One run directory of the loop, and where it stands."""

    settings: Settings  # PBT replaces it with its hyperparameters changed
    workdir: Path
    checkpointer: Checkpointer
    writer: MetricsWriter | None = None  # set by `open_writer`
    evaluation: Evaluation | None = None  # None: not evaluated (or not process 0)
    iteration: int = 0
    saved: int = 0  # the newest iteration saved
    stopped: bool = False  # by the callback
    origin: Export | None = None  # seeds a member without checkpoints (`--resume-from`)
    seeded: bool = False  # `restore` started it from `origin`

    @classmethod
    def open(
        cls,
        settings: Settings,
        workdir: Path,
        *,
        index: int | None = None,
        origin: Export | None = None,
    ) -> "Member":
        """The member that trains `settings` in `workdir`, its checkpointer opened; `index`,
        its place in a population, names its checkpointer's barriers apart from the
        others' (`Checkpointer`'s `barrier_prefix`); `origin`, an export
        (`runs.export_state`) it starts from while it has no checkpoint."""
        run = settings.run
        checkpointer = Checkpointer(
            workdir,
            max_to_keep=run.keep_checkpoints,
            save_interval_steps=run.checkpoint_every,
            barrier_prefix=None if index is None else f"azjax_member_{index}",
            clean_up=True,
            storage_timeout_s=run.storage_timeout_s,
        )
        return cls(settings, workdir, checkpointer, origin=origin)

    @property
    def run(self):
        """The member's bookkeeping (`RunSettings`)."""
        return self.settings.run

    @property
    def active(self) -> bool:
        return not self.stopped and self.iteration < self.run.num_iterations

    def restore(self, like, member_run, *, step: int | None = None):
        """This member's state from its checkpoint at `step` (None: its newest readable
        one), placed and relaid out for `member_run` (a `compiled.CompiledRun`), and what
        the checkpoint held; `(like, None)` for a new member. `like` is a fresh state of
        the member. A member without checkpoints but with an `origin` starts from it: `like`
        with the export's network, optimizer, key and counters (its replay empty, its games
        at their start), and the export's records as those restored.

        Raises:
          UserError: the member has checkpoints but none is readable.
        """
        checkpointer, restored = self.checkpointer, None
        if step is not None:
            restored = checkpointer.restore(step, *split_state(like))
        elif checkpointer.all_steps():
            restored = checkpointer.restore_newest(*split_state(like))
            if restored is None:
                raise UserError(
                    f"no readable checkpoint in {checkpointer.directory} (the damaged ones "
                    f"are in {self.workdir / 'checkpoints_damaged'}); start over with "
                    "another --workdir"
                )
        shardings = member_run.shardings
        if restored is None and self.origin is not None:
            origin, self.seeded = self.origin, True
            state = jax.device_put(origin.seed(like), shardings)
            seed = Restored(origin.iteration, None, None, origin.config, origin.history)
            return state, seed
        if restored is None:
            return like, None
        state = join_state(like, restored.params, restored.trainer)
        state = jax.device_put(state, shardings)
        state = relayout(state, shardings, member_run.pipeline.num_shards)
        return state, restored

    def open_writer(self, restored, *, tensorboard: bool, files: bool) -> None:
        """Sets the member at the iteration `restored` holds (None: a new member, at 0) and
        opens its metrics writer there, with the records the checkpoint holds."""
        history, start = (None, 0) if restored is None else (restored.metrics, restored.step)
        self.iteration = self.saved = start
        self.writer = MetricsWriter(
            self.workdir,
            history=history,
            resume_iteration=start,
            tensorboard=tensorboard,
            files=files,
            settings=self.settings,
        )

    def save(self, state, *, force: bool) -> None:
        """Saves this member's `state` at its iteration, with the member's config (as JSON)
        and records (orbax's policy decides unless `force`)."""
        self.writer.sync()
        params, rest = split_state(state)
        # The previous save wrote in the background during this iteration; orbax would wait
        # for it anyway, and a second signal then never finds it half-written.
        self.checkpointer.wait()
        self.checkpointer.save(
            int(rest["iteration"]),
            params,
            rest,
            config=json.loads(self.settings.config_json),
            metrics=self.writer.records,
            force=force,
        )
        self.saved = int(rest["iteration"])
