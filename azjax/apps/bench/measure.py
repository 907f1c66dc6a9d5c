"""The bench's measurements: each builds a pure function, jitted and timed by `timing`.

1. Environment steps per second: uniformly random legal play, `vmap(step)` inside a
   `lax.scan` of plies, finished games restarting in place; for pgx's environment of the
   same game too, in the same run. Games with a `legal_action_mask(state)` method also get
   the masks per second it computes from scratch.
2. Search simulations per second: the config's self-play search (freshly initialised
   network) and the pure-MCTS baseline, from the start position, at the self-play batch size.
3. Self-play positions per second: one `selfplay.run` call (batch_size * num_steps plies),
   called as `steps.play_step` calls it.
4. Learner samples per second: `learner.update` steps on a random batch, in a `lax.scan`
   and unrolled (as the train loop runs them, in chunks).
"""

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from azjax.apps.bench.timing import Row, Settings, jit, time_call
from azjax.config.build import Hyperparams, Pipeline
from azjax.core import learner, replay, selfplay
from azjax.core.learner import Optimizer, TrainState
from azjax.core.networks import Network, Variables
from azjax.games import Game
from azjax.games.base import random_legal_action
from azjax.matches.mcts_baseline import make_mcts_baseline
from azjax.types import Array, Batch, PRNGKey


class Environment(NamedTuple):
    """The pure functions random play needs, for azjax games and pgx environments alike."""

    init: Callable[[PRNGKey], Any]  # key -> state
    step: Callable[[Any, Array], Any]  # (state, action []) -> state
    done: Callable[[Any], Array]  # state -> [] bool, True once the game has ended
    observe: Callable[[Any], Array]  # state -> observation of the player to move


class Setup(NamedTuple):
    """What the search, self-play and learner measurements share."""

    pipeline: Pipeline  # game, network, self-play search, optimizer and batch sizes
    hyper: Hyperparams  # search noise and constants, learning rate, weight decay
    variables: Variables  # freshly initialised network variables
    algorithm: str  # the search algorithm, "puct" or "gumbel"
    num_simulations: int  # search simulations per move


def azjax_environment(game: Game) -> Environment:
    """Wraps an azjax game as an `Environment`."""
    return Environment(
        init=game.init, step=game.step, done=lambda state: state.terminated, observe=game.observe
    )


def make_random_play(env: Environment, *, batch_size: int, num_plies: int):
    """Builds `play(states [B], key) -> (states [B], num_steps [])`: uniformly random play.

    Each ply samples a uniform legal action per game, steps all B games with `vmap(env.step)`,
    computes the observations (summed into a checksum so the compiler cannot drop them:
    pgx's step computes them anyway), and restarts the games that ended. `num_steps` counts
    the steps taken in unfinished games.

    Args:
      env: the environment.
      batch_size: B, games played in lockstep.
      num_plies: T, plies per call.
    """

    def play(states, key: PRNGKey):
        reset_key, key = jax.random.split(key)
        fresh = jax.vmap(env.init)(jax.random.split(reset_key, batch_size))

        def ply(carry, action_key):
            states, num_steps = carry
            action = random_legal_action(action_key, states.legal_action_mask)  # [B]
            live = ~jax.vmap(env.done)(states)  # [B] bool
            states = jax.vmap(env.step)(states, action)
            ended = jax.vmap(env.done)(states)
            checksum = jnp.sum(jax.vmap(env.observe)(states).astype(jnp.float32))
            states = jax.tree.map(
                lambda new, old: jnp.where(ended.reshape((-1,) + (1,) * (old.ndim - 1)), new, old),
                fresh,
                states,
            )
            num_steps = num_steps + jnp.sum(live.astype(jnp.int32))
            return (states, num_steps), checksum

        (states, num_steps), checksums = jax.lax.scan(
            ply, (states, jnp.zeros((), jnp.int32)), jax.random.split(key, num_plies)
        )
        return states, num_steps + (jnp.sum(checksums) < -1.0).astype(jnp.int32)

    return play


def measure_random_play(
    env: Environment, *, batch_size: int, settings: Settings, key: PRNGKey
) -> float:
    """Environment steps per second of uniformly random play at `batch_size`."""
    init_key, play_key = jax.random.split(key)
    play = jit(make_random_play(env, batch_size=batch_size, num_plies=settings.num_plies), settings)
    states = jit(jax.vmap(env.init), settings)(jax.random.split(init_key, batch_size))
    seconds, (_, num_steps) = time_call(play, states, play_key, settings=settings)
    return int(num_steps) / seconds


