"""On-device replay: compact positions written as they are played, labelled when their game
ends, in one ring per device of the `data` axis.

Layout. The buffer holds N positions split into D shards of N / D, one per device (D = 1
without a mesh). Each shard is a ring written by the self-play slots on its device: at every
ply, local slot j of B / D writes its position to `(next_index + j) % (N / D)`, and
`next_index` advances by B / D, the same in every shard. So the k-th last position of the
game in local slot j is at `(next_index - k * B / D + j) % (N / D)`, which is how a game's
positions are found and labelled when it ends, without keeping a list of them.

Stored per position: the observation in the game's compact dtype (`Game.encode_observation`:
uint8 planes, exact), the search policy in bfloat16 (relative rounding error at most 2^-9
per entry, renormalised when sampled), the mover (int8) and the value target (float32, NaN
until the game ends); optionally (None when off) the searched root value, and KataGo's
auxiliary targets, labelled with the value from the game's final position for the mover:
the ownership of every board point (int8 in {-1, 0, 1}, 0 until labelled) and the final
score margin (float32, NaN until labelled). `capacity >= selfplay batch * max game length`
(checked when the pipeline is built) means no position of a running game is overwritten
before it is labelled, so every position played is labelled exactly once, with its own
game's outcome.

Sampling draws uniformly among the labelled positions of each shard, each device its share
of the minibatch (inverse CDF over the labelled mask), so nothing crosses devices.

All functions take the *local* view (one shard); `sharded(mesh, f, ...)` wraps one with
`jax.shard_map` over the `data` axis.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.sharding import Mesh, PartitionSpec

from azjax.core.targets import outcome, policy_target, value_target
from azjax.types import Array, Batch, PRNGKey

POLICY_DTYPE = jnp.bfloat16


@struct.dataclass
class ReplayBuffer:
    """D rings of positions (see the module docstring); N = capacity."""

    obs: Array  # [N, H, W, C] compact observations from the mover's view
    policy: Array  # [N, A] bfloat16 search policy targets
    player: Array  # [N] int8 the mover (-1: never written)
    value: Array  # [N] float32 game outcome for the mover; NaN until labelled
    next_index: Array  # [] int32 where slot 0 of every shard writes next (a local index)
    num_shards: Array  # [] int32 D the rings are laid out for (a restore re-lays them)
    # [N] float32 the searched root value for the mover, when value targets mix it in
    # (`sample`'s `value_mix`); None otherwise.
    root_value: Array | None = None
    # [N, P] int8 who owns each of the P board points at the end of the game, from the
    # mover's view (+1 the mover), 0 until labelled; None: no ownership targets.
    ownership: Array | None = None
    # [N] float32 the game's final score margin for the mover; NaN until labelled; None: no
    # score targets.
    score: Array | None = None

    @property
    def size(self) -> Array:
        """[] int32 labelled positions (all shards)."""
        return jnp.sum(~jnp.isnan(self.value), dtype=jnp.int32)


def init(
    capacity: int,
    obs_shape,
    num_actions: int,
    obs_dtype=jnp.uint8,
    num_shards: int = 1,
    *,
    root_value: bool = False,
    ownership_points: int = 0,
    score: bool = False,
):
    """An empty buffer of `capacity` positions in `num_shards` rings (with `root_value`, also
    the searched root value of each position; with `ownership_points` P > 0 an ownership
    target of P points; with `score` a score target)."""
    return ReplayBuffer(
        obs=jnp.zeros((capacity, *obs_shape), obs_dtype),
        policy=jnp.zeros((capacity, num_actions), POLICY_DTYPE),
        player=jnp.full((capacity,), -1, jnp.int8),
        value=jnp.full((capacity,), jnp.nan, jnp.float32),
        next_index=jnp.zeros((), jnp.int32),
        num_shards=jnp.int32(num_shards),
        root_value=jnp.zeros((capacity,), jnp.float32) if root_value else None,
        ownership=jnp.zeros((capacity, ownership_points), jnp.int8) if ownership_points else None,
        score=jnp.full((capacity,), jnp.nan, jnp.float32) if score else None,
    )


@struct.dataclass
class Entry:
    """What self-play writes to the replay at one ply (`write`): the position each of the b
    local slots searched, and the labels of the games that ended with this ply's move. The
    fields are declared here only: `specs` and `write` read them by name."""

    obs: Array  # [b, H, W, C] the positions searched, in the game's compact dtype
    policy: Array  # [b, A] their search policies (`targets.policy_target` when sampled)
    player: Array  # [b] their movers
    ended: Array  # [b] bool the game in the slot ended with this ply's move
    # [b, 2] per player, what the positions of the games that ended are labelled with
    # (`targets.game_result`; read only where `ended`).
    result: Array
    # [b] int32 stored positions of those games (to label, this one included if stored).
    lengths: Array
    # [] bool whether this ply's positions are stored (playout caps store only the full
    # searches); when not, nothing is written and the games that ended are labelled back
    # from the last stored ply. The one field not per slot.
    store: Array = True
    # [b] their searched root values (stored when the buffer has room for them).
    root_value: Array | None = None
    # The auxiliary targets of the games that ended, from player 0's view, for the buffer's
    # fields: "ownership" [b, P] int8 and "score" [b] float32 of each slot's final position
    # (read only where `ended`).
    final: dict = struct.field(default_factory=dict)

    @classmethod
    def specs(cls) -> "Entry":
        """Its PartitionSpecs: every field split over `data` but `store`, replicated."""
        split = PartitionSpec("data")
        specs = cls(**{field.name: split for field in dataclasses.fields(cls)})
        return specs.replace(store=PartitionSpec())


def write(buffer: ReplayBuffer, entry: Entry, *, max_length: int) -> tuple[ReplayBuffer, Array]:
    """Writes one ply of every local slot, `entry`, and labels the games that ended with it
    with their outcome for each position's mover (`targets.outcome`; local view).

    Args:
      max_length: the game's longest game (static): how far back a game can reach.

    Returns:
      The buffer and [] int32 positions labelled.
    """
    capacity, slots = buffer.value.shape[0], entry.obs.shape[0]
    store = jnp.asarray(entry.store, bool)
    rows = (buffer.next_index + jnp.arange(slots)) % capacity
    targets = jnp.where(store, rows, capacity)  # out of range: not written
    buffer = buffer.replace(
        obs=buffer.obs.at[targets].set(entry.obs.astype(buffer.obs.dtype), mode="drop"),
        policy=buffer.policy.at[targets].set(entry.policy.astype(buffer.policy.dtype), mode="drop"),
        player=buffer.player.at[targets].set(entry.player.astype(jnp.int8), mode="drop"),
        value=buffer.value.at[targets].set(jnp.nan, mode="drop"),
    )
    if buffer.root_value is not None:
        buffer = buffer.replace(
            root_value=buffer.root_value.at[targets].set(entry.root_value, mode="drop")
        )
    if buffer.ownership is not None:
        buffer = buffer.replace(ownership=buffer.ownership.at[targets].set(0, mode="drop"))
    if buffer.score is not None:
        buffer = buffer.replace(score=buffer.score.at[targets].set(jnp.nan, mode="drop"))
    # The k-th last stored position of slot j's game (k = 0: the one just written, or the
    # last one stored before a ply that stores nothing).
    last = jnp.where(store, rows, (rows - slots) % capacity)
    back = jnp.arange(max(1, min(capacity // slots, max_length)))
    index = (last[:, None] - back[None, :] * slots) % capacity  # [b, K]
    label = entry.ended[:, None] & (back[None, :] < entry.lengths[:, None])
    movers = buffer.player[index].astype(jnp.int32)
    rows = jnp.where(label, index, capacity)
    value = buffer.value.at[rows].set(outcome(entry.result, movers), mode="drop")
    sign = jnp.where(movers == 1, -1, 1)  # [b, K] player 0's view -> the mover's
    if buffer.score is not None:
        score = entry.final["score"][:, None] * sign
        buffer = buffer.replace(score=buffer.score.at[rows].set(score, mode="drop"))
    if buffer.ownership is not None:
        ownership = _label_points(buffer.ownership, rows, sign, entry.final["ownership"])
        buffer = buffer.replace(ownership=ownership)
    next_index = jnp.where(store, (buffer.next_index + slots) % capacity, buffer.next_index)
    return buffer.replace(value=value, next_index=next_index), jnp.sum(label, dtype=jnp.int32)


def _label_points(ownership: Array, rows: Array, sign: Array, final: Array) -> Array:
    """`ownership` [N, P] with the positions `rows` [b, K] (N: not labelled) of each slot's
    game set to its final ownership `final` [b, P] times the mover's `sign` [b, K].

    One slot whose game ended at a time (a loop over those slots, usually none or a few): a
    scatter of every slot's [K, P] rows at once would move b K P values per ply, most of them
    dropped (Go 19x19, 256 games: 67 million)."""
    capacity = ownership.shape[0]
    ended = jnp.any(rows < capacity, axis=1)  # [b]
    order = jnp.argsort(~ended)  # the slots to label first

    def label_slot(i, ownership):
        slot = order[i]
        values = (sign[slot][:, None] * final[slot][None, :]).astype(ownership.dtype)
        return ownership.at[rows[slot]].set(values, mode="drop")

    return jax.lax.fori_loop(0, jnp.sum(ended), label_slot, ownership)


def sample(
    buffer: ReplayBuffer, key: PRNGKey, batch_size: int, decode=None, value_mix: float = 0.0
) -> Batch:
    """`batch_size` labelled positions drawn uniformly with replacement (local view), with
    their targets (`targets.value_target` with `value_mix`, `targets.policy_target`).

    `decode` turns stored observations back into the network's float32 input
    (`Game.decode_observation`; default a cast). A shard with no labelled position returns
    zeros (callers learn only once every shard holds positions, see `shard_sizes`).
    """
    labelled = ~jnp.isnan(buffer.value)
    cumulative = jnp.cumsum(labelled, dtype=jnp.int32)
    draws = jax.random.randint(key, (batch_size,), 0, jnp.maximum(cumulative[-1], 1))
    index = jnp.searchsorted(cumulative, draws, side="right")
    decode = decode or (lambda obs: obs.astype(jnp.float32))
    root_value = None if buffer.root_value is None else buffer.root_value[index]
    value = value_target(jnp.nan_to_num(buffer.value[index]), root_value, value_mix)
    ownership = None if buffer.ownership is None else buffer.ownership[index].astype(jnp.float32)
    score = None if buffer.score is None else jnp.nan_to_num(buffer.score[index])
    return Batch(
        obs=decode(buffer.obs[index]),
        policy=policy_target(buffer.policy[index]),
        value=value,
        ownership=ownership,
        score=score,
    )


def shard_sizes(buffer: ReplayBuffer, num_shards: int) -> Array:
    """[D] int32 labelled positions in each shard (works on the global, sharded buffer)."""
    labelled = ~jnp.isnan(buffer.value)
    return jnp.sum(labelled.reshape(num_shards, -1), axis=1, dtype=jnp.int32)


def specs(root_value: bool = False, ownership: bool = False, score: bool = False) -> ReplayBuffer:
    """The buffer's PartitionSpecs: positions split over `data`, the counters replicated;
    the optional fields present as asked."""
    split, whole = PartitionSpec("data"), PartitionSpec()
    return ReplayBuffer(
        obs=split,
        policy=split,
        player=split,
        value=split,
        next_index=whole,
        num_shards=whole,
        root_value=split if root_value else None,
        ownership=split if ownership else None,
        score=split if score else None,
    )


def specs_of(buffer: ReplayBuffer) -> ReplayBuffer:
    """`specs` of a buffer (or an abstract one): its optional fields as it has them."""
    return specs(
        root_value=buffer.root_value is not None,
        ownership=buffer.ownership is not None,
        score=buffer.score is not None,
    )


def sharded(mesh: Mesh | None, function, in_specs, out_specs):
    """`function` (local view) run on each device's shard; itself when there is no mesh."""
    if mesh is None:
        return function
    return jax.shard_map(
        function, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False
    )


