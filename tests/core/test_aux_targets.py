"""KataGo's auxiliary targets and global pooling (Wu 2019): Go's ownership and final score
against a flood fill written here, their labels in the replay (per mover, only once the
game ends), self-play's final positions, the network's heads and pooling blocks, their
losses, a tiny Go run with all three options that resumes from its checkpoint, and the
options' config keys, refusals and ablation variants.

The reference flood fill (`reference_ownership`) is plain Python over lists: each empty
region found by a breadth-first search, owned by a colour when every stone next to it is of
that colour (Tromp-Taylor), independent of the bit-word flood fill of `games/go_area.py`.
"""

import collections
import copy
import functools
import json
import textwrap

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from conftest import scripted_search, tiny_config

from azjax import games
from azjax.apps import ablation, api
from azjax.apps.ablation_args import VARIANTS
from azjax.apps.bench import memory
from azjax.config import (
    ADDED_KEYS,
    apply_overrides,
    base_config,
    build,
    from_dict,
    load_config,
    to_json,
    validate,
)
from azjax.core import learner, replay, selfplay, steps
from azjax.core.networks import global_pooling_blocks, make_network
from azjax.matches import agent as agent_lib
from azjax.training import compiled
from azjax.types import Batch, UserError

# The options of self-play, search and the learner are checked in the slow set (CI runs
# it): the quick tier (`pytest tests/games tests/core`) keeps the rules and the pipeline.
pytestmark = pytest.mark.slow

GO = games.make("go_9x9")
SMALL = games.make("go_9x9", komi=5.0)


def diagram_board(text: str) -> np.ndarray:
    """[N] int8 from a square ASCII diagram (X black +1, O white -1, . empty), top row first."""
    rows = [line.split() for line in textwrap.dedent(text).strip().splitlines()]
    return np.array([{".": 0, "X": 1, "O": -1}[p] for row in rows for p in row], np.int8)


def reference_ownership(board: np.ndarray) -> np.ndarray:
    """Tromp-Taylor ownership [N] in {-1, 0, 1} of a square board [N], in plain Python."""
    size = int(round(len(board) ** 0.5))
    owner = [int(v) for v in board]
    seen = set()
    for start in range(len(board)):
        if board[start] != 0 or start in seen:
            continue
        region, colours, queue = [], set(), collections.deque([start])
        seen.add(start)
        while queue:
            point = queue.popleft()
            region.append(point)
            row, column = divmod(point, size)
            for r, c in (
                (row - 1, column),
                (row + 1, column),
                (row, column - 1),
                (row, column + 1),
            ):
                if 0 <= r < size and 0 <= c < size:
                    neighbour = r * size + c
                    if board[neighbour] != 0:
                        colours.add(int(board[neighbour]))
                    elif neighbour not in seen:
                        seen.add(neighbour)
                        queue.append(neighbour)
        value = colours.pop() if len(colours) == 1 else 0
        for point in region:
            owner[point] = value
    return np.array(owner, np.float32)


DAME = """
    . X . O .
    . X . O .
    . X . O .
    . X . O .
    . X . O .
    """
# Black's nine stones have an eye at A5 and White's thirteen one at D5; C3 is their shared
# liberty (a seki): it reaches both colours, so it is neither's.
SEKI = """
    . X O . O
    X X O O O
    X X . O O
    X X O O O
    X X O O O
    """
# A white stone inside black's area makes the region around it reach both colours.
DEAD_STONE = """
    . . X O .
    . O X O .
    . . X O .
    . . X O .
    . . X O .
    """


