"""What a run's iterations cost: network evaluations, FLOPs, positions, updates and samples,
per iteration and cumulated, in every `metrics.jsonl` record.

    costs = compute.measure(pipeline, pipeline_key)  # XLA's cost analysis, once per pipeline
    record.update(compute.columns(pipeline, costs, record, previous_record))

A process measures a pipeline once; a command (its compile cache on) keeps the costs beside
its compiled programs, so a later run of the config reads them instead of lowering the two
programs again (`compile_cache.entry`).

The FLOPs are XLA's cost analysis of the programs (as lowered: nothing is compiled for it)
times their calls:

- one network evaluation (`forward_flops`): the network's inference pass at the self-play
  batch, divided by the batch;
- one learner update (`update_flops`): `learner.update` (forward, backward and optimizer)
  at the learner's minibatch.

Self-play's FLOPs are its network evaluations times `forward_flops`: every search evaluates
the root and one position per simulation, in every game slot at every ply (finished games
restart in place, so no slot idles). XLA counts a loop's body once whatever its trip count,
so the cost analysis of the whole self-play program (a scan of plies, each a loop of
simulations) would not count its work; the search's own bookkeeping and the game's rules,
which are small next to the network, are left out. Learning's FLOPs are `update_flops` times
the updates computed (`learner.updates_per_iteration`, including those computed before the
replay held `replay.min_size` positions and not applied). Evaluation's FLOPs are the run's
network evaluations in its evaluation matches (`evaluation.Evaluation`) times
`forward_flops`; opponents' own work (random playouts, engines, other networks) is not the
run's compute, and gating matches are not counted.

The columns (each per iteration, and cumulated from the run's start as `total_NAME`):
`selfplay_evaluations`, `eval_evaluations`, `selfplay_flops`, `learn_flops`, `eval_flops`,
`positions`, `learner_updates` (applied) and `samples` (applied updates times the
minibatch); `total_train_flops` is self-play's and learning's together, the compute axis of
a frontier study. `parameters` and `forward_flops` describe the network. Records of runs
written before these columns carry none; a run resumed from one counts its earlier
iterations as if each had cost what the first new one did.
"""

import dataclasses
import functools
import json
import math

import jax
import jax.numpy as jnp

from azjax import compile_cache
from azjax.core import learner
from azjax.core.steps import Pipeline, init_state, sample_batch
from azjax.paths import write_atomically

# Per-iteration counts; each is cumulated as `total_NAME`.
COUNTS = (
    "selfplay_evaluations",
    "eval_evaluations",
    "selfplay_flops",
    "learn_flops",
    "eval_flops",
    "positions",
    "learner_updates",
    "samples",
)


@dataclasses.dataclass(frozen=True)
class Costs:
    """The unit costs of a pipeline's programs (XLA's cost analysis)."""

    forward_flops: float  # one network evaluation: one position, inference
    update_flops: float  # one learner update on a minibatch
    parameters: int  # trainable parameters of the network


def program_flops(function, *args) -> float:
    """XLA's FLOP count of `function`'s program for `args` (arrays or `ShapeDtypeStruct`s):
    its cost analysis of the program as lowered, before XLA optimizes it, so nothing is
    compiled (or written to the compilation cache). A loop's body counts once, whatever its
    trip count: cost a loop's body, not the loop.
    """
    analysis = jax.jit(function).lower(*args).cost_analysis()
    if isinstance(analysis, list | tuple):  # older jax: one dict per program
        analysis = analysis[0]
    return float(analysis["flops"])


_COSTS: dict = {}


def measure(pipeline: Pipeline, pipeline_key: str | None = None) -> Costs:
    """The unit costs of `pipeline`'s network and learner, measured once per process for each
    pipeline (a network's forward pass and one update, lowered, not compiled: seconds).

    Args:
      pipeline: the run's pipeline (its mesh is ignored: the FLOPs of one device doing all).
      pipeline_key: the `Settings.pipeline_key` of the config `pipeline` was built from.
        With it, while the compile cache is on (`compile_cache.enable`: the commands), the
        costs are kept there (`compile_cache.entry`) and a later process reads them back.
    """
    key = (pipeline.game, pipeline.network, pipeline.optimizer, pipeline.selfplay_batch_size)
    key += (pipeline.learner_batch_size, pipeline.ownership_weight, pipeline.score_weight)
    if key in _COSTS:
        return _COSTS[key]
    stored = None if pipeline_key is None else compile_cache.entry("costs", pipeline_key)
    costs = None if stored is None else _read(stored)
    if costs is None:
        costs = _measure(pipeline)
        if stored is not None:
            try:
                write_atomically(stored, json.dumps(dataclasses.asdict(costs)).encode())
            except OSError:  # a cache is never a reason for a run to fail
                pass
    _COSTS[key] = costs
    return costs


