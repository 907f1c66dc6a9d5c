"""Mixed precision (`network.dtype`): float32 computes exactly as before, bfloat16 computes in
bfloat16 with float32 parameters, statistics and outputs, stays close to float32, trains, and
its runs load as agents."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_same_variables, tiny_config
from flax import nnx

from azjax import config as config_lib
from azjax.apps import api
from azjax.config import base_config
from azjax.core import learner
from azjax.core.learner import Optimizer, make_schedule
from azjax.core.networks import Variables, make_network
from azjax.matches import agent as agent_lib
from azjax.types import Batch, UserError

# The options of self-play, search and the learner are checked in the slow set (CI runs
# it): the quick tier (`pytest tests/games tests/core`) keeps the rules and the pipeline.
pytestmark = pytest.mark.slow


class _ConvBN(nnx.Module):
    def __init__(self, features_in, features_out, kernel, *, rngs):
        self.conv = nnx.Conv(
            features_in, features_out, (kernel, kernel), padding="SAME", use_bias=False, rngs=rngs
        )
        self.norm = nnx.BatchNorm(features_out, momentum=0.9, rngs=rngs)

    def __call__(self, x, train):
        return self.norm(self.conv(x), use_running_average=not train)


class _Block(nnx.Module):
    def __init__(self, channels, *, rngs):
        self.first = _ConvBN(channels, channels, 3, rngs=rngs)
        self.second = _ConvBN(channels, channels, 3, rngs=rngs)

    def __call__(self, x, train):
        return nnx.relu(x + self.second(nnx.relu(self.first(x, train)), train))


class _ReferenceResNet(nnx.Module):
    """The network as it was before `network.dtype` existed (Flax's default dtypes, the input
    cast to float32): the same modules built in the same order, so the same key gives the
    same parameters."""

    def __init__(self, shape, actions, channels, num_blocks, value_hidden, *, rngs):
        height, width, planes = shape
        self.stem = _ConvBN(planes, channels, 3, rngs=rngs)
        self.num_blocks = num_blocks
        for index in range(num_blocks):
            setattr(self, f"block{index}", _Block(channels, rngs=rngs))
        self.policy_conv = _ConvBN(channels, 2, 1, rngs=rngs)
        self.policy_out = nnx.Linear(height * width * 2, actions, rngs=rngs)
        self.value_conv = _ConvBN(channels, 1, 1, rngs=rngs)
        self.value_hidden = nnx.Linear(height * width, value_hidden, rngs=rngs)
        self.value_out = nnx.Linear(value_hidden, 1, rngs=rngs)

    def __call__(self, obs, train):
        x = nnx.relu(self.stem(obs.astype(jnp.float32), train))
        for index in range(self.num_blocks):
            x = getattr(self, f"block{index}")(x, train)
        policy = nnx.relu(self.policy_conv(x, train))
        logits = self.policy_out(policy.reshape(policy.shape[0], -1))
        value = nnx.relu(self.value_conv(x, train))
        value = nnx.relu(self.value_hidden(value.reshape(value.shape[0], -1)))
        return logits, jnp.tanh(self.value_out(value))[:, 0]


# Connect Four's observations and the default network of `base_config` (32 channels, 3 blocks).
SHAPE, ACTIONS = (6, 7, 2), 7
SIZE = dict(channels=32, num_blocks=3, value_hidden=64)


def observations(batch: int = 64):
    """Boards of 0/1 planes (stones), as the games' observations are."""
    return (jax.random.uniform(jax.random.PRNGKey(1), (batch, *SHAPE)) < 0.3).astype(jnp.float32)


