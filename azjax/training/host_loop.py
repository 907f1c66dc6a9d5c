"""The host loop of training, one for a run (`train.train`) and a population
(`population.train_population`): members as a parameter.

A member is one run directory (`members.Member`: its `Settings` (`config.settings`),
`Checkpointer`, `MetricsWriter` and evaluation). The loop restores each member from its
newest checkpoint (relaid out for this device count), steps the compiled iteration
(`compiled.iterate`), writes each active member's record (gating and evaluation included),
checkpoints, keeps the run's clock, and stops at the budget, at `train.max_minutes`, on a
signal, at a preemption notice or when the callback says so, saved; rerunning resumes. The
loop sees the members through an `axis` chosen where it is built: a single run's state is the
member's own (`members.Single`); a population's has a leading member axis
(`members.Stacked`), and a member past its budget or stopped by the callback is frozen by the
compiled `select` while the others step.

With several processes every process runs this loop in step: the same jitted calls and
collectives in the same order. Process 0 alone writes files, prints and evaluates (on its own
devices, from a host copy of the replicated network); decisions that could differ between
processes (a signal, the clock, the callback) are agreed on (`distributed`).
"""

import dataclasses
import math
import sys
import time
import types
from collections.abc import Callable

import jax
import numpy as np

from azjax import interrupt
from azjax.core.steps import TrainerState
from azjax.faults import is_disk_full
from azjax.runs import distributed
from azjax.runs.metrics import Progress, iteration_record
from azjax.runs.trackers import Profiler
from azjax.training import compute
from azjax.training.compiled import iterate
from azjax.training.evaluation import evaluation_for
from azjax.training.members import Member, Single, Stacked
from azjax.types import RunError, StorageLost


