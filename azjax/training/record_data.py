"""Game records as training data: the positions of recorded games, split into the games
trained on and the games held out, and self-play's replay seeded with them.

    data = record_data.load(game, "games/*.sgf", holdout=0.05, log=print)
    data.train.obs      # [N, H, W, C] observations from the mover's view (replay's dtype)
    buffer = record_data.seed_replay(buffer, data.train, num_shards)

Each record (`azjax.games.records`: SGF, Xiangqi PGN, JSONL; every move checked by the
rules as it is read) is replayed once more, in batches, by one compiled scan of the game's
own `step` and `observe`, to give the observation before each move. The targets are the
AlphaZero ones: the policy target is the recorded search policy where the record has one,
else the move played (one-hot); the value target is the game's result for the player to
move. A game is held out or not by a hash of its source (file and line or game), so the
split does not change when records are added or the run resumes.
"""

import dataclasses
import functools
import logging
import zlib
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from azjax.core import replay, targets
from azjax.core.replay import ReplayBuffer
from azjax.games import Game, records
from azjax.types import UserError

_log = logging.getLogger(__name__)
CHUNK_GAMES = 64  # games replayed together in one call of the compiled scan
LENGTH_STEP = 64  # records are padded to a multiple of this many plies (few compilations)


@dataclasses.dataclass(frozen=True)
class Positions:
    """The labelled positions of some recorded games (host arrays)."""

    obs: np.ndarray  # [N, H, W, C] from the mover's view, in `Game.encode_observation`'s dtype
    action: np.ndarray  # [N] int32 the move played
    policy: np.ndarray | None  # [N, A] float32 recorded search policies; None: the moves played
    value: np.ndarray  # [N] float32 the game's result for the mover
    mover: np.ndarray  # [N] int8 the player to move
    # KataGo's targets where the game has them (Go), from the game's last position, as
    # self-play labels them: [N, P] int8 each point's owner (+1 the mover), [N] float32 the
    # final score margin for the mover.
    ownership: np.ndarray | None
    score: np.ndarray | None
    games: int  # recorded games these positions come from

    def __len__(self) -> int:
        return len(self.action)

    def targets(self, index: np.ndarray, num_actions: int) -> np.ndarray:
        """[len(index), A] float32 policy targets of the positions `index`."""
        if self.policy is not None:
            return self.policy[index]
        return targets.recorded_policy(self.action[index], num_actions)


@dataclasses.dataclass(frozen=True)
class RecordData:
    """The records of a run: the games trained on and the games held out."""

    train: Positions
    holdout: Positions
    skipped: int  # bad records left out (each reported in one line)


def is_held_out(source: str, share: float) -> bool:
    """Whether the record from `source` is held out: a stable hash of its name below `share`."""
    return zlib.crc32(source.encode()) % 10_000 < round(share * 10_000)


@functools.lru_cache(maxsize=8)
def _replayer(game: Game):
    """The compiled replay of [G] games of [G, L] moves, the first `lengths` [G] of each
    played, their results `results` [G] (player 0's): observations [G, L, ...] (encoded),
    movers [G, L] and outcomes [G, L] (`targets.outcome`) before each ply, and the ownership
    [G, P] and score [G] of each game's last position, from player 0's view."""

    def replay(start, actions, length, result):
        def ply(state, inputs):
            action, index = inputs
            before = (game.encode_observation(game.observe(state)), state.current_player)
            stepped = game.step(state, action)
            state = jax.tree.map(lambda n, o: jnp.where(index < length, n, o), stepped, state)
            return state, before

        plies = jnp.arange(actions.shape[0])
        last, (obs, mover) = jax.lax.scan(ply, start, (actions, plies))
        value = targets.outcome(jnp.stack([result, -result]), mover)
        return obs, mover, value, game.ownership(last), game.final_score(last)

    return jax.jit(jax.vmap(replay))


