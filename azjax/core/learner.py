"""The AlphaZero loss and a jittable update step.

loss = w * mean (z - v)^2  +  mean CE(pi, p)  +  c * ||theta||^2  (w: value_loss_weight, 1)
       [+ w_o * mean_b (1/P) sum_points BCE((o+1)/2, (ô+1)/2)  +  w_s * mean ((s - ŝ) / P)^2]

The bracketed terms are KataGo's auxiliary targets (Wu 2019, section 4.1), each on when its
weight is above 0 (static): the final ownership o in {-1, 0, 1} of each of the P board
points, predicted as ô = tanh (the binary cross-entropy of the probabilities (o+1)/2, as
KataGo's loss, computed from the head's logits), and the final score margin s in points,
predicted as ŝ, both from the mover's view; the score error is measured in board areas, so
that one weight means the same on every board size.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from azjax.core.networks import Network, Variables
from azjax.types import Array, Batch


class TrainState(NamedTuple):
    """Network variables, optimizer state and the number of updates taken."""

    variables: Variables
    opt_state: Any
    step: Array  # [] int32


def make_schedule(
    *,
    learning_rate: float | Array = 1.0,
    schedule: str = "constant",
    warmup_steps: int = 0,
    decay_steps: int = 1,
    boundaries: tuple[int, ...] = (),
    decay_factor: float = 0.1,
) -> optax.Schedule:
    """Learning-rate schedule: "constant", "cosine" (to 0 at decay_steps) or "piecewise"
    (multiplied by `decay_factor` at each of `boundaries`, as in AlphaGo Zero); an optional
    linear warm-up precedes it. With the default `learning_rate=1` it is the schedule's shape,
    which the learner multiplies by a (possibly traced) learning rate."""
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
    name: str,
    learning_rate: optax.ScalarOrSchedule,
    *,
    momentum: float = 0.9,
    max_grad_norm: float = 0.0,
) -> optax.GradientTransformation:
    """SGD with Nesterov-free momentum (AlphaZero) or Adam, with optional gradient clipping."""
    if name == "sgd":
        optimizer = optax.sgd(learning_rate, momentum=momentum)
    elif name == "adam":
        optimizer = optax.adam(learning_rate)
    else:
        raise ValueError(f"unknown optimizer {name!r}; use sgd or adam")
    if max_grad_norm > 0:
        optimizer = optax.chain(optax.clip_by_global_norm(max_grad_norm), optimizer)
    return optimizer


class Optimizer(NamedTuple):
    """The static description of an optimizer whose learning rate is supplied per call.

    `transform(learning_rate)` is the optax transformation for a (possibly traced) base
    learning rate, multiplied by the schedule's shape at each update; its state's structure
    does not depend on the rate, so one `init` serves every rate.
    """

    name: str  # "sgd" or "adam"
    shape: optax.Schedule  # the schedule at learning rate 1
    momentum: float = 0.9
    max_grad_norm: float = 0.0

    def transform(self, learning_rate: float | Array) -> optax.GradientTransformation:
        shape = self.shape
        return make_optimizer(
            self.name,
            lambda count: learning_rate * shape(count),
            momentum=self.momentum,
            max_grad_norm=self.max_grad_norm,
        )


def loss_terms(
    network: Network,
    variables: Variables,
    batch: Batch,
    weight_decay: float | Array,
    value_loss_weight: float | Array = 1.0,
    ownership_weight: float = 0.0,
    score_weight: float = 0.0,
):
    """Returns (total loss, (new batch statistics, metrics)) for one minibatch.

    `ownership_weight` and `score_weight` (static; > 0: the network has the head and the
    batch the target) add KataGo's auxiliary losses (see the module docstring)."""
    aux = {}
    if ownership_weight > 0 or score_weight > 0:
        logits, value, heads, batch_stats = network.apply_heads(variables, batch.obs, True)
        if ownership_weight > 0:
            # BCE of p = (1 + tanh x) / 2 = sigmoid(2x) against q = (o + 1) / 2, per point.
            per_point = optax.sigmoid_binary_cross_entropy(
                2.0 * heads["ownership_logits"], (batch.ownership + 1.0) / 2.0
            )
            aux["ownership_loss"] = (ownership_weight, jnp.mean(per_point))
        if score_weight > 0:
            points = batch.obs.shape[1] * batch.obs.shape[2]  # P = H * W
            error = (batch.score - heads["score"]) / points
            aux["score_loss"] = (score_weight, jnp.mean(jnp.square(error)))
    else:
        logits, value, batch_stats = network.apply(variables, batch.obs, True)
    value_loss = jnp.mean(jnp.square(batch.value - value))
    log_policy = jax.nn.log_softmax(logits)
    policy_loss = jnp.mean(optax.safe_softmax_cross_entropy(logits, batch.policy))
    l2 = sum(jnp.sum(jnp.square(p)) for p in jax.tree.leaves(variables.params))
    total = value_loss_weight * value_loss + policy_loss + weight_decay * l2
    for weight, loss in aux.values():
        total = total + weight * loss
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
    metrics.update({name: loss for name, (_, loss) in aux.items()})
    return total, (batch_stats, metrics)


def init(optimizer: Optimizer, variables: Variables) -> TrainState:
    """The learner state of freshly initialised network `variables`."""
    opt_state = optimizer.transform(1.0).init(variables.params)
    return TrainState(variables, opt_state, jnp.zeros((), jnp.int32))


def update(
    network: Network,
    optimizer: Optimizer,
    state: TrainState,
    batch: Batch,
    *,
    learning_rate: float | Array,
    weight_decay: float | Array,
    value_loss_weight: float | Array = 1.0,
    ownership_weight: float = 0.0,
    score_weight: float = 0.0,
) -> tuple[TrainState, dict]:
    """One gradient step on a minibatch.

    Args:
      network: the network's pure functions.
      optimizer: the optimizer (static).
      state: variables, optimizer state and update count.
      batch: the minibatch (obs [B, H, W, C], policy [B, A], value [B]).
      learning_rate: base learning rate (a float or a traced scalar), times the schedule.
      weight_decay: the L2 coefficient c (a float or a traced scalar).
      value_loss_weight: the value loss's weight w (a float or a traced scalar).
      ownership_weight, score_weight: the auxiliary losses' weights (static; 0: off).

    Returns:
      The new state and the minibatch's metrics (losses, entropies, gradient norm).
    """

    def loss_fn(params):
        return loss_terms(
            network,
            Variables(params, state.variables.batch_stats),
            batch,
            weight_decay,
            value_loss_weight,
            ownership_weight,
            score_weight,
        )

    transform = optimizer.transform(learning_rate)
    grads, (batch_stats, metrics) = jax.grad(loss_fn, has_aux=True)(state.variables.params)
    updates, opt_state = transform.update(grads, state.opt_state, state.variables.params)
    params = optax.apply_updates(state.variables.params, updates)
    metrics["grad_norm"] = optax.tree.norm(grads)
    return TrainState(Variables(params, batch_stats), opt_state, state.step + 1), metrics