@pytest.mark.parametrize(
    "diagram, expected_score",
    [
        (DAME, 10 - 10 - 5),  # columns A, B black; D, E white; C dame
        (SEKI, 10 - 14 - 5),  # 9 stones + A5; 13 stones + D5; C3 shared
        (DEAD_STONE, 5 - 11 - 5),  # black's 5 stones; white's 6 stones + column E
        (". . . . .\n" * 5, -5),  # a region reaching no stone: nobody's
    ],
)
def test_go_ownership_and_final_score_on_hand_built_positions(diagram, expected_score):
    game = games.make("go_9x9", size=5, komi=5.0)
    board = diagram_board(diagram)
    state = game.setup(board)
    ownership = np.asarray(jax.jit(game.ownership)(state))
    np.testing.assert_array_equal(ownership, reference_ownership(board))
    assert ownership.dtype == np.float32 and ownership.shape == (25,)
    assert float(game.final_score(state)) == float(game.score(state)) == expected_score
    assert float(ownership.sum() - 5.0) == expected_score
    if diagram is DAME:  # the middle column is dame: 0, though next to stones of both
        np.testing.assert_array_equal(ownership.reshape(5, 5)[:, 2], 0)
        np.testing.assert_array_equal(ownership.reshape(5, 5)[:, :2], 1)
    if diagram is SEKI:
        assert ownership[12] == 0 and ownership[0] == 1 and ownership[3] == -1  # C3, A5, D5


def random_positions(game, key, num_games: int, num_plies: int):
    """Boards [T, B] of `num_games` uniformly random games, one jitted scan."""

    def ply(states, key):
        actions = jax.vmap(games.base.random_legal_action)(
            jax.random.split(key, num_games), states.legal_action_mask
        )
        states = jax.vmap(game.step)(states, actions)
        return states, (states, jax.vmap(game.ownership)(states))

    start = jax.vmap(game.init)(jax.random.split(key, num_games))
    _, trajectory = jax.jit(lambda s, k: jax.lax.scan(ply, s, jax.random.split(k, num_plies)))(
        start, key
    )
    return trajectory


def test_go_ownership_matches_a_flood_fill_in_random_play():
    states, ownership = random_positions(GO, jax.random.PRNGKey(3), 8, 120)
    boards, ownership = np.asarray(states.board), np.asarray(ownership)
    for t in range(0, 120, 7):
        for b in range(8):
            np.testing.assert_array_equal(ownership[t, b], reference_ownership(boards[t, b]))
    scores = jax.vmap(jax.vmap(GO.final_score))(states)
    np.testing.assert_allclose(scores, ownership.sum(-1) - GO.komi)
    assert 0 < np.mean(ownership == 0) < 1  # the positions hold areas and neutral points


def test_only_go_has_ownership_and_a_final_score():
    for name in games.names():
        game = games.make(name)
        is_go = games.family_of(game) == "go"
        assert game.has_ownership == game.has_score == is_go, name
        state = jax.eval_shape(game.init, jax.random.PRNGKey(0))
        height, width = game.observation_shape[:2]
        assert jax.eval_shape(game.ownership, state).shape == (height * width,)
        assert jax.eval_shape(game.final_score, state).shape == ()


@pytest.mark.parametrize("index", range(8))
def test_permute_points_moves_ownership_with_the_observation(index):
    (states, _) = random_positions(GO, jax.random.PRNGKey(5), 1, 30)
    state = jax.tree.map(lambda x: x[-1, 0], states)
    assert int(state.current_player) == 0  # black to move: plane 0 holds black's stones
    obs, _ = GO.apply_symmetry(GO.observe(state), jnp.zeros(GO.num_actions), index)
    board = (obs[..., 0] - obs[..., 1]).reshape(-1)  # the stones in the new orientation
    moved = GO.permute_points(state.board.astype(jnp.float32), index)
    np.testing.assert_array_equal(moved, board)
    np.testing.assert_array_equal(
        GO.permute_points(GO.ownership(state), index), reference_ownership(np.asarray(board))
    )