def relayout_plan(
    player: np.ndarray,
    value: np.ndarray,
    next_index: int,
    old_shards: int,
    running: np.ndarray,
    new_shards: int,
) -> tuple[np.ndarray, int]:
    """Where each position goes when rings laid out for `old_shards` devices are re-laid for
    `new_shards` (a checkpoint restored on another number of devices).

    Args:
      player, value: [N] the buffer's movers and values (host copies; the big arrays are
        moved on the device by the returned gather index).
      next_index: the old rings' write position (local).
      old_shards, new_shards: D before and after.
      running: [B] int, positions of the running game in each (global) slot: its plies.

    Returns:
      (source [N] int64: the old index each new position comes from, -1 for empty; the new
      `next_index`). The running games' positions go where the new layout looks for them;
      labelled positions fill the other places, oldest first (overwritten first).
    """
    capacity, slots = len(value), len(running)
    old_cap, new_cap = capacity // old_shards, capacity // new_shards
    old_b, new_b = slots // old_shards, slots // new_shards
    source = np.full(capacity, -1, np.int64)
    taken = np.zeros(capacity, bool)
    plies = new_cap // new_b  # whole plies of slots in a new ring
    for slot, length in enumerate(running):
        old_shard, old_j = divmod(slot, old_b)
        new_shard, new_j = divmod(slot, new_b)
        for back in range(min(int(length), plies)):  # back 0 = the newest position
            old = old_shard * old_cap + (next_index - (back + 1) * old_b + old_j) % old_cap
            new = new_shard * new_cap + (plies - 1 - back) * new_b + new_j
            source[new], taken[old] = old, True
    # Labelled positions, oldest first: in each old ring the age order starts at next_index.
    ages = [
        shard * old_cap + (next_index + np.arange(old_cap)) % old_cap for shard in range(old_shards)
    ]
    order = np.stack(ages, axis=1).reshape(-1)  # interleaved across shards, oldest first
    order = order[~np.isnan(value[order]) & ~taken[order] & (player[order] >= 0)]
    free = np.flatnonzero(source < 0)
    # Free places in overwrite order: each new ring from its write position on.
    local = (np.arange(new_cap) + plies * new_b) % new_cap
    free_order = np.stack([shard * new_cap + local for shard in range(new_shards)], 1).reshape(-1)
    free_order = free_order[np.isin(free_order, free)]
    count = min(len(order), len(free_order))
    source[free_order[len(free_order) - count :]] = order[len(order) - count :]
    return source, (plies * new_b) % new_cap


def apply_relayout(buffer: ReplayBuffer, source: Array, next_index: Array, num_shards: int):
    """The buffer with position i taken from `source[i]` (-1: empty)."""
    present = source >= 0
    index = jnp.maximum(source, 0)

    def take(x, empty):
        moved = x[index]
        mask = present.reshape((-1,) + (1,) * (x.ndim - 1))
        return jnp.where(mask, moved, jnp.asarray(empty, x.dtype))

    return buffer.replace(
        obs=take(buffer.obs, 0),
        policy=take(buffer.policy, 0),
        player=take(buffer.player, -1),
        value=take(buffer.value, jnp.nan),
        root_value=None if buffer.root_value is None else take(buffer.root_value, 0.0),
        ownership=None if buffer.ownership is None else take(buffer.ownership, 0),
        score=None if buffer.score is None else take(buffer.score, jnp.nan),
        next_index=jnp.asarray(next_index, jnp.int32),
        num_shards=jnp.int32(num_shards),
    )