def positions(game: Game, chunk: list[records.Record]) -> Positions:
    """The labelled positions of `chunk`'s games, replayed together (see the module)."""
    if not chunk:
        return join([], game)
    longest = max(max(len(r.actions), 1) for r in chunk)
    length = -(-longest // LENGTH_STEP) * LENGTH_STEP
    padded = chunk + [chunk[0]] * max(0, CHUNK_GAMES - len(chunk))
    actions = np.zeros((len(padded), length), np.int32)  # [G, L]; 0 past a game's end (unread)
    for row, record in enumerate(padded):
        actions[row, : len(record.actions)] = record.actions
    lengths = np.asarray([len(r.actions) for r in padded], np.int32)
    results = np.asarray([r.result for r in padded], np.float32)
    starts = jax.tree.map(lambda *xs: jnp.stack(xs), *(r.start for r in padded))
    replayed = _replayer(game)(starts, jnp.asarray(actions), lengths, results)
    obs, mover, value, ownership, score = jax.device_get(replayed)
    has_policy = any(r.policies is not None for r in chunk)
    parts = []
    for row, record in enumerate(chunk):
        plies = len(record.actions)
        movers = mover[row, :plies].astype(np.int8)
        sign = np.where(movers == 0, 1, -1).astype(np.int8)  # player 0's view to the mover's
        policy = None
        if has_policy:  # a move without its policy (zeros): the move
            policy = targets.recorded_policy(record.actions, game.num_actions, record.policies)
        parts.append(
            Positions(
                obs=obs[row, :plies],
                action=np.asarray(record.actions, np.int32).reshape(plies),
                policy=policy,
                value=value[row, :plies],
                mover=movers,
                ownership=sign[:, None] * ownership[row].astype(np.int8)[None, :]
                if game.has_ownership
                else None,
                score=(sign * score[row]).astype(np.float32) if game.has_score else None,
                games=1,
            )
        )
    return join(parts, game)


def join(parts: list[Positions], game: Game) -> Positions:
    """The positions of `parts` in order (a policy per position where any part has them)."""
    parts = [p for p in parts if p.games]
    if not parts:
        start = game.init(jax.random.PRNGKey(0))
        stored = jax.eval_shape(lambda s: game.encode_observation(game.observe(s)), start)
        points = stored.shape[0] * stored.shape[1]
        return Positions(
            obs=np.zeros((0, *stored.shape), stored.dtype),
            action=np.zeros((0,), np.int32),
            policy=None,
            value=np.zeros((0,), np.float32),
            mover=np.zeros((0,), np.int8),
            ownership=np.zeros((0, points), np.int8) if game.has_ownership else None,
            score=np.zeros((0,), np.float32) if game.has_score else None,
            games=0,
        )

    def joined(name):
        if getattr(parts[0], name) is None:
            return None
        return np.concatenate([getattr(p, name) for p in parts])

    policy = None
    if any(p.policy is not None for p in parts):
        policy = np.concatenate([p.targets(np.arange(len(p)), game.num_actions) for p in parts])
    fields = ("obs", "action", "value", "mover", "ownership", "score")
    return Positions(
        policy=policy, games=sum(p.games for p in parts), **{f: joined(f) for f in fields}
    )


def load(
    game: Game,
    source,
    *,
    holdout: float,
    strict: bool = False,
    max_games: int = 0,
    log: Callable[[str], None] = _log.info,
) -> RecordData:
    """Reads the records at `source` (a file, folder or glob) and labels their positions.

    Args:
      holdout: the share of games held out (`is_held_out`).
      strict: refuse everything at the first bad record (else each is reported and skipped).
      max_games: read at most this many games (0: all).
      log: where each skipped record's line and the summary go.

    Raises:
      RecordError: a bad record with `strict`, or a source that names no records.
      UserError: no record could be used.
    """
    skipped = []

    def warn(message: str) -> None:
        skipped.append(message)
        log(f"skipped {message}")

    chunks = {False: [], True: []}
    parts = {False: [], True: []}
    for count, record in enumerate(records.read(source, game, strict=strict, warn=warn)):
        if max_games and count >= max_games:
            break
        side = is_held_out(record.source, holdout)
        chunks[side].append(record)
        if len(chunks[side]) == CHUNK_GAMES:
            parts[side].append(positions(game, chunks[side]))
            chunks[side] = []
    for side in (False, True):
        parts[side].append(positions(game, chunks[side]))
    data = RecordData(join(parts[False], game), join(parts[True], game), len(skipped))
    if not len(data.train):
        raise UserError(f"no usable game records in {source} ({len(skipped)} bad)")
    log(
        f"records: {data.train.games + data.holdout.games} games from {source} "
        f"({data.holdout.games} held out), {len(data.train)} positions to learn from"
        + (f"; {len(skipped)} bad records skipped" if skipped else "")
    )
    return data


def seed_replay(buffer: ReplayBuffer, data: Positions, num_shards: int) -> ReplayBuffer:
    """`buffer` (empty) with its last slots filled with `data`'s positions, the same number
    at the end of each of its `num_shards` rings (as many as fit, the last records').

    Self-play writes its rings from slot 0 on: it fills the empty slots first, then
    overwrites the records in their order. Their share of the samples falls as self-play's
    positions join them, and reaches none once self-play has written the capacity. A
    record's searched root value (for `learner.value_target_mix`) is its result, so the
    mixed target is the result; its ownership and score targets (a buffer with them) are
    those of its last position's."""
    capacity = buffer.value.shape[0]
    per_shard = min(len(data) // num_shards, capacity // num_shards)
    if per_shard == 0:
        return buffer
    count = per_shard * num_shards
    num_actions = buffer.policy.shape[1]
    index = np.arange(count)
    # The last per_shard slots of each ring: slot N / D - per_shard + i of shard d, global row
    # d * (N / D) + N / D - per_shard + i.
    ring = capacity // num_shards
    rows = (index // per_shard) * ring + ring - per_shard + index % per_shard
    chosen = np.arange(len(data))[-count:]
    host = jax.device_get(buffer)
    fields = {
        "obs": data.obs[chosen],
        "policy": data.targets(chosen, num_actions).astype(replay.POLICY_DTYPE),
        "player": data.mover[chosen],
        "value": data.value[chosen],
    }
    if host.root_value is not None:
        fields["root_value"] = data.value[chosen]
    if host.ownership is not None:
        fields["ownership"] = data.ownership[chosen]
    if host.score is not None:
        fields["score"] = data.score[chosen]
    updated = {}
    for name, values in fields.items():
        array = np.array(getattr(host, name))
        array[rows] = values
        updated[name] = array
    return host.replace(**updated)