def test_replay_labels_ownership_and_score_for_each_mover_only_when_the_game_ends():
    points = 4
    buffer = replay.init(12, (1, 1, 1), 2, ownership_points=points, score=True)
    write = jax.jit(functools.partial(replay.write, max_length=6))
    final = {
        "ownership": jnp.array([[1, -1, 0, 1], [-1, -1, -1, -1]], jnp.int8),
        "score": jnp.array([3.5, -7.0]),
    }
    obs, policy = jnp.zeros((2, 1, 1, 1), jnp.uint8), jnp.full((2, 2), 0.5)
    rewards = jnp.array([[1.0, -1.0], [0.0, 0.0]])
    for ply in range(3):  # player 0 moves at plies 0 and 2; slot 0's game ends at ply 2
        ended = jnp.array([ply == 2, False])
        entry = replay.Entry(
            obs=obs,
            policy=policy,
            player=jnp.full(2, ply % 2),
            ended=ended,
            result=rewards,
            lengths=jnp.full(2, ply + 1),
            final=final,
        )
        buffer, labelled = write(buffer, entry)
        if ply < 2:  # nothing ended: nothing labelled
            assert int(labelled) == 0
            np.testing.assert_array_equal(buffer.ownership, 0)
            assert np.isnan(np.asarray(buffer.score)).all()
    assert int(labelled) == 3
    ownership, score = np.asarray(buffer.ownership), np.asarray(buffer.score)
    slot0, slot1 = [0, 2, 4], [1, 3, 5]  # rows of each slot's positions, ply by ply
    sign = np.array([1, -1, 1])  # the movers 0, 1, 0: player 1 sees the board negated
    np.testing.assert_array_equal(ownership[slot0], sign[:, None] * np.array([[1, -1, 0, 1]]))
    np.testing.assert_array_equal(score[slot0], 3.5 * sign)
    np.testing.assert_array_equal(ownership[slot1], 0)  # still running: unlabelled
    assert np.isnan(score[slot1]).all() and np.isnan(score[6:]).all()
    batch = replay.sample(buffer, jax.random.PRNGKey(0), 64)
    assert batch.ownership.dtype == jnp.float32 and batch.ownership.shape == (64, points)
    # Only labelled positions are drawn: each sample's targets are its mover's.
    np.testing.assert_array_equal(batch.ownership * batch.value[:, None], [[1, -1, 0, 1]] * 64)
    np.testing.assert_array_equal(batch.score, 3.5 * batch.value)
    # The layout moves the fields with their positions (a restore on other devices).
    moved = replay.apply_relayout(buffer, jnp.array([4, -1] + [-1] * 10), 0, 1)
    np.testing.assert_array_equal(moved.ownership[0], ownership[4])
    assert float(moved.score[0]) == 3.5 and np.isnan(moved.score[1])
    assert not np.asarray(moved.ownership[1:]).any()


def test_replay_without_the_targets_keeps_its_layout():
    buffer = replay.init(8, (1, 1, 1), 2)
    assert buffer.ownership is None and buffer.score is None
    specs = replay.specs_of(buffer)
    assert jax.tree.structure(specs) == jax.tree.structure(replay.specs())
    batch = replay.sample(buffer, jax.random.PRNGKey(0), 4)
    assert batch.ownership is None and batch.score is None
    assert jax.tree.structure(batch) == jax.tree.structure(Batch(obs=0, policy=0, value=0))


def test_selfplay_labels_each_game_with_its_final_ownership_and_score():
    game = games.make("go_9x9", max_moves=10)
    batch, plies = 4, 10  # every game ends with the call's last ply, by the move limit
    stored = game.encode_observation(game.observe(game.init(jax.random.PRNGKey(0))))
    buffer = replay.init(
        64, stored.shape, game.num_actions, stored.dtype, ownership_points=81, score=True
    )
    state = selfplay.init(game, jax.random.PRNGKey(0), batch_size=batch)
    run = functools.partial(
        selfplay.run,
        game,
        scripted_search(game),
        num_steps=plies,
        temperature_moves=0,
        rules=selfplay.SelfPlayRules(label_ownership=True, label_score=True),
    )
    state, buffer, output = jax.jit(run)(None, state, buffer, jax.random.PRNGKey(1))
    assert int(output.num_games) == batch and bool(state.games.terminated.all())
    final = np.asarray(jax.vmap(game.ownership)(state.games))  # black's view
    margin = np.asarray(jax.vmap(game.score)(state.games))
    assert np.abs(final).sum() > 0
    ownership, score = np.asarray(buffer.ownership), np.asarray(buffer.score)
    for ply in range(plies):
        sign = 1 if ply % 2 == 0 else -1  # black moves at even plies
        for slot in range(batch):
            row = ply * batch + slot
            np.testing.assert_array_equal(ownership[row], sign * final[slot])
            assert score[row] == sign * margin[slot]
    assert np.isnan(score[plies * batch :]).all()


