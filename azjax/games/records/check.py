"""Every move of a record checked by the game's rules: legal in turn from the start, none
after the game has ended, and a recorded policy only on legal moves.

Records are checked `CHUNK` at a time by one compiled loop of the game's own `step` over
the batch (`vmap`), so thousands of records cost a few calls, not one call a move. The
loop runs to the chunk's longest record; every record is padded to the game's
`max_episode_length` + 1 plies (a move past that many is after the end, whatever came
before), so each game compiles one program (two with policies). A record found bad is
replayed alone, only to say why.
"""

import functools
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games.base import Game
from azjax.games.conformance_rules import compiled
from azjax.games.records import rules
from azjax.games.records.base import Record, RecordError, Unchecked

CHUNK = 16  # records checked together


@functools.lru_cache(maxsize=16)
def _checker(game: Game):
    """The compiled check of a chunk: (starts [B], actions [B, T] int32, lengths [B] int32,
    support [B, T, A] bool or None) -> the first bad move [B] and the first move whose
    policy has weight on an illegal move [B], each T where there is none."""

    def check(starts, actions, lengths, support):
        size, plies = actions.shape
        rows = jnp.arange(size)

        def more(carry):
            return carry[0] < jnp.max(lengths)

        def ply(carry):
            t, states, bad, offside = carry
            action = jax.lax.dynamic_index_in_dim(actions, t, axis=1, keepdims=False)  # [B]
            live = t < lengths
            legal = states.legal_action_mask[rows, action]  # all False once ended
            bad = jnp.where(live & (bad == plies) & ~legal, t, bad)
            if support is not None:
                weights = jax.lax.dynamic_index_in_dim(support, t, axis=1, keepdims=False)
                wrong = jnp.any(weights & ~states.legal_action_mask, axis=1)  # [B]
                offside = jnp.where(live & (offside == plies) & wrong, t, offside)
            return t + 1, jax.vmap(game.step)(states, action), bad, offside

        none = jnp.full(size, plies, jnp.int32)
        _, _, bad, offside = jax.lax.while_loop(more, ply, (jnp.int32(0), starts, none, none))
        return bad, offside

    return compiled(game)(check)


def checked(game: Game, items: list[Unchecked | RecordError]) -> Iterator[Record | RecordError]:
    """`items` in order, each unchecked record as its `Record` if all its moves are legal,
    else as the `RecordError` that says which move is not; errors pass through."""
    unchecked = [item for item in items if isinstance(item, Unchecked)]
    verdicts = {}
    for begin in range(0, len(unchecked), CHUNK):
        chunk = unchecked[begin : begin + CHUNK]
        for item, verdict in zip(chunk, _check_chunk(game, chunk), strict=True):
            verdicts[id(item)] = verdict
    for item in items:
        yield verdicts[id(item)] if isinstance(item, Unchecked) else item


def _check_chunk(game: Game, chunk: list[Unchecked]) -> list[Record | RecordError]:
    plies = game.max_episode_length + 1
    padded = chunk + [chunk[0]] * (CHUNK - len(chunk))
    actions = np.zeros((CHUNK, plies), np.int32)  # [B, T]
    lengths = np.zeros(CHUNK, np.int32)  # [B]; 0 for the padding
    for row, item in enumerate(chunk):
        moves = item.record.actions[:plies]
        actions[row, : len(moves)], lengths[row] = moves, len(moves)
    support = None
    if any(item.record.policies is not None for item in chunk):
        support = np.zeros((CHUNK, plies, game.num_actions), bool)  # [B, T, A]
        for row, item in enumerate(chunk):
            if item.record.policies is not None:
                weights = item.record.policies[:plies]
                support[row, : len(weights)] = weights > 0
    starts = jax.tree.map(lambda *leaves: np.stack(leaves), *(i.record.start for i in padded))
    with rules.on_host():
        bad, offside = jax.device_get(_checker(game)(starts, actions, lengths, support))
    verdicts = []
    for row, item in enumerate(chunk):
        if bad[row] < plies:
            verdicts.append(_illegal(game, item, int(bad[row])))
        elif offside[row] < plies:
            verdicts.append(_offside(game, item, int(offside[row])))
        else:
            verdicts.append(item.record)
    return verdicts


def _illegal(game: Game, item: Unchecked, ply: int) -> RecordError:
    """Why move `ply` (0-based) of a record is bad: played after the end, or not legal."""
    record = item.record
    state = rules.state_at(game, record.start, record.actions[:ply])
    where = f"{record.source}: move {ply + 1}: {item.texts[ply]}"
    if bool(state.terminated):
        ended = f"move {ply} ended it" if ply else "the start position is already over"
        return RecordError(f"{where} is played after the end of the game ({ended})")
    action = record.actions[ply]
    return RecordError(f"{where} is illegal ({rules.why_illegal(game, state, action)})")


def _offside(game: Game, item: Unchecked, ply: int) -> RecordError:
    """The error of a record whose policy before move `ply` weighs an illegal move."""
    record = item.record
    state = rules.state_at(game, record.start, record.actions[:ply])
    weighed = record.policies[ply] > 0
    illegal = np.flatnonzero(weighed & ~np.asarray(state.legal_action_mask))
    player = int(state.current_player)
    names = " ".join(rules.name_of(game, int(action), player) for action in illegal[:8])
    return RecordError(
        f"{record.source}: move {ply + 1}: {item.texts[ply]}: the policy weighs illegal "
        f"moves ({names})"
    )