def _read(path) -> Costs | None:
    """The costs kept in `path`; None where it is missing or unreadable."""
    try:
        kept = json.loads(path.read_text())
        forward, update, parameters = (kept[field.name] for field in dataclasses.fields(Costs))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    flops = (forward, update)
    if not all(type(v) is float and math.isfinite(v) and v >= 0 for v in flops):
        return None
    return Costs(forward, update, parameters) if type(parameters) is int else None


def _measure(pipeline: Pipeline) -> Costs:
    """`measure`, computed."""
    pipeline = dataclasses.replace(pipeline, mesh=None)
    state = jax.eval_shape(functools.partial(init_state, pipeline), jax.random.PRNGKey(0))
    variables = state.train_state.variables
    game, batch = pipeline.game, pipeline.selfplay_batch_size
    obs = jax.ShapeDtypeStruct((batch, *game.observation_shape), jnp.float32)
    forward = program_flops(lambda v, o: pipeline.network.apply(v, o, False)[:2], variables, obs)
    minibatch = jax.eval_shape(
        lambda s, k: sample_batch(pipeline, s.buffer, k), state, jax.random.PRNGKey(0)
    )

    def update(train_state, minibatch):
        return learner.update(
            pipeline.network,
            pipeline.optimizer,
            train_state,
            minibatch,
            learning_rate=1e-3,
            weight_decay=1e-4,
            ownership_weight=pipeline.ownership_weight,
            score_weight=pipeline.score_weight,
        )

    return Costs(
        forward_flops=forward / batch,
        update_flops=program_flops(update, state.train_state, minibatch),
        parameters=sum(int(x.size) for x in jax.tree.leaves(variables.params)),
    )


def selfplay_evaluations(pipeline: Pipeline, metrics: dict) -> int:
    """Network evaluations of one `play_step`: in each of B slots at each of T plies, the
    root and one per simulation (a playout cap's cheap plies, `playout_cap/full_fraction` of
    `metrics`, run the cheap search)."""
    plies, full = pipeline.num_steps, pipeline.num_steps
    per_search = 1 + pipeline.search.num_simulations
    cheap = 0
    if pipeline.rules.playout_cap is not None:
        full = round(float(metrics["playout_cap/full_fraction"]) * plies)
        cheap = (plies - full) * (1 + pipeline.rules.playout_cap.cheap_search.num_simulations)
    return pipeline.selfplay_batch_size * (full * per_search + cheap)


def columns(pipeline: Pipeline, costs: Costs, record: dict, previous: dict | None) -> dict:
    """The compute columns of an iteration's record (see the module).

    Args:
      record: the iteration's record so far: its metrics (`updates`, the learner's step
        after it), and `eval_evaluations` when it evaluated.
      previous: the record of the iteration before (None for the first), whose `total_`
        columns this one's add to.
    """
    previous = previous or {}
    updates_before = previous.get("updates", 0.0)
    applied = max(0, round(float(record.get("updates", 0.0)) - float(updates_before)))
    evaluations = selfplay_evaluations(pipeline, record)
    eval_evaluations = int(record.get("eval_evaluations", 0))
    counts = {
        "selfplay_evaluations": evaluations,
        "eval_evaluations": eval_evaluations,
        "selfplay_flops": evaluations * costs.forward_flops,
        "learn_flops": pipeline.updates_per_iteration * costs.update_flops,
        "eval_flops": eval_evaluations * costs.forward_flops,
        "positions": pipeline.selfplay_batch_size * pipeline.num_steps,
        "learner_updates": applied,
        "samples": applied * pipeline.learner_batch_size,
    }
    out = {"parameters": costs.parameters, "forward_flops": costs.forward_flops, **counts}
    # Positions, updates and samples have exact counters; the rest add to the previous
    # record's totals (a run resumed from records without them: its earlier iterations as
    # this one, and no evaluation).
    exact = {
        "positions": int(record["total_positions"]),
        "learner_updates": round(float(record.get("updates", 0.0))),
    }
    exact["samples"] = exact["learner_updates"] * pipeline.learner_batch_size
    before = int(record["iteration"]) - 1
    for name, value in counts.items():
        if name in exact:
            out[f"total_{name}"] = exact[name]
            continue
        total = previous.get(f"total_{name}")
        if total is None:
            total = 0 if name.startswith("eval_") else before * value
        out[f"total_{name}"] = total + value
    out["total_train_flops"] = out["total_selfplay_flops"] + out["total_learn_flops"]
    return out