SHAPE, ACTIONS = GO.observation_shape, GO.num_actions
SIZE = dict(channels=8, num_blocks=3, value_hidden=8)


def obs_batch(batch: int = 4):
    return (jax.random.uniform(jax.random.PRNGKey(1), (batch, *SHAPE)) < 0.3).astype(jnp.float32)


def test_network_heads_add_outputs_and_change_nothing_else():
    off = make_network(SHAPE, ACTIONS, **SIZE)
    on = make_network(SHAPE, ACTIONS, **SIZE, ownership_head=True, score_head=True)
    key, obs = jax.random.PRNGKey(0), obs_batch()
    variables_off, variables_on = off.init(key), on.init(key)
    assert set(variables_on.params) - set(variables_off.params) == {"ownership_out", "score_out"}
    # The heads are built last: the shared parameters are the same.
    shared = {k: variables_on.params[k] for k in variables_off.params}
    jax.tree.map(np.testing.assert_array_equal, shared, variables_off.params)
    for train_mode in (False, True):
        logits, value, stats = off.apply(variables_off, obs, train_mode)
        logits_on, value_on, heads, stats_on = on.apply_heads(variables_on, obs, train_mode)
        np.testing.assert_array_equal(logits_on, logits)
        np.testing.assert_array_equal(value_on, value)
        jax.tree.map(np.testing.assert_array_equal, stats_on, stats)
        assert heads["ownership"].shape == heads["ownership_logits"].shape == (4, 81)
        assert heads["score"].shape == (4,) and heads["score"].dtype == jnp.float32
        np.testing.assert_allclose(heads["ownership"], jnp.tanh(heads["ownership_logits"]))
        assert bool(jnp.all(jnp.abs(heads["ownership"]) <= 1))
        # Callers of inference see (logits, value, statistics) with the heads on too.
        plain = on.apply(variables_on, obs, train_mode)
        assert len(plain) == 3
        np.testing.assert_array_equal(plain[0], logits)
    assert off.apply_heads(variables_off, obs, False)[2] == {}


def test_global_pooling_blocks():
    assert global_pooling_blocks(0) == ()
    assert global_pooling_blocks(1) == (0,)
    assert global_pooling_blocks(2) == (1,)
    assert global_pooling_blocks(3) == (2,)
    assert global_pooling_blocks(6) == (2, 5)
    assert global_pooling_blocks(10) == (2, 5, 8)
    network = make_network(SHAPE, ACTIONS, **SIZE, global_pooling=True)
    params = network.init(jax.random.PRNGKey(0)).params
    assert {"pool_conv", "pool_dense"} <= set(params["block2"])
    assert "pool_conv" not in params["block0"] and "pool_conv" not in params["block1"]
    assert params["block2"]["pool_dense"]["kernel"].shape == (2 * 2, 8)  # mean, max of 8 // 4
    # The bias comes from the whole board. Seven 3x3 convolutions (the stem and 3 blocks)
    # see 7 points away: the ownership of the corner (8, 8) does not depend on a stone at
    # (0, 0) without pooling, and does with it.
    empty = jnp.zeros((1, *SHAPE))
    stone = empty.at[0, 0, 0, 0].set(1.0)
    for pooling in (False, True):
        network = make_network(SHAPE, ACTIONS, **SIZE, global_pooling=pooling, ownership_head=True)
        variables = network.init(jax.random.PRNGKey(0))
        corner = [
            network.apply_heads(variables, obs, False)[2]["ownership"][0, 80]
            for obs in (empty, stone)
        ]
        assert (float(corner[0]) != float(corner[1])) == pooling


