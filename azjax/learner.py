"""The AlphaZero loss and a jittable update step.

loss = mean (z - v)^2  +  mean CE(pi, p)  +  c * ||theta||^2
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from azjax.networks import Network, Variables
from azjax.replay import Batch
from azjax.types import Array


class TrainState(NamedTuple):
    """Network variables, optimizer state and the number of updates taken."""

    variables: Variables
    opt_state: Any
    step: Array  # [] int32


class Learner(NamedTuple):
    """init(variables) -> TrainState; update(state, batch) -> (state, metrics dict)."""

    init: Callable[[Variables], TrainState]
    update: Callable[[TrainState, Batch], tuple[TrainState, dict]]


def make_schedule(
    *,
    learning_rate: float,
    schedule: str = "constant",
    warmup_steps: int = 0,
    decay_steps: int = 1,
    boundaries: tuple[int, ...] = (),
    decay_factor: float = 0.1,
) -> optax.Schedule:
    """Learning-rate schedule: "constant", "cosine" (to 0 at decay_steps) or "piecewise"
    (multiplied by `decay_factor` at each of `boundaries`, as in AlphaGo Zero); an optional
    linear warm-up precedes it."""
    if schedule == "constant":
        main = optax.constant_schedule(learning_rate)
    elif schedule == "cosine":
        main = optax.cosine_decay_schedule(learning_rate, max(decay_steps, 1))
    elif schedule == "piecewise":
        main = optax.piecewise_constant_schedule(
            learning_rate, {int(b): decay_factor for b in boundaries}
        )
    else:
        raise ValueError(f"unknown schedule {schedule!r}; use constant, cosine or piecewise")
    if warmup_steps <= 0:
        return main
    warmup = optax.linear_schedule(0.0, learning_rate, warmup_steps)
    return optax.join_schedules([warmup, main], [warmup_steps])


def make_optimizer(
    name: str, schedule: optax.Schedule, *, momentum: float = 0.9, max_grad_norm: float = 0.0
) -> optax.GradientTransformation:
    """SGD with Nesterov-free momentum (AlphaZero) or Adam, with optional gradient clipping."""
    if name == "sgd":
        optimizer = optax.sgd(schedule, momentum=momentum)
    elif name == "adam":
        optimizer = optax.adam(schedule)
    else:
        raise ValueError(f"unknown optimizer {name!r}; use sgd or adam")
    if max_grad_norm > 0:
        optimizer = optax.chain(optax.clip_by_global_norm(max_grad_norm), optimizer)
    return optimizer


def loss_terms(network: Network, variables: Variables, batch: Batch, weight_decay: float):
    """Returns (total loss, (new batch statistics, metrics)) for one minibatch."""
    logits, value, batch_stats = network.apply(variables, batch.obs, True)
    value_loss = jnp.mean(jnp.square(batch.value - value))
    log_policy = jax.nn.log_softmax(logits)
    policy_loss = jnp.mean(optax.safe_softmax_cross_entropy(logits, batch.policy))
    l2 = sum(jnp.sum(jnp.square(p)) for p in jax.tree.leaves(variables.params))
    total = value_loss + policy_loss + weight_decay * l2
    policy = jnp.exp(log_policy)
    metrics = {
        "loss": total,
        "value_loss": value_loss,
        "policy_loss": policy_loss,
        "l2": l2,
        "policy_entropy": jnp.mean(-jnp.sum(policy * log_policy, axis=-1)),
        "target_entropy": jnp.mean(
            -jnp.sum(batch.policy * jnp.log(jnp.where(batch.policy > 0, batch.policy, 1.0)), -1)
        ),
    }
    return total, (batch_stats, metrics)


def make_learner(
    network: Network, optimizer: optax.GradientTransformation, *, weight_decay: float
) -> Learner:
    """Builds the pure learner for `network` trained with `optimizer`."""

    def init(variables: Variables) -> TrainState:
        return TrainState(variables, optimizer.init(variables.params), jnp.zeros((), jnp.int32))

    def update(state: TrainState, batch: Batch) -> tuple[TrainState, dict]:
        def loss_fn(params):
            return loss_terms(
                network, Variables(params, state.variables.batch_stats), batch, weight_decay
            )

        grads, (batch_stats, metrics) = jax.grad(loss_fn, has_aux=True)(state.variables.params)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.variables.params)
        params = optax.apply_updates(state.variables.params, updates)
        metrics["grad_norm"] = optax.tree.norm(grads)
        return TrainState(Variables(params, batch_stats), opt_state, state.step + 1), metrics

    return Learner(init=init, update=update)


def learner_from_config(network: Network, config) -> tuple[Learner, optax.Schedule]:
    """The learner and learning-rate schedule described by `config.learner`."""
    schedule = make_schedule(
        learning_rate=config.learning_rate,
        schedule=config.schedule,
        warmup_steps=config.warmup_steps,
        decay_steps=config.decay_steps,
        boundaries=tuple(config.boundaries),
        decay_factor=config.decay_factor,
    )
    optimizer = make_optimizer(
        config.optimizer, schedule, momentum=config.momentum, max_grad_norm=config.max_grad_norm
    )
    return make_learner(network, optimizer, weight_decay=config.weight_decay), schedule