def measure_legal_masks(game: Game, *, batch_size: int, settings: Settings, key: PRNGKey) -> float:
    """Legal-move masks computed per second, from scratch, by `game.legal_action_mask`.

    The masks are computed for positions of random play (`num_plies` plies of B games,
    collected first), each position once per timed call.
    """
    init_key, play_key = jax.random.split(key)

    def positions(key: PRNGKey):
        states = jax.vmap(game.init)(jax.random.split(init_key, batch_size))

        def ply(states, action_key):
            action = random_legal_action(action_key, states.legal_action_mask)  # [B]
            states = jax.vmap(game.step)(states, action)
            return states, states

        _, pool = jax.lax.scan(ply, states, jax.random.split(key, settings.num_plies))
        return pool  # [T, B]

    def masks(pool):
        counts = jax.lax.map(lambda states: jnp.sum(jax.vmap(game.legal_action_mask)(states)), pool)
        return jnp.sum(counts)

    pool = jit(positions, settings)(play_key)
    seconds, _ = time_call(jit(masks, settings), pool, settings=settings)
    return settings.num_plies * batch_size / seconds


def measure_env(
    game: Game,
    pgx_env: Environment | str,
    *,
    batch_sizes: list[int],
    settings: Settings,
    key: PRNGKey,
    log: Callable,
) -> list[Row]:
    """Rows of environment steps per second, azjax and pgx, one per batch size; for games
    with a `legal_action_mask(state)` method also the masks per second it computes.

    Args:
      pgx_env: pgx's environment of the same game, or why there is none (the rows' note).
    """
    ours = azjax_environment(game)
    rows = []
    for batch_size in batch_sizes:
        log(f"env steps at batch {batch_size}")
        rate = measure_random_play(ours, batch_size=batch_size, settings=settings, key=key)
        if isinstance(pgx_env, str):
            rows.append(Row("env steps (random play)", batch_size, rate, pgx_note=pgx_env))
        else:
            pgx_rate = measure_random_play(
                pgx_env, batch_size=batch_size, settings=settings, key=key
            )
            rows.append(Row("env steps (random play)", batch_size, rate, pgx_rate))
    if hasattr(game, "legal_action_mask"):
        for batch_size in batch_sizes:
            log(f"legal-move masks at batch {batch_size}")
            rate = measure_legal_masks(game, batch_size=batch_size, settings=settings, key=key)
            note = pgx_env if isinstance(pgx_env, str) else "not measured"
            rows.append(Row("legal-move masks", batch_size, rate, pgx_note=note))
    return rows


def measure_search(setup: Setup, *, settings: Settings, key: PRNGKey, log: Callable) -> list[Row]:
    """Search simulations per second: the self-play search (network) and pure MCTS (random
    rollouts)."""
    pipeline, num_simulations = setup.pipeline, setup.num_simulations
    batch_size = pipeline.selfplay_batch_size
    states_key, search_key = jax.random.split(key)
    states = jax.vmap(pipeline.game.init)(jax.random.split(states_key, batch_size))
    baseline = make_mcts_baseline(pipeline.game, num_simulations=num_simulations)
    searches = [
        (
            f"search simulations ({setup.algorithm}, {num_simulations} sims)",
            pipeline.search,
            (setup.variables, states, search_key, setup.hyper.search),
        ),
        (
            f"search simulations (pure MCTS, {num_simulations} sims)",
            baseline,
            (None, states, search_key),
        ),
    ]
    rows = []
    for name, search, args in searches:
        log(name)
        seconds, _ = time_call(jit(search, settings), *args, settings=settings)
        rows.append(Row(name, batch_size, batch_size * num_simulations / seconds))
    return rows


def empty_replay(game: Game, capacity: int) -> replay.ReplayBuffer:
    """An empty replay ring of `capacity` positions of `game`, where self-play writes."""
    stored = game.encode_observation(game.observe(game.init(jax.random.PRNGKey(0))))
    return replay.init(capacity, stored.shape, game.num_actions, stored.dtype)