def aux_batch(batch: int = 8) -> Batch:
    key = jax.random.PRNGKey(2)
    ownership = jax.random.randint(key, (batch, 81), -1, 2).astype(jnp.float32)
    return Batch(
        obs=obs_batch(batch),
        policy=jnp.full((batch, ACTIONS), 1.0 / ACTIONS),
        value=jnp.sign(jnp.sum(ownership, -1)),
        ownership=ownership,
        score=jnp.sum(ownership, -1) - 7.5,
    )


def test_learner_loss_adds_the_weighted_auxiliary_terms_and_trains_the_heads():
    network = make_network(SHAPE, ACTIONS, **SIZE, ownership_head=True, score_head=True)
    variables, batch = network.init(jax.random.PRNGKey(0)), aux_batch()

    @functools.partial(jax.jit, static_argnums=(1, 2))
    def loss(params, ownership_weight, score_weight):
        total, (_, metrics) = learner.loss_terms(
            network,
            variables._replace(params=params),
            batch,
            0.0,
            1.0,
            ownership_weight,
            score_weight,
        )
        return total, metrics

    base, base_metrics = loss(variables.params, 0.0, 0.0)
    assert "ownership_loss" not in base_metrics and "score_loss" not in base_metrics
    total, metrics = loss(variables.params, 1.5, 0.5)
    own, score = float(metrics["ownership_loss"]), float(metrics["score_loss"])
    np.testing.assert_allclose(float(total), float(base) + 1.5 * own + 0.5 * score, rtol=1e-6)
    # The per-point binary cross-entropy of (o + 1) / 2, averaged: KataGo's 1.5 / P * sum.
    _, _, heads, _ = jax.jit(network.apply_heads, static_argnums=2)(variables, batch.obs, True)
    q, p = (batch.ownership + 1) / 2, (heads["ownership"] + 1) / 2
    expected = -jnp.mean(q * jnp.log(p) + (1 - q) * jnp.log(1 - p))
    np.testing.assert_allclose(own, float(expected), rtol=1e-4)
    expected_score = jnp.mean(jnp.square((batch.score - heads["score"]) / 81))
    np.testing.assert_allclose(score, float(expected_score), rtol=1e-5)
    grad = jax.jit(jax.grad(lambda p, o, s: loss(p, o, s)[0]), static_argnums=(1, 2))
    grads = grad(variables.params, 1.5, 0.5)
    for head in ("ownership_out", "score_out"):
        assert any(np.abs(np.asarray(g)).sum() > 0 for g in jax.tree.leaves(grads[head]))
    idle = grad(variables.params, 0.0, 0.0)  # weight 0: untouched
    for head in ("ownership_out", "score_out"):
        assert all(not np.asarray(g).any() for g in jax.tree.leaves(idle[head]))
    # Without the targets the loss is the AlphaZero loss of the same network and batch.
    plain, _ = jax.jit(lambda v, b: learner.loss_terms(network, v, b, 0.0, 1.0))(
        variables, batch.replace(ownership=None, score=None)
    )
    np.testing.assert_allclose(float(plain), float(base), rtol=1e-6)


def go_config(**options):
    config = tiny_config("go_9x9")
    config.game_kwargs.max_moves = 6  # games end in the second iteration: labels and updates
    config.train.num_iterations = 2
    for key, value in options.items():
        group, field = key.split(".")
        config[group][field] = value
    return config


ALL_ON = {
    "network.global_pooling": True,
    "learner.ownership_weight": 1.5,
    "learner.score_weight": 1.0,
}


