"""Populations: K variants of one experiment trained in one compiled program.

The members' configs may differ only in the tunable scalars (`config.TUNABLE_KEYS`: learning
rate, weight decay, value-loss weight, Dirichlet alpha and fraction, PUCT constants, Gumbel
scale, temperature moves), `seed` and `name`, the keys that reach the step functions as
arguments (`Hyperparams`), and in bookkeeping (iterations, evaluation). The step
functions of `steps` are `vmap`ped over a leading member axis: each member has its own
network, optimizer state, replay buffer, self-play games and random key, and all of them play
and learn in the same compiled calls. Shape-changing keys (network size, simulations, batch
sizes) make separate populations.

Each member is an ordinary run directory (config.json, checkpoints of the member alone,
metrics.jsonl with `hyper/KEY` columns, TensorBoard), so `evaluate`, `plot`, `load_agent` and
the notebooks use a member as any run, and a member's directory resumes as a plain
`azjax train` run too. Rerunning `train_population` on the same directories resumes every
member from its own newest checkpoint; a member that reached its iteration budget, or that
the callback stopped, stays frozen (masked out of the update) while the others go on.

With `pbt` (`azjax.training.pbt.PBT`) the members exploit and explore every `pbt.every` iterations.
"""

import contextlib
import functools
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from azjax import interrupt
from azjax.config import saved
from azjax.config.keys import TUNABLE_KEYS
from azjax.config.settings import Settings
from azjax.core.steps import Pipeline, TrainerState, init_state, learn_step, play_step
from azjax.paths import bound_cloud_writes, workdir_path
from azjax.runs import checkpoint, distributed, lock
from azjax.runs.directory import prepare_workdir
from azjax.runs.metrics import progress_line
from azjax.training import compiled, memory_check
from azjax.training import pbt as pbt_lib
from azjax.training.host_loop import HostLoop
from azjax.training.members import Member, Stacked, member, stack
from azjax.types import UserError

_log = logging.getLogger(__name__)

__all__ = [
    "CompiledPopulation",
    "compile_population",
    "member",
    "stack",
    "train_population",
]

_COMPILED: dict = {}


def _member_axis(sharding: NamedSharding) -> NamedSharding:
    """`sharding` of one member's array for the stacked [K, ...] array (members unsplit)."""
    return NamedSharding(sharding.mesh, PartitionSpec(None, *sharding.spec))


class CompiledPopulation(NamedTuple):
    """A population's jitted functions: `compiled.CompiledRun`'s (so `compiled.iterate` runs it),
    and the two that act on the member axis."""

    pipeline: Pipeline
    mesh: Mesh
    shardings: TrainerState  # NamedSharding per leaf, members first
    init: Callable  # init(keys [K, 2]) -> TrainerState [K]
    play: Callable  # play(state, hyper) -> (state, metrics, learn keys [U / chunk, K, chunk, 2])
    learn: Callable  # learn(state, keys [K, chunk, 2], hyper) -> (state, metrics)
    select: Callable  # select(active [K], new, old) -> new for active members, else old
    copy_networks: Callable  # copy_networks(state, sources [K]) -> PBT's exploit


def compile_population(settings: Settings, num_members: int, mesh=None) -> CompiledPopulation:
    """The jitted step functions of a population of `num_members` members of `settings`'s
    pipeline, vmapped over the member axis; `learn` takes the learner keys chunk first as
    `compiled.iterate` loops over them. Built once per process, pipeline and K."""
    single = compiled.compile_run(settings, mesh)
    key = (
        settings.pipeline_key,
        num_members,
        tuple(d.id for d in single.mesh.devices.flat),
    )
    if key not in _COMPILED:
        pipeline = single.pipeline
        shardings = jax.tree.map(_member_axis, single.shardings)
        vplay = jax.vmap(functools.partial(play_step, pipeline))

        def play(state, hyper):
            state, metrics, keys = vplay(state, hyper)
            return state, metrics, jnp.swapaxes(keys, 0, 1)  # [U / chunk, K, chunk, 2]

        _COMPILED[key] = CompiledPopulation(
            pipeline=pipeline,
            mesh=single.mesh,
            shardings=shardings,
            init=jax.jit(
                jax.vmap(functools.partial(init_state, pipeline)), out_shardings=shardings
            ),
            play=jax.jit(
                play, in_shardings=(shardings, None), out_shardings=(shardings, None, None)
            ),
            learn=jax.jit(
                jax.vmap(functools.partial(learn_step, pipeline)),
                in_shardings=(shardings, None, None),
                out_shardings=(shardings, None),
            ),
            select=jax.jit(
                _select, in_shardings=(None, shardings, shardings), out_shardings=shardings
            ),
            copy_networks=jax.jit(
                _copy_networks, in_shardings=(shardings, None), out_shardings=shardings
            ),
        )
    return _COMPILED[key]