def measure_selfplay(setup: Setup, *, settings: Settings, key: PRNGKey, log: Callable) -> Row:
    """Self-play positions per second: one `selfplay.run` call of batch_size * num_steps,
    with the search constants passed as arguments, as `steps.play_step` runs it."""
    pipeline = setup.pipeline
    batch_size, num_steps = pipeline.selfplay_batch_size, pipeline.num_steps

    def play(variables, state: selfplay.SelfPlayState, buffer, key: PRNGKey, hyper):
        return selfplay.run(
            pipeline.game,
            pipeline.search.with_params(hyper.search),
            variables,
            state,
            buffer,
            key,
            num_steps=num_steps,
            temperature_moves=hyper.temperature_moves,
            rules=selfplay.SelfPlayRules(sample_search_action=pipeline.rules.sample_search_action),
        )

    init_key, run_key = jax.random.split(key)
    init = functools.partial(selfplay.init, pipeline.game, batch_size=batch_size)
    state = jit(init, settings)(init_key)
    # The positions go to a replay ring as in training (the smallest one allowed).
    capacity = batch_size * max(pipeline.game.max_episode_length, num_steps)
    buffer = empty_replay(pipeline.game, capacity)
    name = f"self-play positions ({num_steps} plies, {setup.num_simulations} sims)"
    log(name)
    seconds, _ = time_call(
        jit(play, settings),
        setup.variables,
        state,
        buffer,
        run_key,
        setup.hyper,
        settings=settings,
    )
    return Row(name, batch_size, batch_size * num_steps / seconds)


def make_update_steps(
    network: Network,
    optimizer: Optimizer,
    *,
    num_updates: int,
    unroll: bool = False,
    ownership_weight: float = 0.0,
    score_weight: float = 0.0,
):
    """Builds `steps(train_state, batch, learning_rate [], weight_decay []) -> (train_state,
    loss [])`: `num_updates` learner updates on one batch (with the auxiliary losses of the
    weights above 0).

    The updates run in a `lax.scan` or unrolled (as the train loop does, in chunks): XLA:CPU
    runs convolution gradients inside a loop body many times slower (jax-ml/jax#12868), and
    the table shows both.
    """

    def steps(train_state: TrainState, batch: Batch, learning_rate: Array, weight_decay: Array):
        def update(state: TrainState, _):
            state, metrics = learner.update(
                network,
                optimizer,
                state,
                batch,
                learning_rate=learning_rate,
                weight_decay=weight_decay,
                ownership_weight=ownership_weight,
                score_weight=score_weight,
            )
            return state, metrics["loss"]

        train_state, losses = jax.lax.scan(
            update, train_state, None, length=num_updates, unroll=unroll
        )
        return train_state, losses[-1]

    return steps


def random_batch(
    game: Game, key: PRNGKey, batch_size: int, *, ownership: bool = False, score: bool = False
) -> Batch:
    """A learner batch of random observations [B, H, W, C], policies [B, A] and values [B]
    (and ownership [B, H*W] and scores [B] when asked)."""
    obs_key, policy_key, value_key = jax.random.split(key, 3)
    aux_key = jax.random.fold_in(key, 1)
    obs_spec = jax.eval_shape(game.observe, game.init(key))
    obs = jax.random.bernoulli(obs_key, 0.3, (batch_size, *obs_spec.shape)).astype(obs_spec.dtype)
    logits = jax.random.normal(policy_key, (batch_size, game.num_actions))
    value = jax.random.uniform(value_key, (batch_size,), minval=-1.0, maxval=1.0)
    points = obs_spec.shape[0] * obs_spec.shape[1]
    owners = jax.random.randint(aux_key, (batch_size, points), -1, 2).astype(jnp.float32)
    return Batch(
        obs=obs,
        policy=jax.nn.softmax(logits),
        value=value,
        ownership=owners if ownership else None,
        score=jnp.sum(owners, axis=-1) if score else None,
    )


def measure_learner(setup: Setup, *, settings: Settings, key: PRNGKey, log: Callable) -> list[Row]:
    """Learner samples per second: `num_updates` updates on a random batch, scanned, unrolled."""
    pipeline, hyper = setup.pipeline, setup.hyper
    batch_size, optimizer = pipeline.learner_batch_size, pipeline.optimizer
    train_state = learner.init(optimizer, setup.variables)
    aux = dict(ownership_weight=pipeline.ownership_weight, score_weight=pipeline.score_weight)
    batch = random_batch(
        pipeline.game,
        key,
        batch_size,
        ownership=pipeline.ownership_weight > 0,
        score=pipeline.score_weight > 0,
    )
    rows = []
    for unroll, how in ((False, "lax.scan of"), (True, "unrolled")):
        name = f"learner samples ({optimizer.name}, {how} {settings.num_updates} updates)"
        log(name)
        steps = make_update_steps(
            pipeline.network, optimizer, num_updates=settings.num_updates, unroll=unroll, **aux
        )
        seconds, _ = time_call(
            jit(steps, settings),
            train_state,
            batch,
            hyper.learning_rate,
            hyper.weight_decay,
            settings=settings,
        )
        rows.append(Row(name, batch_size, batch_size * settings.num_updates / seconds))
    return rows
