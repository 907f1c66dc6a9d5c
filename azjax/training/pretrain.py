"""Supervised pretraining on game records, then self-play from the pretrained network, in one
run directory (config `records.*`, docs/records.md).

A new run whose config names records (`records.path`) first learns from them: minibatches of
`learner.batch_size` positions drawn uniformly from the games trained on, each in a random
board symmetry (`replay.augment`), the loss and optimizer of self-play's learner
(`learner.update`: the recorded move or search policy as the policy target, the result as
the value target). Every `records.eval_every` updates it measures the held-out games (move
prediction: how often the network's most likely move is the recorded one; the value loss)
and writes a line to `WORKDIR/pretrain/metrics.jsonl` and its state to
`WORKDIR/pretrain/state.msgpack`, both whole or not at all. Interrupted, it saves where it
stands; rerun, it goes on from there and computes what an uninterrupted run would have
(the minibatch of update u depends only on the seed and u).

Self-play then starts from the pretrained network (a fresh optimizer: its schedule starts
over), its replay seeded with the records' positions (`records.replay`,
`record_data.seed_replay`), its clock and its compute counting the pretraining's: the first
iteration's `total_learn_flops` adds the pretraining's updates (`compute`).
"""

import json
import time

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import optax

from azjax import interrupt
from azjax.core import learner
from azjax.core.steps import Hyperparams, Pipeline, TrainerState
from azjax.paths import read_regular, write_atomically
from azjax.training import compute
from azjax.training.record_data import Positions, RecordData, load, seed_replay
from azjax.types import Batch

EVAL_BATCH = 512  # held-out positions per compiled evaluation call


def _minibatch_index(seed: int, update: int, size: int, count: int) -> np.ndarray:
    """The positions of update `update`'s minibatch: a function of the seed and `update` only."""
    return np.random.default_rng([seed, update]).integers(0, count, size)


def minibatch(data: Positions, index: np.ndarray, pipeline: Pipeline) -> Batch:
    """The positions `index` of `data` as a minibatch (observations as stored), with the
    auxiliary targets the pipeline learns (`learner.ownership_weight`, `score_weight`)."""
    ownership = data.ownership[index].astype(np.float32) if pipeline.ownership_weight else None
    return Batch(
        obs=data.obs[index],
        policy=data.targets(index, pipeline.game.num_actions),
        value=data.value[index],
        ownership=ownership,
        score=data.score[index] if pipeline.score_weight else None,
    )


def _compiled(pipeline: Pipeline):
    """The jitted update (a minibatch in random symmetries) and held-out measure."""
    game = pipeline.game

    def update(train_state, batch: Batch, key, hyper: Hyperparams):
        batch = batch.replace(obs=game.decode_observation(batch.obs))
        if pipeline.augment and game.symmetries > 1:
            index = jax.random.randint(key, (batch.value.shape[0],), 0, game.symmetries)
            obs, policy = jax.vmap(game.apply_symmetry)(batch.obs, batch.policy, index)
            batch = batch.replace(obs=obs, policy=policy)
            if batch.ownership is not None:  # per point, as the observation's points
                ownership = jax.vmap(game.permute_points)(batch.ownership, index)
                batch = batch.replace(ownership=ownership)
        return learner.update(
            pipeline.network,
            pipeline.optimizer,
            train_state,
            batch,
            learning_rate=hyper.learning_rate,
            weight_decay=hyper.weight_decay,
            value_loss_weight=hyper.value_loss_weight,
            ownership_weight=pipeline.ownership_weight,
            score_weight=pipeline.score_weight,
        )

    def measure(variables, obs, policy, value, mask):
        logits, predicted, _ = pipeline.network.apply(
            variables, game.decode_observation(obs), False
        )
        logits = logits.astype(jnp.float32)
        hit = jnp.argmax(logits, -1) == jnp.argmax(policy, -1)
        cross_entropy = optax.safe_softmax_cross_entropy(logits, policy)
        error = jnp.square(value - predicted.astype(jnp.float32))
        return {
            "move_accuracy": jnp.sum(hit * mask),
            "policy_loss": jnp.sum(cross_entropy * mask),
            "value_loss": jnp.sum(error * mask),
        }

    return jax.jit(update), jax.jit(measure)


def held_out(measure, variables, data: Positions, num_actions: int) -> dict:
    """The held-out games' move accuracy, policy loss and value loss (means per position)."""
    sums, count = {}, len(data)
    for start in range(0, count, EVAL_BATCH):
        index = np.arange(start, start + EVAL_BATCH) % count  # the last batch wraps, masked
        mask = (np.arange(start, start + EVAL_BATCH) < count).astype(np.float32)
        part = measure(
            variables, data.obs[index], data.targets(index, num_actions), data.value[index], mask
        )
        for name, value in part.items():
            sums[name] = sums.get(name, 0.0) + float(value)
    return {f"holdout_{name}": value / count for name, value in sums.items()}