def _select(active, new, old):
    """`new` for the active members, `old` for the frozen ones."""

    def pick(n, o):
        return jnp.where(active.reshape((-1,) + (1,) * (n.ndim - 1)), n, o)

    return jax.tree.map(pick, new, old)


def _copy_networks(state, sources):
    """Each member's learner state (network, optimizer, update count) from `sources[k]`."""
    return state.replace(train_state=jax.tree.map(lambda x: x[sources], state.train_state))


def _check(members: Sequence[Settings], workdirs) -> None:
    if not members or len(members) != len(workdirs):
        raise UserError("a population needs one workdir per member config (at least one)")
    if len({str(w) for w in workdirs}) != len(workdirs):
        raise UserError("the members of a population need distinct workdirs")
    keys = {s.pipeline_key for s in members}
    if len(keys) > 1:
        raise UserError(
            "the members of a population may differ only in "
            f"{', '.join(TUNABLE_KEYS)}, seed, name and bookkeeping; these differ "
            "in shape-changing keys (train them as separate populations)"
        )
    if any(s.run.gating for s in members):
        raise UserError("train.gating is not supported in populations")


def train_population(
    members: Sequence[Settings],
    workdirs: Sequence[str | Path],
    *,
    mesh=None,
    quiet: bool = False,
    progress: str = "bar",
    callback: Callable[[int, dict], bool | None] | None = None,
    pbt: pbt_lib.PBT | None = None,
) -> list[dict]:
    """Trains (or resumes) the `members` in `workdirs` as one population
    (`azjax.train_population` takes their configs and builds them).

    Ctrl-C or SIGTERM saves every member at its last complete iteration and raises
    KeyboardInterrupt; rerunning resumes.

    Args:
      members: the records of each member's config (`build.make_settings`; one pipeline,
        see the module docstring).
      workdirs: one run directory per member.
      mesh: the devices (default: all); the members' games and replay are split over them.
      quiet: no messages, progress or TensorBoard files.
      progress: "bar" (one tqdm bar for the population), "lines" (a line per member per
        iteration) or "none".
      callback: `callback(member, record)` after each member's record is written; True
        stops that member there (saved; pruning), the others go on.
      pbt: population-based training settings, or None.

    Returns:
      Each member's last record (None for a member that ran no iteration).
    """
    members = list(members)
    workdirs = [workdir_path(w) for w in workdirs]
    _check(members, workdirs)
    if progress not in ("bar", "lines", "none"):
        raise UserError(f"progress must be 'bar', 'lines' or 'none', not {progress!r}")
    if pbt is not None:
        pbt = pbt.check(members)
    primary = distributed.is_primary()  # the process that prints and writes the files
    log = (lambda *_: None) if quiet or not primary else _log.info
    progress = "none" if quiet or not primary else progress

    def each(index: int, record: dict) -> bool | None:
        """A line per member per iteration ("lines"), then the callback."""
        if progress == "lines":
            print(f"[{opened[index].workdir.name}] " + progress_line(record), flush=True)
        return callback is not None and callback(index, record)

    with interrupt.deferred(), contextlib.ExitStack() as held:
        bound_cloud_writes(members[0].run.storage_timeout_s)
        for settings, workdir in zip(members, workdirs, strict=True):
            distributed.check_same_run(settings.config_json, workdir)
            # Checked first (nothing is made for a refused run), then again under the lock.
            prepare_workdir(settings, workdir, allow_config_change=False, write=False)
        run = compile_population(members[0], len(members), mesh)
        single = compiled.compile_run(members[0], mesh)
        # A state too large for memory: refused before anything is written or allocated.
        keys = Stacked().join([jax.random.PRNGKey(s.run.seed) for s in members])
        memory_check.check_state(run.init, keys)
        for settings, workdir in zip(members, workdirs, strict=True):
            held.enter_context(lock.hold(workdir, primary=primary))
            prepare_workdir(settings, workdir, allow_config_change=False, write=primary)
        opened = [
            Member.open(s, w, index=i)
            for i, (s, w) in enumerate(zip(members, workdirs, strict=True))
        ]
        loop = PopulationLoop(
            run,
            single,
            opened,
            axis=Stacked(),
            log=log,
            primary=primary,
            tensorboard=not quiet,
            pbt=pbt,
        )
        with checkpoint.closing([m.checkpointer for m in opened]):
            # One bar for the population ("bar"); its lines are the members' (`each`).
            loop.train(progress="bar" if progress == "bar" else "none", callback=each)
        return [m.writer.records[-1] if m.writer.records else None for m in opened]