@pytest.mark.deep  # CI: each option's own tests here and test_recovery's resumes
def test_go_run_with_all_three_options_trains_and_resumes(tmp_path):
    config = go_config(**ALL_ON)
    workdir = tmp_path / "run"
    api.train(config, workdir, quiet=True)
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").open()]
    last = records[-1]
    assert last["iteration"] == 2 and last["buffer_size"] == 48  # 8 games of 6 plies
    assert last["ownership_loss"] > 0 and last["score_loss"] > 0 and last["updates"] == 2
    agent = agent_lib.load_agent(workdir)
    params = agent.variables.params
    assert {"ownership_out", "score_out"} <= set(params)
    assert "pool_dense" in params["block0"]  # one block: global pooling in it
    # Inference works with the heads: a search for one position.
    output = agent.act(jax.tree.map(lambda x: x[None], agent.game.init(None)), jax.random.key(0))
    assert output.action.shape == (1,)
    # The checkpoint restores (buffer fields and all) and the run goes on.
    config.train.num_iterations = 3
    api.train(config, workdir, quiet=True)
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").open()]
    assert [r["iteration"] for r in records] == [1, 2, 3]
    assert records[-1]["updates"] == 4


def test_the_state_holds_the_targets_with_shardings_and_memory_counted():
    off, on = build.make_pipeline(go_config()), build.make_pipeline(go_config(**ALL_ON))
    assert (off.ownership_weight, on.ownership_weight, on.score_weight) == (0.0, 1.5, 1.0)
    assert on.ownership_points == 81 and off.ownership_points == 0
    key = jax.random.PRNGKey(0)
    abstract_off = jax.eval_shape(functools.partial(steps.init_state, off), key)
    abstract_on = jax.eval_shape(functools.partial(steps.init_state, on), key)
    assert abstract_off.buffer.ownership is None and abstract_off.buffer.score is None
    assert abstract_on.buffer.ownership.shape == (512, 81)
    assert abstract_on.buffer.ownership.dtype == jnp.int8
    # The memory plan counts the state's real arrays: P + 4 bytes more per position.
    mesh = compiled.make_mesh(1)
    sharded = compiled.state_shardings(on, mesh)
    assert jax.tree.structure(sharded) == jax.tree.structure(abstract_on)
    assert sharded.buffer.ownership.spec == sharded.buffer.value.spec
    _, shardings_off = memory._state(off, 1)
    _, shardings_on = memory._state(on, 1)
    parts_off = dict((n, t) for n, t, _ in memory._parts(abstract_off, shardings_off))
    parts_on = dict((n, t) for n, t, _ in memory._parts(abstract_on, shardings_on))
    assert parts_on["buffer"] - parts_off["buffer"] == 512 * (81 + 4)


def test_sampled_ownership_turns_with_the_observation():
    """Positions labelled with their own stones (black to move): after `sample_batch`'s random
    symmetries each sample's ownership still equals the stones of its observation."""
    pipeline = build.make_pipeline(go_config(**{"learner.ownership_weight": 1.5}))
    assert pipeline.augment
    buffer = steps.init_state(pipeline, jax.random.PRNGKey(0)).buffer
    states, _ = random_positions(GO, jax.random.PRNGKey(7), 8, 30)
    states = jax.tree.map(lambda x: x[-1], states)  # 30 plies: black to move
    assert not bool(states.current_player.any())
    obs = jax.vmap(GO.encode_observation)(jax.vmap(GO.observe)(states))
    entry = replay.Entry(
        obs=obs,
        policy=jnp.full((8, ACTIONS), 1.0 / ACTIONS),
        player=states.current_player,
        ended=jnp.ones(8, bool),
        result=jnp.zeros((8, 2)),
        lengths=jnp.ones(8, jnp.int32),
        root_value=jnp.zeros(8),
        final={"ownership": states.board},
    )
    buffer, _ = replay.write(buffer, entry, max_length=GO.max_episode_length)
    batch = jax.jit(functools.partial(steps.sample_batch, pipeline))(buffer, jax.random.key(1))
    stones = (batch.obs[..., 0] - batch.obs[..., 1]).reshape(len(batch.obs), -1)
    np.testing.assert_array_equal(batch.ownership, stones)
    # Most samples were turned (else the check above would prove nothing).
    unturned = np.asarray(jax.vmap(GO.observe)(states))
    turned = [not any(np.array_equal(np.asarray(o), u) for u in unturned) for o in batch.obs]
    assert sum(turned) >= len(turned) // 2
    # Without augmentation (the ablation's `no_augment`) every sample is as stored.
    plain = build.make_pipeline(
        go_config(**{"learner.ownership_weight": 1.5, "replay.augment": False})
    )
    batch = jax.jit(functools.partial(steps.sample_batch, plain))(buffer, jax.random.key(1))
    assert all(any(np.array_equal(np.asarray(o), u) for u in unturned) for o in batch.obs)


