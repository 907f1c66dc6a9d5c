"""Replay ring, learner update and network shapes."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from azjax.core import learner, replay
from azjax.core.learner import Optimizer, make_optimizer, make_schedule
from azjax.core.networks import make_network
from azjax.types import Batch


def write(buffer, movers, ended=None, rewards=None, lengths=None):
    """One ply of len(movers) slots whose positions are boards filled with the slot number."""
    slots = len(movers)
    obs = jnp.arange(slots, dtype=jnp.uint8)[:, None, None, None] * jnp.ones(
        (1, 1, 1, 1), jnp.uint8
    )
    policy = jnp.tile(jnp.array([[0.25, 0.75]]), (slots, 1))
    ended = jnp.zeros(slots, bool) if ended is None else jnp.asarray(ended)
    rewards = jnp.zeros((slots, 2)) if rewards is None else jnp.asarray(rewards, jnp.float32)
    lengths = jnp.zeros(slots, jnp.int32) if lengths is None else jnp.asarray(lengths)
    entry = replay.Entry(obs, policy, jnp.asarray(movers), ended, rewards, lengths)
    return replay.write(buffer, entry, max_length=3)


def test_ring_writes_each_ply_and_labels_a_game_by_its_movers_when_it_ends():
    buffer = replay.init(6, (1, 1, 1), 2)  # 2 slots x 3 plies
    buffer, labelled = write(buffer, [0, 0])
    buffer, labelled = write(buffer, [1, 1])
    assert int(labelled) == 0 and int(buffer.size) == 0 and int(buffer.next_index) == 4
    # Slot 0's game ends at its 3rd ply, won by player 0; slot 1's runs on.
    buffer, labelled = write(
        buffer, [0, 0], ended=[True, False], rewards=[[1, -1], [0, 0]], lengths=[3, 0]
    )
    assert int(labelled) == 3 and int(buffer.next_index) == 0
    np.testing.assert_array_equal(buffer.value[0::2], [1, -1, 1])  # slot 0: movers 0, 1, 0
    assert np.isnan(buffer.value[1::2]).all()
    # The ring wraps: slot 0's next game overwrites its oldest position; slot 1's game, 4
    # plies long, would reach past the ring (max_length 3): only its last 3 are labelled.
    buffer, labelled = write(
        buffer, [1, 1], ended=[False, True], rewards=[[0, 0], [-1, 1]], lengths=[0, 4]
    )
    assert int(labelled) == 3
    # Slot 1's ring places 1, 3, 5 hold its plies 4, 2, 3 (movers 1, 1, 0); player 1 won.
    np.testing.assert_array_equal(buffer.player[1::2], [1, 1, 0])
    np.testing.assert_array_equal(buffer.value[1::2], [1, 1, -1])
    assert buffer.player[0] == 1 and np.isnan(buffer.value[0])
    np.testing.assert_array_equal(buffer.obs[:, 0, 0, 0], [0, 1, 0, 1, 0, 1])


def test_sample_draws_only_labelled_rows_decoded_and_renormalised():
    buffer = replay.init(100, (1, 1, 1), 2)
    for _ in range(10):
        buffer, _ = write(buffer, [0, 1])
    # Label only slot 1's 10 positions (a 10-ply game, player 1 won).
    buffer = buffer.replace(value=buffer.value.at[1:20:2].set(1.0))
    batch = replay.sample(buffer, jax.random.PRNGKey(0), 1000)
    np.testing.assert_array_equal(batch.obs[:, 0, 0, 0], np.ones(1000))  # slot 1's boards
    assert batch.obs.dtype == jnp.float32 and (batch.value == 1).all()
    # bfloat16 holds 0.25 and 0.75 exactly; the rows sum to 1.
    np.testing.assert_allclose(batch.policy, [[0.25, 0.75]] * 1000)


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
