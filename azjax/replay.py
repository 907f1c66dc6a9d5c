"""On-device replay buffer: a ring of labelled positions with pure init / add / sample."""

import jax
import jax.numpy as jnp
from flax import struct

from azjax.types import Array, Batch, PRNGKey


@struct.dataclass
class ReplayBuffer:
    """Fixed-capacity ring of (observation, policy target, value target) triples."""

    obs: Array  # [N, H, W, C] observations from the mover's view
    policy: Array  # [N, A] float32 search policy targets
    value: Array  # [N] float32 game outcome for the mover
    next_index: Array  # [] int32 where the next position is written
    size: Array  # [] int32 number of stored positions, at most N


def init(capacity: int, obs_shape: tuple[int, ...], num_actions: int, obs_dtype=jnp.float32):
    """Returns an empty buffer holding up to `capacity` positions."""
    return ReplayBuffer(
        obs=jnp.zeros((capacity, *obs_shape), obs_dtype),
        policy=jnp.zeros((capacity, num_actions), jnp.float32),
        value=jnp.zeros((capacity,), jnp.float32),
        next_index=jnp.zeros((), jnp.int32),
        size=jnp.zeros((), jnp.int32),
    )


def add(buffer: ReplayBuffer, batch: Batch, valid: Array) -> ReplayBuffer:
    """Appends the rows of `batch` where `valid` is True, in order, overwriting the oldest.

    Args:
      buffer: the ring.
      batch: M candidate rows (obs [M, ...], policy [M, A], value [M]).
      valid: [M] bool, which rows to store. At most N of them (the caller keeps M <= N).
    """
    capacity = buffer.value.shape[0]
    offsets = jnp.cumsum(valid.astype(jnp.int32)) - 1
    slots = jnp.where(valid, (buffer.next_index + offsets) % capacity, capacity)
    num_added = jnp.sum(valid.astype(jnp.int32))
    return buffer.replace(
        obs=buffer.obs.at[slots].set(batch.obs.astype(buffer.obs.dtype), mode="drop"),
        policy=buffer.policy.at[slots].set(batch.policy, mode="drop"),
        value=buffer.value.at[slots].set(batch.value, mode="drop"),
        next_index=(buffer.next_index + num_added) % capacity,
        size=jnp.minimum(buffer.size + num_added, capacity),
    )


def sample(buffer: ReplayBuffer, key: PRNGKey, batch_size: int) -> Batch:
    """Draws `batch_size` stored positions uniformly, with replacement."""
    index = jax.random.randint(key, (batch_size,), 0, jnp.maximum(buffer.size, 1))
    return Batch(obs=buffer.obs[index], policy=buffer.policy[index], value=buffer.value[index])