class PopulationLoop(HostLoop):
    """The host loop (`host_loop.HostLoop`) of a population: each member's hyperparameters
    in its records and checkpoints, and PBT's exploit and explore."""

    def __init__(self, *args, pbt: pbt_lib.PBT | None, **kwargs):
        super().__init__(*args, **kwargs)
        self.pbt = pbt
        steps = [set(m.checkpointer.all_steps()) for m in self.members]
        common = set.intersection(*steps) if all(steps) else set()
        # PBT members decide together: resume all at their newest common iteration.
        self.common = None
        if pbt is not None and common and len(set(map(max, steps))) > 1:
            self.common = max(common)

    def resume_step(self, index: int) -> int | None:
        return self.common

    def restored(self, index: int, restored, start: int) -> None:
        member = self.members[index]
        if restored is not None and restored.config is not None:  # hyperparameters PBT changed
            values = saved.tunable(restored.config, source=str(member.workdir))
            member.settings = member.settings.retuned(values)
        if self.pbt is not None and self.primary:
            pbt_lib.truncate_log(member.workdir, start)

    def columns(self, index: int) -> dict:
        values = self.members[index].settings.tunable
        return {f"hyper/{key}": value for key, value in values.items()}

    def started(self, platform: str) -> None:
        self.log(
            f"training a population of {len(self.members)} ({self.members[0].run.game}) on "
            f"{platform}; first iteration compiles"
        )

    def report(self, state, elapsed: float, *, interrupted: bool, preempted: bool) -> None:
        if interrupted or preempted:
            reason = "preempted" if preempted else "interrupted"
            self.log(f"{reason}: saved every member; run the same command again to resume")
            raise KeyboardInterrupt

    def between(self, state):
        iterations = [m.iteration for m in self.members]
        if self.pbt is None or not self.pbt.due(max(iterations)):
            return state
        if any(m.stopped for m in self.members):
            return state
        return self.exploit(state, max(iterations))

    def exploit(self, state, iteration: int):
        """PBT's exploit and explore step at `iteration` (see `pbt`)."""
        objective = self.pbt.objective
        # Process 0's values (it alone evaluates), so that every process decides alike.
        values = [
            distributed.agree(pbt_lib.latest(m.writer.records, objective)) for m in self.members
        ]
        sources = pbt_lib.decide(self.pbt, values, iteration)
        before = [dict(m.settings.tunable) for m in self.members]
        for k, source in enumerate(sources):
            member, donor = self.members[k], self.members[source]
            decision = {"iteration": iteration, "objective": objective, "value": values[k]}
            if source == k:
                decision.update(action="keep", hyperparameters=before[k])
            else:
                after = pbt_lib.perturb(self.pbt, before[source], iteration, k)
                member.settings = member.settings.retuned(after)
                decision.update(
                    action="exploit",
                    source=donor.workdir.name,
                    source_value=values[source],
                    hyperparameters=after,
                )
                self.log(
                    f"pbt: {member.workdir.name} ({values[k]:.3g}) copies "
                    f"{donor.workdir.name} ({values[source]:.3g})"
                )
            if self.primary:
                pbt_lib.log_decision(member.workdir, decision)
        if sources == list(range(len(self.members))):
            return state
        return self.run.copy_networks(state, np.asarray(sources, np.int32))
