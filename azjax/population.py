"""Populations: K variants of one experiment trained in one compiled program.

The members' configs may differ only in the tunable scalars (`config.TUNABLE_KEYS`: learning
rate, weight decay, value-loss weight, Dirichlet alpha and fraction, PUCT constants, Gumbel
scale, temperature moves), `seed` and `name`, the keys that reach the step functions as
arguments (`build.Hyperparams`), and in bookkeeping (iterations, evaluation). The step
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

With `pbt` (`azjax.pbt.PBT`) the members exploit and explore every `pbt.every` iterations.
"""

import functools
import json
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from azjax import build, compiled, distributed, interrupt, train
from azjax import config as config_lib
from azjax import pbt as pbt_lib
from azjax.build import Pipeline
from azjax.checkpoint import Checkpointer, join_state, split_state
from azjax.metrics import MetricsWriter, Progress, progress_line
from azjax.paths import workdir_path
from azjax.runs import prepare_workdir
from azjax.steps import TrainerState, init_state, learn_step, play_step, relayout
from azjax.types import UserError

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


def compile_population(config, num_members: int, mesh=None) -> CompiledPopulation:
    """The jitted step functions of a population of `num_members` members of `config`'s
    pipeline, vmapped over the member axis; `learn` takes the learner keys chunk first as
    `compiled.iterate` loops over them. Built once per process, pipeline and K."""
    single = compiled.compile_run(config, mesh)
    key = (
        config_lib.pipeline_key(config),
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


def member(tree, index: int):
    """Member `index` of a stacked [K, ...] tree."""
    return jax.tree.map(lambda x: x[index], tree)


def stack(trees: Sequence):
    """The [K, ...] tree of K members' trees."""
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


def _select(active, new, old):
    """`new` for the active members, `old` for the frozen ones."""

    def pick(n, o):
        return jnp.where(active.reshape((-1,) + (1,) * (n.ndim - 1)), n, o)

    return jax.tree.map(pick, new, old)


def _copy_networks(state, sources):
    """Each member's learner state (network, optimizer, update count) from `sources[k]`."""
    return state.replace(train_state=jax.tree.map(lambda x: x[sources], state.train_state))


def hyperparameters(config) -> dict:
    """The tunable keys of `config` and their values ({"learner.learning_rate": 1e-3, ...})."""
    return {key: config[key.split(".")[0]][key.split(".")[1]] for key in config_lib.TUNABLE_KEYS}


def with_hyperparameters(config, values: dict):
    """A copy of `config` with `values` (config key -> value) set."""
    config = ml_collections.ConfigDict(config.to_dict())
    for key, value in values.items():
        group, field = key.split(".")
        config[group][field] = value
    return config


def _check(configs, workdirs) -> None:
    if not configs or len(configs) != len(workdirs):
        raise UserError("a population needs one workdir per member config (at least one)")
    if len({str(w) for w in workdirs}) != len(workdirs):
        raise UserError("the members of a population need distinct workdirs")
    keys = {config_lib.pipeline_key(c) for c in configs}
    if len(keys) > 1:
        raise UserError(
            "the members of a population may differ only in "
            f"{', '.join(config_lib.TUNABLE_KEYS)}, seed, name and bookkeeping; these differ "
            "in shape-changing keys (train them as separate populations)"
        )
    if any(c.train.gating for c in configs):
        raise UserError("train.gating is not supported in populations")
    if distributed.process_count() > 1:
        raise UserError("populations run in one process (a sweep runs one per host)")


def train_population(
    configs: Sequence[ml_collections.ConfigDict],
    workdirs: Sequence[str | Path],
    *,
    mesh=None,
    quiet: bool = False,
    progress: str = "bar",
    callback: Callable[[int, dict], bool | None] | None = None,
    pbt: pbt_lib.PBT | None = None,
) -> list[dict]:
    """Trains (or resumes) the members `configs` in `workdirs` as one population.

    Ctrl-C or SIGTERM saves every member at its last complete iteration and raises
    KeyboardInterrupt; rerunning resumes.

    Args:
      configs: one config per member (same pipeline; see the module docstring).
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
    configs = [ml_collections.ConfigDict(c.to_dict()) for c in configs]
    workdirs = [workdir_path(w) for w in workdirs]
    _check(configs, workdirs)
    if progress not in ("bar", "lines", "none"):
        raise UserError(f"progress must be 'bar', 'lines' or 'none', not {progress!r}")
    if pbt is not None:
        pbt = pbt.check(configs)
    log = (lambda *_: None) if quiet else print
    with interrupt.deferred():
        for config, workdir in zip(configs, workdirs, strict=True):
            prepare_workdir(config, workdir, allow_config_change=False)
        run = compile_population(configs[0], len(configs), mesh)
        single = compiled.compile_run(configs[0], mesh)
        checkpointers = [
            Checkpointer(
                w,
                max_to_keep=c.train.keep_checkpoints,
                save_interval_steps=c.train.checkpoint_every,
            )
            for c, w in zip(configs, workdirs, strict=True)
        ]
        try:
            return _Loop(configs, workdirs, run, single, checkpointers, log, pbt).train(
                progress="none" if quiet else progress, callback=callback, tensorboard=not quiet
            )
        finally:
            for checkpointer in checkpointers:
                checkpointer.close()


class _Loop:
    """The host loop of a population (`train.train`'s, per member)."""

    def __init__(self, configs, workdirs, run, single, checkpointers, log, pbt):
        self.configs, self.workdirs, self.run, self.single = configs, workdirs, run, single
        self.checkpointers, self.log, self.pbt = checkpointers, log, pbt
        self.size = len(configs)

    def restore(self, tensorboard: bool):
        """The stacked state, each member from its newest checkpoint; the metrics writers."""
        fresh = self.run.init(jnp.stack([jax.random.PRNGKey(c.seed) for c in self.configs]))
        steps = [set(c.all_steps()) for c in self.checkpointers]
        common = set.intersection(*steps) if all(steps) else set()
        members, self.writers = [], []
        for index, (config, workdir) in enumerate(zip(self.configs, self.workdirs, strict=True)):
            checkpointer, like = self.checkpointers[index], member(fresh, index)
            restored = None
            if self.pbt is not None and common and len(set(map(max, steps))) > 1:
                # PBT members decide together: resume all at their newest common iteration.
                restored = checkpointer.restore(max(common), *split_state(like))
            elif steps[index]:
                restored = checkpointer.restore_newest(*split_state(like))
                if restored is None:
                    raise UserError(
                        f"no readable checkpoint in {checkpointer.directory}; start that member "
                        "over in another workdir"
                    )
            history, start = None, 0
            if restored is not None:
                state = jax.device_put(
                    join_state(like, restored.params, restored.trainer), self.single.shardings
                )
                like = relayout(state, self.single.shardings, self.single.pipeline.num_shards)
                history, start = restored.metrics, restored.step
                if restored.config is not None:  # hyperparameters PBT changed
                    saved = config_lib.from_dict(restored.config, source=str(workdir))
                    self.configs[index] = with_hyperparameters(config, hyperparameters(saved))
                self.log(f"resuming {workdir} from iteration {restored.step}")
            if self.pbt is not None:
                pbt_lib.truncate_log(workdir, start)
            members.append(like)
            self.writers.append(
                MetricsWriter(
                    workdir,
                    history=history,
                    resume_iteration=start,
                    tensorboard=tensorboard,
                    config=self.configs[index],
                )
            )
        return jax.device_put(stack(members), self.run.shardings)

    def evaluations(self, state):
        """Each member's evaluation (None where it has none): one compiled set of matches per
        distinct evaluation setting, forked per member, anchors rated once and shared."""
        result, begun = [], {}
        for index, config in enumerate(self.configs):
            if config.eval.every <= 0:
                result.append(None)
                continue
            # The seed only draws the games: members differing in it share compiled matches.
            unseeded = with_hyperparameters(config, {})
            unseeded.seed = 0
            shared = train.evaluation_for(unseeded, self.run.pipeline)
            evaluation = shared.fork(seed=config.seed)
            variables = member(state.train_state.variables, index)
            evaluation.begin(
                variables,
                self.writers[index].records,
                self.workdirs[index],
                anchors_from=begun.get(id(shared)),
            )
            begun.setdefault(id(shared), evaluation)
            result.append(evaluation)
        return result

    def hyper(self):
        return stack([build.make_hyperparams(c) for c in self.configs])

    def save(self, index: int, state, *, force: bool) -> None:
        writer, checkpointer = self.writers[index], self.checkpointers[index]
        writer.sync()
        params, rest = split_state(member(state, index))
        checkpointer.wait()
        checkpointer.save(
            int(rest["iteration"]),
            params,
            rest,
            config=_as_json(self.configs[index]),
            metrics=writer.records,
            force=force,
        )

    def train(self, *, progress: str, callback, tensorboard: bool) -> list[dict]:
        state = self.restore(tensorboard)
        iterations = [int(i) for i in jax.device_get(state.iteration)]
        saved = list(iterations)
        budget = [c.train.num_iterations for c in self.configs]
        stopped = [False] * self.size
        evaluations = self.evaluations(state)
        reporter = Progress(self.configs[0], progress if progress == "bar" else "none")
        session_start, resumed = time.perf_counter(), float(jnp.max(state.elapsed))
        minutes = [c.train.max_minutes for c in self.configs]
        deadline = min((60.0 * m for m in minutes if m > 0), default=np.inf)

        def clock():
            return resumed + time.perf_counter() - session_start

        def active():
            return [not stopped[k] and iterations[k] < budget[k] for k in range(self.size)]

        self.log(
            f"training a population of {self.size} ({self.configs[0].game}) on "
            f"{self.run.mesh.devices.size} {jax.devices()[0].platform} device(s); "
            "first iteration compiles"
        )
        reporter.start(min(iterations))
        hyper, interrupted = self.hyper(), False
        try:
            while any(active()) and clock() < deadline:
                if interrupt.requested():
                    interrupted = True
                    break
                mask = jnp.asarray(active())
                started = time.perf_counter()
                next_state, metrics = compiled.iterate(self.run, state, hyper)
                if next_state is None:
                    interrupted = True
                    break
                state = self.run.select(mask, next_state, state)
                metrics = jax.device_get(metrics)
                seconds, elapsed = time.perf_counter() - started, clock()
                elapsed_all = jnp.full((self.size,), elapsed, jnp.float32)
                state = state.replace(
                    elapsed=jax.device_put(elapsed_all, self.run.shardings.elapsed)
                )
                counters = jax.device_get((state.iteration, state.num_games, state.num_positions))
                for k in np.flatnonzero(np.asarray(mask)):
                    iterations[k] = int(counters[0][k])
                    record = self.member_record(k, state, metrics, counters, seconds, evaluations)
                    if progress == "lines":
                        print(f"[{self.workdirs[k].name}] " + progress_line(record), flush=True)
                    if callback is not None and callback(int(k), record):
                        stopped[k] = True
                reporter.update(self.writers[0].records[-1], np.nan)
                if self.pbt is not None and self.pbt.due(max(iterations)) and not any(stopped):
                    state = self.exploit(state, max(iterations))
                    hyper = self.hyper()
                for k in range(self.size):
                    due = self.checkpointers[k].should_save(iterations[k])
                    if iterations[k] != saved[k] and (due or not active()[k]):
                        self.save(k, state, force=True)
                        saved[k] = iterations[k]
            interrupted = interrupted or bool(interrupt.requested())
            for k in range(self.size):
                if iterations[k] != saved[k]:
                    self.save(k, state, force=True)
            for k, checkpointer in enumerate(self.checkpointers):
                if not checkpointer.wait():  # its checkpoints folder vanished under the save
                    self.save(k, state, force=True)
                    checkpointer.wait()
        finally:
            reporter.close()
            for writer in self.writers:
                writer.close()
        if interrupted:
            self.log("interrupted: saved every member; run the same command again to resume")
            raise KeyboardInterrupt
        return [w.records[-1] if w.records else None for w in self.writers]

    def member_record(self, k, state, metrics, counters, seconds, evaluations) -> dict:
        config, writer = self.configs[k], self.writers[k]
        iteration = int(counters[0][k])
        numbers = types.SimpleNamespace(
            iteration=iteration, num_games=counters[1][k], num_positions=counters[2][k]
        )
        record = train.iteration_record(
            config,
            numbers,
            {name: value[k] for name, value in metrics.items()},
            seconds,
            float(state.elapsed[k]),
        )
        record.update({f"hyper/{key}": value for key, value in hyperparameters(config).items()})
        if evaluations[k] is not None and iteration % config.eval.every == 0:
            started = time.perf_counter()
            record.update(evaluations[k](member(state.train_state.variables, k), iteration))
            record["eval_seconds"] = time.perf_counter() - started
        return writer.write(record)

    def exploit(self, state, iteration: int):
        """PBT's exploit and explore step at `iteration` (see `pbt`)."""
        objective = self.pbt.objective
        values = [pbt_lib.latest(w.records, objective) for w in self.writers]
        sources = pbt_lib.decide(self.pbt, values, iteration)
        before = [hyperparameters(c) for c in self.configs]
        for k, source in enumerate(sources):
            decision = {"iteration": iteration, "objective": objective, "value": values[k]}
            if source == k:
                decision.update(action="keep", hyperparameters=before[k])
            else:
                after = pbt_lib.perturb(self.pbt, before[source], iteration, k)
                self.configs[k] = with_hyperparameters(self.configs[k], after)
                decision.update(
                    action="exploit",
                    source=self.workdirs[source].name,
                    source_value=values[source],
                    hyperparameters=after,
                )
                self.log(
                    f"pbt: {self.workdirs[k].name} ({values[k]:.3g}) copies "
                    f"{self.workdirs[source].name} ({values[source]:.3g})"
                )
            pbt_lib.log_decision(self.workdirs[k], decision)
        if sources == list(range(self.size)):
            return state
        return self.run.copy_networks(state, jnp.asarray(sources, jnp.int32))


def _as_json(config) -> dict:
    return json.loads(config_lib.to_json(config))