class HostLoop:
    """Trains `members` with the compiled `run` (`compiled.CompiledRun`, or a population's
    `CompiledPopulation`) until each reaches its budget; see the module.

    Args:
      run: the compiled steps (`init`, `play`, `learn`, `shardings`; and `select` if stacked).
      member_run: one member's `CompiledRun` (its shardings restore a checkpoint); `run` itself
        for a single run.
      members: the members, one for a single run.
      axis: how the state holds the members: `members.Single()` or `members.Stacked()`.
      log: where messages go.
      primary: this process writes the files and evaluates (`distributed.is_primary`).
      tensorboard: write the trackers' files (TensorBoard and the config's `train.loggers`).
      gate: a single run's `gating` gate, or None.
      start: turns a single run's fresh state into the one its first iteration starts from
        (`pretrain.Pretraining`: a network pretrained on game records), or None; its
        `first_totals` are the totals the first iteration's compute adds to.

    Subclasses (`population.PopulationLoop`) add to the loop through `resume_step`,
    `restored`, `columns` and `between`, and word it through `started` and `report`.
    """

    def __init__(
        self,
        run,
        member_run,
        members: list[Member],
        *,
        axis: Single | Stacked,
        log: Callable[[str], None],
        primary: bool = True,
        tensorboard: bool = True,
        gate=None,
        start=None,
    ):
        self.run, self.member_run, self.members = run, member_run, members
        self.axis, self.log, self.primary = axis, log, primary
        self.tensorboard, self.gate, self.start = tensorboard, gate, start
        self.multiprocess = distributed.process_count() > 1
        self.costs = None  # `compute.Costs` of the members' pipeline, measured in `train`

    # Hooks for subclasses.

    def resume_step(self, index: int) -> int | None:
        """The step member `index` resumes from; None: its newest readable checkpoint."""
        del index
        return None

    def restored(self, index: int, restored, start: int) -> None:
        """Called after member `index` restored (`restored` is None for a new member)."""

    def columns(self, index: int) -> dict:
        """Extra columns of member `index`'s records."""
        del index
        return {}

    def between(self, state):
        """Called after each iteration's records and before its checkpoints; may change the
        state and the members' settings (the hyperparameters are read again)."""
        return state

    def started(self, platform: str) -> None:
        """The opening message."""
        first = self.members[0]
        self.log(
            f"training {first.run.game} in {first.workdir} on {platform}; first iteration compiles"
        )

    # The members on the state's member axis.

    def hyper(self):
        # Host arrays, as every process of a multi-process run passes the same ones.
        return self.axis.join([m.settings.hyper for m in self.members])

    def _put_elapsed(self, seconds: float):
        # Same sharding as the step's output, so the next call hits the compilation cache;
        # process 0's clock on every process (a global array holds one value everywhere).
        value = np.float32(distributed.agree(seconds))
        value = self.axis.join([value] * len(self.members))
        return jax.device_put(value, self.run.shardings.elapsed)

    def _variables(self, state, index: int):
        """Member `index`'s network on this host (for evaluation)."""
        variables = self.axis.member(state.train_state.variables, index)
        return distributed.to_host(variables) if self.multiprocess else variables

    # The loop.

    def restore(self) -> TrainerState:
        """The state, each member from its checkpoint; the members' metrics writers."""
        keys = self.axis.join([jax.random.PRNGKey(m.run.seed) for m in self.members])
        # Checked against memory before (`memory_check`, by `train` and `population`). An
        # allocation that fails even so raises here (one line: out of memory): reading any
        # other part of the state first would wait for good, deaf to signals (jaxlib).
        fresh = jax.block_until_ready(self.run.init(keys))
        states = []
        for index, member in enumerate(self.members):
            like, restored = member.restore(
                self.axis.member(fresh, index), self.member_run, step=self.resume_step(index)
            )
            start = 0 if restored is None else restored.step
            if member.seeded:
                self.log(
                    f"starting {member.workdir} from the export {member.origin.path}, "
                    f"iteration {start} (its replay refills first)"
                )
            elif restored is not None:
                self.log(f"resuming {member.workdir} from iteration {start}")
            self.restored(index, restored, start)  # before the writer: it may retune
            member.open_writer(
                restored, tensorboard=self.tensorboard and self.primary, files=self.primary
            )
            states.append(like)
        if all(m.iteration == 0 for m in self.members):
            return fresh if self.start is None else self.start(fresh)
        return self.axis.join(states, self.run.shardings)

    def begin_evaluations(self, state) -> None:
        """Each member's evaluation (on process 0): one compiled set of matches per distinct
        evaluation setting, forked per member, the Elo anchors rated once and shared."""
        if not self.primary:
            return
        begun = {}
        for index, member in enumerate(self.members):
            if member.run.eval_every <= 0:
                continue
            # The seed only draws the games: members differing in it share compiled matches.
            unseeded = dataclasses.replace(member.settings.eval, seed=0)
            shared = evaluation_for(
                dataclasses.replace(member.settings, eval=unseeded), self.run.pipeline
            )
            member.evaluation = shared.fork(seed=member.run.seed)
            member.evaluation.begin(
                self._variables(state, index),
                member.writer.records,
                member.workdir,
                anchors_from=begun.get(id(shared)),
            )
            begun.setdefault(id(shared), member.evaluation)

    def save(self, state, index: int, *, force: bool) -> None:
        """Saves member `index` (`members.Member.save`); the gate prunes its files."""
        member = self.members[index]
        member.save(self.axis.member(state, index), force=force)
        if self.gate is not None:
            self.gate.prune(member.checkpointer.all_steps(), member.writer.records)

    def record(self, state, index: int, metrics: dict, counters, seconds: float, clock):
        """Member `index`'s record of the iteration just run: gating and evaluation when
        due, and what it cost (`compute`), written."""
        member = self.members[index]
        previous = member.writer.records[-1] if member.writer.records else None
        if previous is None and self.start is not None:
            previous = self.start.first_totals
        iteration, games, positions = self.axis.member(counters, index)
        iteration = int(iteration)
        numbers = types.SimpleNamespace(
            iteration=iteration, num_games=games, num_positions=positions
        )
        metrics = {name: self.axis.member(value, index) for name, value in metrics.items()}
        record = iteration_record(member.run, numbers, metrics, seconds, clock())
        record.update(self.columns(index))
        if self.gate is not None:  # the gating match, when due, before evaluating
            record.update(self.gate(state.train_state.variables, iteration))
            record.update(wall_time=clock())
        every = member.run.eval_every
        if every > 0 and iteration % every == 0:
            started = time.perf_counter()
            if member.evaluation is not None:  # None on processes other than 0
                record.update(member.evaluation(self._variables(state, index), iteration))
            record.update(wall_time=clock(), eval_seconds=time.perf_counter() - started)
        record.update(compute.columns(self.member_run.pipeline, self.costs, record, previous))
        member.iteration = iteration
        return member.writer.write(record)

    def train(self, *, progress: str, callback) -> TrainerState:
        """Runs the loop; returns the final state. `progress`: "bar", "lines" or "none";
        `callback(index, record) -> True` stops that member, saved.

        Raises:
          KeyboardInterrupt: after saving, on a signal or a preemption notice.
          RunError: the disk is full (the last good checkpoint is named).
        """
        try:
            return self._train(progress, callback)
        except RunError:
            raise
        except Exception as error:
            if not is_disk_full(error):
                raise
            steps = [s for m in self.members for s in m.checkpointer.all_steps()]
            last = f"the last good checkpoint is iteration {max(steps)}" if steps else None
            raise RunError(
                f"the disk is full ({str(error).splitlines()[0][:120]}); "
                + (last or "no checkpoint")
            ) from None

    def _train(self, progress: str, callback) -> TrainerState:
        members, first = self.members, self.members[0]
        state = self.restore()
        # Read back from the compile cache when a run of the config measured them before.
        self.costs = compute.measure(self.member_run.pipeline, first.settings.pipeline_key)
        self.begin_evaluations(state)
        if self.gate is not None:
            self.gate.begin(state.train_state.variables, first.iteration, first.writer.records)
        reporter = Progress(first.run, progress)
        profiler = Profiler(first.run.profile, first.workdir) if self.primary else None
        self.started(f"{self.run.mesh.devices.size} {jax.devices()[0].platform} device(s)")
        # Wall-clock time of the run: everything since this session's loop began (compiling,
        # self-play, learning, evaluation, checkpoints) plus the sessions before a resume.
        resumed = float(np.max(distributed.to_host(state.elapsed)))
        session_start = time.perf_counter()

        def clock() -> float:
            return resumed + time.perf_counter() - session_start

        budgets = [60.0 * m.run.max_minutes for m in members if m.run.max_minutes > 0]
        deadline = min(budgets, default=math.inf)
        hyper, elapsed, session_iterations = self.hyper(), clock(), 0
        interrupted = preempted = False
        reporter.start(min(m.iteration for m in members))
        try:
            # The budgets alone here: a callback's stop is agreed on first.
            while not preempted and any(m.iteration < m.run.num_iterations for m in members):
                # A stop that any process wants, all processes make (one process alone would
                # leave the others waiting in the next collective).
                interrupted, out_of_time, *stopped = distributed.any_process(
                    bool(interrupt.requested()), elapsed >= deadline, *(m.stopped for m in members)
                )
                for member, stop in zip(members, stopped, strict=True):
                    member.stopped = stop
                if interrupted or out_of_time or not any(m.active for m in members):
                    break
                active = [m.active for m in members]
                started = time.perf_counter()
                if profiler is not None:
                    profiler.before(first.iteration + 1)
                best = None if self.gate is None else self.gate.variables  # gated self-play
                next_state, metrics = iterate(self.run, state, hyper, best)
                if next_state is None:
                    break
                next_state = self.axis.select(self.run, active, next_state, state)
                metrics = distributed.to_host(metrics)
                counters = distributed.to_host(
                    (next_state.iteration, next_state.num_games, next_state.num_positions)
                )
                if profiler is not None:
                    profiler.after(first.iteration + 1)
                seconds = time.perf_counter() - started
                state = next_state.replace(elapsed=self._put_elapsed(clock()))
                for index in np.flatnonzero(active):
                    record = self.record(state, index, metrics, counters, seconds, clock)
                    if callback is not None and callback(int(index), record):
                        members[index].stopped = True
                elapsed = clock()
                state = state.replace(elapsed=self._put_elapsed(elapsed))
                session_iterations += 1
                # Time per iteration in this session (compiling included) times those left,
                # or the time to `train.max_minutes` if that comes first.
                remaining = max(m.run.num_iterations - m.iteration for m in members)
                eta = remaining * (elapsed - resumed) / session_iterations
                reporter.update(first.writer.records[-1], min(eta, deadline - elapsed))
                changed = self.between(state)
                if changed is not state:  # PBT's exploit: networks and hyperparameters
                    state, hyper = changed, self.hyper()
                # orbax decides: every `train.checkpoint_every` iterations, and at the
                # iteration where all processes stop after a preemption notice (SIGTERM to any
                # host of a multi-host run); asked at every iteration, as the preemption sync
                # point needs. A member that has just stopped is saved at once.
                for index, member in enumerate(members):
                    due = member.checkpointer.should_save(member.iteration)
                    if member.iteration != member.saved and (due or not member.active):
                        self.save(
                            state.replace(elapsed=self._put_elapsed(clock())), index, force=not due
                        )
                preempted = any(m.checkpointer.reached_preemption(m.iteration) for m in members)
                elapsed = clock()
            if not self.multiprocess:
                interrupted = interrupted or bool(interrupt.requested())
            for index, member in enumerate(members):
                if member.iteration != member.saved:
                    self.save(state, index, force=True)
            for index, member in enumerate(members):
                if not member.checkpointer.wait():  # its checkpoints folder vanished
                    self.save(state, index, force=True)
                    member.checkpointer.wait()
        finally:
            reporter.close()
            if not isinstance(sys.exc_info()[1], StorageLost):  # else nothing more is written
                for member in members:
                    member.writer.close()
            if profiler is not None:
                profiler.close()
        self.report(state, elapsed, interrupted=interrupted, preempted=preempted)
        return state

    def report(self, state, elapsed: float, *, interrupted: bool, preempted: bool) -> None:
        """The closing message; KeyboardInterrupt after a signal or a preemption notice."""
        first = self.members[0]
        again = "run the same command again to resume"
        if first.stopped:
            self.log(
                f"stopped by the callback at iteration {first.saved}; saved in {first.workdir}"
            )
        if preempted:
            self.log(f"preempted: saved iteration {first.saved} in {first.workdir}; {again}")
            raise KeyboardInterrupt
        if interrupted:
            if first.checkpointer.all_steps():
                self.log(f"interrupted: saved iteration {first.saved} in {first.workdir}; {again}")
            else:
                self.log(
                    f"interrupted before the first iteration finished; nothing saved in "
                    f"{first.workdir}"
                )
            raise KeyboardInterrupt
        self.log(
            f"done: {int(state.iteration):,} iterations, {int(state.num_games):,} games, "
            f"{elapsed / 60:.1f} min; checkpoints in {first.workdir / 'checkpoints'}"
        )