def test_options_refused_for_a_game_without_ownership():
    for key, message in (
        ("learner.ownership_weight", "tic_tac_toe has no ownership"),
        ("learner.score_weight", "tic_tac_toe has no final score"),
    ):
        config = tiny_config()
        group, field = key.split(".")
        config[group][field] = 1.0
        with pytest.raises(UserError, match=f"{key}: {message}"):
            build.make_pipeline(config)
    config = tiny_config()
    config.network.global_pooling = True  # any game: the network's own option
    assert (
        "pool_conv" in build.make_pipeline(config).network.init(jax.random.PRNGKey(0))[0]["block0"]
    )


def test_config_keys_defaults_schema_and_older_configs():
    config = base_config()
    assert config.network.global_pooling is False
    assert config.learner.ownership_weight == config.learner.score_weight == 0.0
    for key in ALL_ON:
        assert key in ADDED_KEYS
    for key, value in (
        ("learner.ownership_weight", -1.0),
        ("learner.score_weight", float("nan")),
        ("network.global_pooling", 1),
    ):
        bad = config.to_dict()
        group, field = key.split(".")
        bad[group][field] = value
        with pytest.raises(UserError, match=key):
            validate(ml_collections.ConfigDict(bad))
    saved = json.loads(to_json(config))  # a run saved before the keys existed
    del saved["network"]["global_pooling"]
    del saved["learner"]["ownership_weight"], saved["learner"]["score_weight"]
    loaded = from_dict(saved, source="old")
    assert loaded.network.global_pooling is False and loaded.learner.ownership_weight == 0.0


def test_ablation_variants_for_go_and_others(tmp_path):
    assert VARIANTS["ownership"]["learner.ownership_weight"] == "1.5"
    assert VARIANTS["global_pooling"]["network.global_pooling"] == "true"
    go = load_config("go_9x9:cpu")
    assert go.learner.ownership_weight == 1.5  # the experiment's own, since the ablation
    for name, weight in (("baseline", 0.0), ("ownership", 1.5), ("global_pooling", 1.5)):
        built = apply_overrides(copy.deepcopy(go), VARIANTS[name])
        assert built.learner.ownership_weight == weight, name
    assert {"ownership", "global_pooling"} <= set(ablation.applicable(go))
    gomoku = load_config("gomoku_6x6_k4")  # training's symmetries, off
    assert gomoku.replay.augment and "no_augment" in ablation.applicable(gomoku)
    assert not apply_overrides(copy.deepcopy(gomoku), VARIANTS["no_augment"]).replay.augment
    c1 = apply_overrides(copy.deepcopy(gomoku), VARIANTS["gumbel_8_c1"])
    assert (c1.search.algorithm, c1.search.num_simulations) == ("gumbel", 8)
    assert c1.search.gumbel_value_scale == 1.0 != gomoku.search.gumbel_value_scale
    others = ablation.applicable(load_config("tic_tac_toe"))
    assert "ownership" not in others and "global_pooling" in others and "baseline" in others
    with pytest.raises(UserError, match="variant ownership: learner.ownership_weight"):
        ablation.run_ablation(
            "tic_tac_toe", tmp_path, variants={"ownership": VARIANTS["ownership"]}
        )