def test_float32_computes_exactly_as_before():
    network = make_network(SHAPE, ACTIONS, **SIZE, dtype="float32")
    key = jax.random.PRNGKey(0)
    variables = network.init(key)
    reference = _ReferenceResNet(SHAPE, ACTIONS, **SIZE, rngs=nnx.Rngs(params=key))
    _, params, stats = nnx.split(reference, nnx.Param, nnx.BatchStat)
    assert_same_variables(variables, Variables(nnx.to_pure_dict(params), nnx.to_pure_dict(stats)))
    graphdef, state = nnx.split(reference)
    obs = observations()
    for train in (False, True):
        logits, value, new_stats = jax.jit(network.apply, static_argnums=2)(variables, obs, train)

        @jax.jit
        def run(state, obs, train=train):  # the weights as arguments, as `apply` takes them
            model = nnx.merge(graphdef, state)
            logits, value = model(obs, train)
            return logits, value, nnx.to_pure_dict(nnx.state(model, nnx.BatchStat))

        expected_logits, expected_value, expected_stats = run(state, obs)
        # Bit-identical: the same operations in the same order, in float32.
        np.testing.assert_array_equal(logits, expected_logits)
        np.testing.assert_array_equal(value, expected_value)
        assert_same_variables(new_stats, expected_stats)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_parameters_statistics_and_outputs_stay_float32_for_any_input_dtype(dtype):
    network = make_network(SHAPE, ACTIONS, channels=8, num_blocks=1, value_hidden=8, dtype=dtype)
    variables = network.init(jax.random.PRNGKey(0))
    assert all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(variables))
    obs = observations(8)
    logits, value, stats = network.apply(variables, obs, True)
    assert logits.dtype == value.dtype == jnp.float32
    assert all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(stats))
    # Compact observations (uint8, bool) are cast exactly, so they give the same outputs.
    for compact in (obs.astype(jnp.uint8), obs.astype(bool)):
        other_logits, other_value, _ = network.apply(variables, compact, True)
        np.testing.assert_array_equal(other_logits, logits)
        np.testing.assert_array_equal(other_value, value)


def test_bfloat16_stays_close_to_float32():
    """The same parameters and inputs through the float32 and the bfloat16 network.

    Tolerance: a bfloat16 number keeps 8 significant bits, so rounding to it changes a number
    by at most 2^-8 of its magnitude (half an ulp, the unit roundoff). Each layer rounds its
    inputs and weights to bfloat16, so with D layers on the path to an output the error is
    about D roundoffs of the activations' scale, which is about 1 (BatchNorm normalises every
    layer) or the output's own scale if larger: we allow D * 2^-8 * max(1, max |float32
    output|). The policy path has D = 9 layers (stem, 6 block
    convolutions, policy convolution, policy dense layer), the value path D = 10 (value
    convolution and two dense layers). Measured on these inputs (64 boards of random 0/1
    planes): train mode (batch statistics) 0.023 on logits of magnitude up to 2.6 (bound
    0.093) and 0.0088 on values (bound 0.039); inference with the running statistics of one
    train step 0.0032 and 0.0011 (bounds 0.035 and 0.039). Go 9x9's network (64 channels, 6
    blocks, D = 15 and 16) on the same kind of inputs: 0.045 and 0.024 in train mode, 0.017
    and 0.005 in inference.
    """
    f32 = make_network(SHAPE, ACTIONS, **SIZE, dtype="float32")
    b16 = make_network(SHAPE, ACTIONS, **SIZE, dtype="bfloat16")
    variables = f32.init(jax.random.PRNGKey(0))
    obs = observations()
    _, _, stats = f32.apply(variables, obs, True)  # running statistics of real activations
    cases = [(variables, True), (Variables(variables.params, stats), False)]
    roundoff = 2.0**-8
    for inputs, train in cases:
        logits, value, _ = jax.jit(f32.apply, static_argnums=2)(inputs, obs, train)
        low_logits, low_value, _ = jax.jit(b16.apply, static_argnums=2)(inputs, obs, train)
        logits_error = float(jnp.max(jnp.abs(low_logits - logits)))
        value_error = float(jnp.max(jnp.abs(low_value - value)))
        assert logits_error < 9 * roundoff * max(1.0, float(jnp.max(jnp.abs(logits)))), train
        assert value_error < 10 * roundoff * max(1.0, float(jnp.max(jnp.abs(value)))), train
        # It really computes in bfloat16: float32 would agree to about 1e-6.
        assert logits_error > 1e-4


