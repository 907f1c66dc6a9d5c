"""The AlphaGo Zero policy-value ResNet in Flax NNX, used as a pure function of pytrees.

The module is built once, split with `nnx.split` into a static graph definition and
two plain nested dicts (parameters, BatchNorm statistics), and merged back inside the
pure `apply`. Everything outside this file (mctx, optax, orbax, sharding) only sees
plain pytrees.

Options beside AlphaGo Zero's network, off by default (KataGo, Wu 2019, "Accelerating
Self-Play Learning in Go"): global pooling bias structures in some residual blocks
(`global_pooling_blocks`), an ownership head (a 1x1 convolution of the trunk, tanh per board
point) and a score head (a dense layer on the value head's hidden layer: the final score
margin over the board area, linear). With the heads on, `apply` still returns the policy and
value only; `apply_heads` adds the heads (the learner's). Off, the parameters and outputs are
exactly AlphaGo Zero's network's.

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
    apply_heads(variables, obs, train) -> (logits, value, heads: dict, batch_stats)
      # heads, float32, those the network has (none: {}): "ownership" [B, H*W] in [-1, 1]
      # and "ownership_logits" [B, H*W] (ownership = tanh(logits)) per board point, "score"
      # [B] the final score margin in points; all from the mover's view
    """

    init: Callable[[PRNGKey], Variables]
    apply: Callable[..., tuple[Array, Array, dict]]
    apply_heads: Callable[..., tuple[Array, Array, dict, dict]]


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


class GlobalPoolingBlock(nnx.Module):
    """A residual block with KataGo's global pooling bias (Wu 2019, section 3.3): beside the
    first conv-BN, a pooled branch (conv-BN-ReLU to `pooled` channels) is averaged and
    maximised over the board, and a dense layer of those 2 x `pooled` numbers adds a bias to
    each of the block's channels before the ReLU; then conv-BN, skip connection, ReLU as in
    `ResidualBlock`. It lets every point see the whole board (ko fights, the score, whose
    move matters where) in one block. KataGo's third pooled value, the mean scaled by the
    board's width, is a constant multiple of the mean on one board size and is left out."""

    def __init__(
        self, channels: int, pooled: int, *, dtype: jnp.dtype = jnp.float32, rngs: nnx.Rngs
    ):
        self.first = ConvBN(channels, channels, 3, dtype=dtype, rngs=rngs)
        self.pool_conv = ConvBN(channels, pooled, 3, dtype=dtype, rngs=rngs)
        self.pool_dense = nnx.Linear(
            2 * pooled, channels, use_bias=False, dtype=dtype, param_dtype=jnp.float32, rngs=rngs
        )
        self.second = ConvBN(channels, channels, 3, dtype=dtype, rngs=rngs)

    def __call__(self, x: Array, train: bool) -> Array:
        pooled = nnx.relu(self.pool_conv(x, train))
        features = jnp.concatenate(
            [jnp.mean(pooled, axis=(1, 2)), jnp.max(pooled, axis=(1, 2))], axis=-1
        )
        bias = self.pool_dense(features)[:, None, None, :]
        y = nnx.relu(self.first(x, train) + bias)
        return nnx.relu(x + self.second(y, train))


def global_pooling_blocks(num_blocks: int) -> tuple[int, ...]:
    """The residual blocks (0-based) that get a global pooling bias: every third from the
    third (2, 5, 8, ...; KataGo's larger networks space them about so), or the last one of a
    network of one or two blocks (KataGo's b2c16 has it in its second of two)."""
    blocks = tuple(range(2, num_blocks, 3))
    return blocks or ((num_blocks - 1,) if num_blocks else ())


