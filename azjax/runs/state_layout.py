"""A trainer state as a checkpoint holds it: the two array items, `params` (the network
variables) and `trainer` (everything else), and a replay written on another number of
devices re-laid for this one."""

import dataclasses
import functools
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils

from azjax.core import replay
from azjax.core.steps import TrainerState


def split_state(state: TrainerState) -> tuple[Any, dict]:
    """(network variables, everything else) of a trainer state (or a population's stacked
    one): the two array items a checkpoint holds (`checkpoint.Checkpointer`)."""
    rest = {"opt_state": state.train_state.opt_state, "step": state.train_state.step}
    for field in dataclasses.fields(state):
        if field.name != "train_state":
            rest[field.name] = getattr(state, field.name)
    return state.train_state.variables, rest


def join_state(like: TrainerState, variables, rest: dict) -> TrainerState:
    """Inverse of `split_state`: a state shaped like `like` from the two items."""
    train_state = like.train_state._replace(
        variables=variables, opt_state=rest["opt_state"], step=rest["step"]
    )
    fields = {f.name: rest[f.name] for f in dataclasses.fields(like) if f.name != "train_state"}
    return like.replace(train_state=train_state, **fields)


def relayout(state: TrainerState, shardings: TrainerState, num_shards: int) -> TrainerState:
    """`state` restored from a checkpoint written on another number of devices, its replay
    rings re-laid for `num_shards` (`replay.relayout_plan`); `state` itself otherwise.

    Only the small per-position arrays (movers, values) and the slots' game lengths come to
    the host (gathered from every process); the positions move on the devices."""
    old_shards = int(jax.device_get(state.buffer.num_shards))
    if old_shards == num_shards:
        return state
    gather = functools.partial(multihost_utils.process_allgather, tiled=True)
    buffer = state.buffer
    source, next_index = replay.relayout_plan(
        np.asarray(gather(buffer.player)),
        np.asarray(gather(buffer.value)),
        int(jax.device_get(buffer.next_index)),
        old_shards,
        np.asarray(gather(state.selfplay.num_pending)),
        num_shards,
    )
    move = jax.jit(
        functools.partial(replay.apply_relayout, num_shards=num_shards),
        out_shardings=shardings.buffer,
    )
    return state.replace(buffer=move(buffer, source, next_index))