def test_bfloat16_learner_fits_a_fixed_batch():
    """As tests/test_replay_learner_network.py::test_learner_fits_a_fixed_batch (Adam), with
    the same thresholds: the loss falls below 0.6 of its start, the value loss below 0.5 and
    the policy loss within 0.5 of the targets' entropy after 150 updates. The float32 network
    gets there too; bfloat16 only rounds the forward pass, gradients reach float32 weights."""
    network = make_network(
        (3, 3, 2), 9, channels=8, num_blocks=2, value_hidden=16, dtype="bfloat16"
    )
    key = jax.random.PRNGKey(0)
    batch = Batch(
        obs=jax.random.normal(key, (32, 3, 3, 2)),
        policy=jax.nn.softmax(3 * jax.random.normal(jax.random.PRNGKey(1), (32, 9))),
        value=jnp.sign(jax.random.normal(jax.random.PRNGKey(2), (32,))),
    )
    shape = make_schedule(schedule="cosine", warmup_steps=5, decay_steps=200)
    optimizer = Optimizer("adam", shape)
    state = learner.init(optimizer, network.init(key))
    floats = [leaf for leaf in jax.tree.leaves(state.opt_state) if leaf.dtype != jnp.int32]
    assert floats and all(leaf.dtype == jnp.float32 for leaf in floats)  # Adam's moments

    def update(state, _):
        return learner.update(
            network, optimizer, state, batch, learning_rate=jnp.float32(3e-3), weight_decay=1e-4
        )

    final, metrics = jax.jit(lambda s: jax.lax.scan(update, s, None, length=150))(state)
    assert all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(final.variables))
    assert all(metrics[k].dtype == jnp.float32 for k in ("loss", "value_loss", "policy_loss"))
    assert float(metrics["loss"][-1]) < 0.6 * float(metrics["loss"][0])
    assert float(metrics["value_loss"][-1]) < 0.5
    assert float(metrics["policy_loss"][-1] - metrics["target_entropy"][-1]) < 0.5


def test_bfloat16_run_trains_and_loads_as_an_agent(tmp_path):
    config = tiny_config()
    config.network.dtype = "bfloat16"
    config.train.num_iterations = 2
    state = api.train(config, tmp_path, quiet=True)
    assert int(state.train_state.step) > 0
    leaves = jax.tree.leaves((state.train_state.variables, state.train_state.opt_state))
    assert all(leaf.dtype in (jnp.float32, jnp.int32) for leaf in leaves)
    assert json.loads((tmp_path / "config.json").read_text())["network"]["dtype"] == "bfloat16"
    agent = agent_lib.load_agent(tmp_path)
    assert_same_variables(agent.variables, state.train_state.variables)
    states = jax.vmap(agent.game.init)(jax.random.split(jax.random.PRNGKey(0), 3))
    assert agent.act(states, jax.random.PRNGKey(1)).action.shape == (3,)
    logits, value = agent.policy_value(states)
    assert logits.dtype == value.dtype == jnp.float32


def test_dtype_key_is_validated_compiled_and_defaults_for_older_runs():
    config = base_config()
    assert config.network.dtype == "float32"
    with pytest.raises(UserError, match="network.dtype"):
        config_lib.apply_overrides(config, {"network.dtype": "float16"})
    low = base_config()
    low.network.dtype = "bfloat16"
    # It changes the compiled code: part of the pipeline key, and refused on resume.
    assert config_lib.pipeline_key(low) != config_lib.pipeline_key(config)
    assert config_lib.config_differences(
        json.loads(config_lib.to_json(config)), json.loads(config_lib.to_json(low))
    )
    # A run saved before the key existed computed in float32, and loads so.
    saved = json.loads(config_lib.to_json(config))
    del saved["network"]["dtype"]
    assert config_lib.from_dict(saved, source="old run").network.dtype == "float32"