class Pretraining:
    """The pretraining of one run (see the module): called with the run's fresh state, it
    returns the state self-play starts from.

    Args:
      settings: the run's `RecordSettings`.
      pipeline: the run's pipeline; hyper: its `Hyperparams`.
      workdir: the run directory; seed: the run's seed.
      shardings: the state's shardings (`compiled.CompiledRun.shardings`).
      log: where the messages go.
      data: the records, read already (`load_records`); None: read when called.
    """

    def __init__(self, settings, pipeline, hyper, workdir, seed: int, shardings, log, data=None):
        self.settings, self.pipeline, self.hyper = settings, pipeline, hyper
        self.data = data  # the records read (`load_records`), or None: read when called
        self.directory = workdir / "pretrain"
        self.seed, self.shardings, self.log = seed, shardings, log
        self.first_totals: dict = {}  # the first self-play iteration's `previous` totals
        self.seconds = 0.0  # the pretraining's wall-clock seconds in the sessions before

    def _restore(self, train_state):
        """(train_state, records, partial chunk's sums) saved, else the fresh ones."""
        path = self.directory / "state.msgpack"
        if not path.exists():
            return train_state, [], {}
        what = f"the pretraining state {path}"
        saved = flax.serialization.msgpack_restore(read_regular(path, what=what))
        train_state = flax.serialization.from_state_dict(train_state, saved["train_state"])
        # Written whole with the state (`_save`): every line is a record.
        text = read_regular(self.directory / "metrics.jsonl").decode()
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
        self.seconds = float(saved["seconds"])
        return train_state, records, dict(saved["sums"])

    def _save(self, train_state, records: list[dict], sums: dict, seconds: float) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps(r) + "\n" for r in records)
        write_atomically(self.directory / "metrics.jsonl", lines.encode())
        state = {"train_state": flax.serialization.to_state_dict(jax.device_get(train_state))}
        state["sums"] = {k: float(v) for k, v in sums.items()}
        state["seconds"] = float(seconds)
        write_atomically(
            self.directory / "state.msgpack", flax.serialization.msgpack_serialize(state)
        )

    def train(self, train_state, data: RecordData, started: float) -> tuple:
        """Pretrains `train_state` on `data` to `records.updates` updates; returns it and
        the records written. `started`: when this session's pretraining began
        (`time.perf_counter`), reading the records included."""
        settings, pipeline = self.settings, self.pipeline
        game, batch = pipeline.game, pipeline.learner_batch_size
        update, measure = _compiled(pipeline)
        train_state, records, sums = self._restore(train_state)
        step = int(train_state.step)
        update_flops = compute.measure(pipeline).update_flops
        if step < settings.updates:
            self.log(f"pretraining on the records from update {step} of {settings.updates}")
        train = data.train

        def seconds() -> float:
            return self.seconds + time.perf_counter() - started

        while step < settings.updates:
            if interrupt.requested():
                self._save(train_state, records, sums, seconds())
                raise KeyboardInterrupt
            index = _minibatch_index(self.seed, step, batch, len(train))
            key = jax.random.fold_in(jax.random.PRNGKey(self.seed), step)
            positions = minibatch(train, index, pipeline)
            train_state, metrics = update(train_state, positions, key, self.hyper)
            step += 1
            for name in ("loss", "policy_loss", "value_loss"):
                sums[name] = sums.get(name, 0.0) + float(metrics[name])
            sums["count"] = sums.get("count", 0.0) + 1
            if step % settings.eval_every and step < settings.updates:
                continue
            count = sums.pop("count")
            record = {"updates": step, **{k: v / count for k, v in sums.items()}}
            record["samples"] = step * batch
            record["total_learn_flops"] = step * update_flops
            record["seconds"] = seconds()
            if len(data.holdout):
                record.update(
                    held_out(measure, train_state.variables, data.holdout, game.num_actions)
                )
            records.append(record)
            sums = {}
            self._save(train_state, records, sums, seconds())
            self.log(progress_line(record, settings.updates))
        self.seconds = seconds()
        return train_state, records

    def __call__(self, fresh: TrainerState) -> TrainerState:
        """The state self-play starts from: `fresh` with the pretrained network, the replay
        seeded, and the pretraining's seconds on its clock."""
        started = time.perf_counter()
        settings, pipeline = self.settings, self.pipeline
        data = self.data or load_records(settings, pipeline.eval_game, self.log)
        self.data = None  # the positions are in the replay and the network now
        host = jax.device_get(fresh)
        train_state, records = self.train(host.train_state, data, started)
        variables = jax.device_get(train_state.variables)
        state = host.replace(
            train_state=learner.init(pipeline.optimizer, variables),
            elapsed=np.float32(self.seconds),
        )
        if settings.replay:
            state = state.replace(buffer=seed_replay(state.buffer, data.train, pipeline.num_shards))
        if records:
            self.first_totals = {"total_learn_flops": records[-1]["total_learn_flops"]}
        return jax.device_put(state, self.shardings)


def progress_line(record: dict, updates: int) -> str:
    """One line of a pretraining record, as it is printed."""
    line = f"pretraining {record['updates']}/{updates}: loss {record['loss']:.3f}"
    if "holdout_move_accuracy" in record:
        line += (
            f", held-out move accuracy {100 * record['holdout_move_accuracy']:.1f}%, "
            f"value loss {record['holdout_value_loss']:.3f}"
        )
    return line


def load_records(settings, game, log) -> RecordData:
    """The records a run's `RecordSettings` name, read with `game`'s rules (the run's
    own: `game_kwargs`)."""
    return load(
        game,
        settings.path,
        holdout=settings.holdout,
        strict=settings.strict,
        max_games=settings.max_games,
        log=log,
    )
