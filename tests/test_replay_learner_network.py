"""Replay ring, learner update and network shapes."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from azjax import learner, replay
from azjax.learner import Optimizer, make_optimizer, make_schedule
from azjax.networks import make_network
from azjax.types import Batch


def rows(values):
    values = jnp.asarray(values, jnp.float32)
    return Batch(
        obs=values[:, None, None, None] * jnp.ones((1, 1, 1, 1)),
        policy=jnp.stack([values, -values], -1),
        value=values,
    )


def test_ring_buffer_keeps_valid_rows_in_order_and_wraps():
    buffer = replay.init(5, (1, 1, 1), 2)
    buffer = replay.add(buffer, rows([1, 2, 3, 4]), jnp.array([True, False, True, True]))
    np.testing.assert_array_equal(buffer.value[:3], [1, 3, 4])
    assert int(buffer.size) == 3 and int(buffer.next_index) == 3
    buffer = replay.add(buffer, rows([5, 6, 7]), jnp.array([True, True, True]))
    # 6 rows through a ring of 5: the oldest (1) is overwritten by 7.
    np.testing.assert_array_equal(buffer.value, [7, 3, 4, 5, 6])
    np.testing.assert_array_equal(buffer.policy[:, 1], -buffer.value)
    assert int(buffer.size) == 5 and int(buffer.next_index) == 1


def test_sample_draws_only_stored_rows():
    buffer = replay.init(100, (1, 1, 1), 2)
    buffer = replay.add(buffer, rows(np.arange(1, 11)), jnp.ones(10, bool))
    batch = replay.sample(buffer, jax.random.PRNGKey(0), 1000)
    assert set(np.unique(batch.value)) == set(range(1, 11))
    np.testing.assert_array_equal(batch.obs[:, 0, 0, 0], batch.value)


NETWORK = make_network((3, 3, 2), 9, channels=8, num_blocks=2, value_hidden=16)


def test_network_shapes_value_range_and_batch_norm_modes():
    variables = NETWORK.init(jax.random.PRNGKey(0))
    obs = jax.random.normal(jax.random.PRNGKey(1), (5, 3, 3, 2))
    logits, value, stats = NETWORK.apply(variables, obs, False)
    assert logits.shape == (5, 9) and value.shape == (5,)
    assert bool(jnp.all(jnp.abs(value) <= 1))
    assert jax.tree.all(
        jax.tree.map(lambda a, b: bool(jnp.all(a == b)), stats, variables.batch_stats)
    )
    _, _, train_stats = NETWORK.apply(variables, obs, True)
    changed = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), train_stats, variables.batch_stats)
    assert all(jax.tree.leaves(changed))
    # AlphaGo Zero layout: stem + 2 blocks x 2 convs, 3x3 kernels, no conv bias.
    params = variables.params
    assert params["stem"]["conv"]["kernel"].shape == (3, 3, 2, 8)
    assert params["block1"]["second"]["conv"]["kernel"].shape == (3, 3, 8, 8)
    assert params["policy_conv"]["conv"]["kernel"].shape == (1, 1, 8, 2)
    assert params["policy_out"]["kernel"].shape == (3 * 3 * 2, 9)
    assert params["value_conv"]["conv"]["kernel"].shape == (1, 1, 8, 1)
    assert params["value_hidden"]["kernel"].shape == (9, 16)
    assert params["value_out"]["kernel"].shape == (16, 1)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_learner_fits_a_fixed_batch(optimizer):
    key = jax.random.PRNGKey(0)
    obs = jax.random.normal(key, (32, 3, 3, 2))
    policy = jax.nn.softmax(3 * jax.random.normal(jax.random.PRNGKey(1), (32, 9)))
    value = jnp.sign(jax.random.normal(jax.random.PRNGKey(2), (32,)))
    batch = Batch(obs=obs, policy=policy, value=value)
    rate = 0.05 if optimizer == "sgd" else 3e-3
    shape = make_schedule(schedule="cosine", warmup_steps=5, decay_steps=200)
    opt = Optimizer(optimizer, shape)
    state = learner.init(opt, NETWORK.init(key))

    def update(state, _):
        return learner.update(
            NETWORK, opt, state, batch, learning_rate=jnp.float32(rate), weight_decay=1e-4
        )

    @jax.jit
    def train(state):
        return jax.lax.scan(update, state, None, length=150)

    final, metrics = train(state)
    assert int(final.step) == 150
    assert float(metrics["loss"][-1]) < 0.6 * float(metrics["loss"][0])
    assert float(metrics["value_loss"][-1]) < 0.5
    # The policy loss approaches the entropy of the targets (its minimum).
    assert float(metrics["policy_loss"][-1] - metrics["target_entropy"][-1]) < 0.5


def test_schedules():
    piecewise = make_schedule(learning_rate=0.2, schedule="piecewise", boundaries=(10, 20))
    assert np.isclose(piecewise(5), 0.2) and np.isclose(piecewise(15), 0.02)
    assert np.isclose(piecewise(25), 0.002)
    warm = make_schedule(learning_rate=1.0, schedule="constant", warmup_steps=10)
    assert np.isclose(warm(5), 0.5) and np.isclose(warm(50), 1.0)
    with pytest.raises(ValueError):
        make_schedule(learning_rate=1.0, schedule="exponential")
    assert isinstance(make_optimizer("sgd", warm, max_grad_norm=1.0), optax.GradientTransformation)