def pooled_channels(channels: int) -> int:
    """The channels of a global pooling branch: a quarter of the trunk's (KataGo: 32 of 128,
    64 of 256), at least 1."""
    return max(1, channels // 4)


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
        global_pooling: bool = False,
        ownership_head: bool = False,
        score_head: bool = False,
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
        pooling = global_pooling_blocks(num_blocks) if global_pooling else ()
        for index in range(num_blocks):
            if index in pooling:
                block = GlobalPoolingBlock(channels, pooled_channels(channels), **conv)
            else:
                block = ResidualBlock(channels, **conv)
            setattr(self, f"block{index}", block)
        self.policy_conv = ConvBN(channels, policy_channels, 1, **conv)
        self.policy_out = nnx.Linear(height * width * policy_channels, num_actions, **dense)
        self.value_conv = ConvBN(channels, value_channels, 1, **conv)
        self.value_hidden = nnx.Linear(height * width * value_channels, value_hidden, **dense)
        self.value_out = nnx.Linear(value_hidden, 1, **dense)
        self.points = height * width
        self.has_ownership, self.has_score = ownership_head, score_head
        if ownership_head:  # one number per point: who owns it at the end (tanh)
            self.ownership_out = nnx.Conv(
                channels, 1, (1, 1), dtype=dtype, param_dtype=jnp.float32, rngs=rngs
            )
        if score_head:  # the final score margin over the board area (linear)
            self.score_out = nnx.Linear(value_hidden, 1, **dense)

    def __call__(self, obs: Array, train: bool = False) -> tuple[Array, Array, dict]:
        """Maps observations [B, H, W, C] of any numeric dtype to float32 policy logits [B, A],
        values [B] in [-1, 1] and the heads the network has (`Network.apply_heads`)."""
        obs = obs.astype(self.dtype)
        x = nnx.relu(self.stem(obs, train))
        for index in range(self.num_blocks):
            x = getattr(self, f"block{index}")(x, train)
        policy = nnx.relu(self.policy_conv(x, train))
        logits = self.policy_out(policy.reshape(policy.shape[0], -1)).astype(jnp.float32)
        value = nnx.relu(self.value_conv(x, train))
        hidden = nnx.relu(self.value_hidden(value.reshape(value.shape[0], -1)))
        value = jnp.tanh(self.value_out(hidden).astype(jnp.float32))[:, 0]
        heads = {}
        if self.has_ownership:
            ownership = self.ownership_out(x).astype(jnp.float32).reshape(x.shape[0], -1)
            heads.update(ownership_logits=ownership, ownership=jnp.tanh(ownership))
        if self.has_score:
            heads["score"] = self.points * self.score_out(hidden).astype(jnp.float32)[:, 0]
        return logits, value, heads


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
    global_pooling: bool = False,
    ownership_head: bool = False,
    score_head: bool = False,
) -> Network:
    """Builds the pure `init` and `apply` functions of a `ResNet` that computes in `dtype`
    ("float32" or "bfloat16"); its parameters are float32 either way. `global_pooling`,
    `ownership_head` and `score_head` add KataGo's structures (see the module docstring)."""
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
            global_pooling=global_pooling,
            ownership_head=ownership_head,
            score_head=score_head,
            rngs=nnx.Rngs(params=key),
        )

    abstract_model = nnx.eval_shape(lambda: build(jax.random.key(0)))
    graphdef, _, _ = nnx.split(abstract_model, nnx.Param, nnx.BatchStat)

    def init(key: PRNGKey) -> Variables:
        _, params, batch_stats = nnx.split(build(key), nnx.Param, nnx.BatchStat)
        return Variables(nnx.to_pure_dict(params), nnx.to_pure_dict(batch_stats))

    def apply_heads(variables: Variables, obs: Array, train: bool = False):
        model = nnx.merge(graphdef, variables.params, variables.batch_stats)
        logits, value, heads = model(obs, train=train)
        if not train:
            return logits, value, heads, variables.batch_stats
        _, _, batch_stats = nnx.split(model, nnx.Param, nnx.BatchStat)
        return logits, value, heads, nnx.to_pure_dict(batch_stats)

    def apply(variables: Variables, obs: Array, train: bool = False):
        logits, value, _, batch_stats = apply_heads(variables, obs, train)
        return logits, value, batch_stats

    return Network(init=init, apply=apply, apply_heads=apply_heads)
