"""The AlphaGo Zero policy-value ResNet in Flax NNX, used as a pure function of pytrees.

The module is built once, split with `nnx.split` into a static graph definition and
two plain nested dicts (parameters, BatchNorm statistics), and merged back inside the
pure `apply`. Everything outside this file (mctx, optax, orbax, sharding) only sees
plain pytrees.

Mixed precision: `dtype="bfloat16"` computes the convolutions, dense layers and activations
in bfloat16, while the parameters (so gradients and optimizer state) and the BatchNorm
statistics stay float32, BatchNorm normalises in float32, and the outputs come back float32.
`dtype="float32"` (the default) computes every operation in float32.
"""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from azjax.types import Array, PRNGKey


class Variables(NamedTuple):
    """Network state as plain pytrees."""

    params: dict  # trainable weights (nnx.Param), nested dict of arrays
    batch_stats: dict  # BatchNorm running mean and variance (nnx.BatchStat)


class Network(NamedTuple):
    """Pure functions of a network.

    init(key) -> Variables  # float32 parameters and statistics, whatever the compute dtype
    apply(variables, obs [B, H, W, C], train: bool) -> (logits [B, A], value [B], batch_stats)
      # obs of any numeric dtype (float32, uint8, bool); logits and value float32
    """

    init: Callable[[PRNGKey], Variables]
    apply: Callable[..., tuple[Array, Array, dict]]


def _keep_dtypes(args: tuple, /, *, dtype=None, inexact: bool = True) -> tuple:
    """A BatchNorm `promote_dtype` that casts nothing: a bfloat16 input meets the float32
    statistics, scale and bias, so it is normalised in float32, and the result is cast to the
    layer's dtype at the end."""
    return args


class ConvBN(nnx.Module):
    """Convolution without bias followed by BatchNorm, computed in `dtype` (BatchNorm
    normalises in float32 and returns `dtype`); float32 parameters and statistics."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        kernel: int,
        *,
        dtype: jnp.dtype = jnp.float32,
        rngs: nnx.Rngs,
    ):
        self.conv = nnx.Conv(
            in_features,
            out_features,
            (kernel, kernel),
            padding="SAME",
            use_bias=False,
            dtype=dtype,
            param_dtype=jnp.float32,
            rngs=rngs,
        )
        self.norm = nnx.BatchNorm(
            out_features,
            momentum=0.9,
            dtype=dtype,
            param_dtype=jnp.float32,
            promote_dtype=_keep_dtypes,
            rngs=rngs,
        )

    def __call__(self, x: Array, train: bool) -> Array:
        return self.norm(self.conv(x), use_running_average=not train)


class ResidualBlock(nnx.Module):
    """conv-BN-ReLU-conv-BN, skip connection, ReLU."""

    def __init__(self, channels: int, *, dtype: jnp.dtype = jnp.float32, rngs: nnx.Rngs):
        self.first = ConvBN(channels, channels, 3, dtype=dtype, rngs=rngs)
        self.second = ConvBN(channels, channels, 3, dtype=dtype, rngs=rngs)

    def __call__(self, x: Array, train: bool) -> Array:
        y = nnx.relu(self.first(x, train))
        return nnx.relu(x + self.second(y, train))


class ResNet(nnx.Module):
    """Policy-value network of AlphaGo Zero (Silver et al. 2017, Methods), sized by config."""

    def __init__(
        self,
        observation_shape: tuple[int, int, int],
        num_actions: int,
        *,
        channels: int,
        num_blocks: int,
        policy_channels: int = 2,
        value_channels: int = 1,
        value_hidden: int = 256,
        dtype: jnp.dtype = jnp.float32,
        rngs: nnx.Rngs,
    ):
        height, width, planes = observation_shape
        self.dtype = dtype
        # Every layer computes in `dtype` with float32 parameters.
        conv = dict(dtype=dtype, rngs=rngs)
        dense = dict(dtype=dtype, param_dtype=jnp.float32, rngs=rngs)
        self.stem = ConvBN(planes, channels, 3, **conv)
        # Named attributes (not a list) keep every parameter path a string, as orbax expects.
        self.num_blocks = num_blocks
        for index in range(num_blocks):
            setattr(self, f"block{index}", ResidualBlock(channels, **conv))
        self.policy_conv = ConvBN(channels, policy_channels, 1, **conv)
        self.policy_out = nnx.Linear(height * width * policy_channels, num_actions, **dense)
        self.value_conv = ConvBN(channels, value_channels, 1, **conv)
        self.value_hidden = nnx.Linear(height * width * value_channels, value_hidden, **dense)
        self.value_out = nnx.Linear(value_hidden, 1, **dense)

    def __call__(self, obs: Array, train: bool = False) -> tuple[Array, Array]:
        """Maps observations [B, H, W, C] of any numeric dtype to float32 policy logits [B, A]
        and values [B] in [-1, 1]."""
        obs = obs.astype(self.dtype)
        x = nnx.relu(self.stem(obs, train))
        for index in range(self.num_blocks):
            x = getattr(self, f"block{index}")(x, train)
        policy = nnx.relu(self.policy_conv(x, train))
        logits = self.policy_out(policy.reshape(policy.shape[0], -1)).astype(jnp.float32)
        value = nnx.relu(self.value_conv(x, train))
        value = nnx.relu(self.value_hidden(value.reshape(value.shape[0], -1)))
        value = jnp.tanh(self.value_out(value).astype(jnp.float32))[:, 0]
        return logits, value


def make_network(
    observation_shape: tuple[int, int, int],
    num_actions: int,
    *,
    channels: int,
    num_blocks: int,
    policy_channels: int = 2,
    value_channels: int = 1,
    value_hidden: int = 256,
    dtype: str = "float32",
) -> Network:
    """Builds the pure `init` and `apply` functions of a `ResNet` that computes in `dtype`
    ("float32" or "bfloat16"); its parameters are float32 either way."""
    compute_dtype = jnp.dtype(dtype)
    if compute_dtype not in (jnp.dtype(jnp.float32), jnp.dtype(jnp.bfloat16)):
        raise ValueError(f"unknown network dtype {dtype!r}; use float32 or bfloat16")

    def build(key: PRNGKey) -> ResNet:
        return ResNet(
            observation_shape,
            num_actions,
            channels=channels,
            num_blocks=num_blocks,
            policy_channels=policy_channels,
            value_channels=value_channels,
            value_hidden=value_hidden,
            dtype=compute_dtype,
            rngs=nnx.Rngs(params=key),
        )

    abstract_model = nnx.eval_shape(lambda: build(jax.random.key(0)))
    graphdef, _, _ = nnx.split(abstract_model, nnx.Param, nnx.BatchStat)

    def init(key: PRNGKey) -> Variables:
        _, params, batch_stats = nnx.split(build(key), nnx.Param, nnx.BatchStat)
        return Variables(nnx.to_pure_dict(params), nnx.to_pure_dict(batch_stats))

    def apply(variables: Variables, obs: Array, train: bool = False):
        model = nnx.merge(graphdef, variables.params, variables.batch_stats)
        logits, value = model(obs, train=train)
        if not train:
            return logits, value, variables.batch_stats
        _, _, batch_stats = nnx.split(model, nnx.Param, nnx.BatchStat)
        return logits, value, nnx.to_pure_dict(batch_stats)

    return Network(init=init, apply=apply)
