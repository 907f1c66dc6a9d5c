"""Search finds forced wins and blocks, values have the right sign, illegal moves get no weight.

Positions are hand-made Connect Four and Tic-tac-toe boards; the expected moves are checked
by hand (shown as ASCII boards beside each case).
"""

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest
from conftest import small_network_search

from azjax import games
from azjax.core.networks import make_network
from azjax.core.search import SearchParams, make_search, mask_logits, network_evaluator
from azjax.matches.mcts_baseline import make_mcts_baseline


def play(game, moves):
    state = game.init(jax.random.PRNGKey(0))
    for move in moves:
        state = game.step(state, move)
    return state


def batch(*states):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


C4 = games.make("connect_four")
TTT = games.make("tic_tac_toe")

# Connect Four, X (player 0) to move, wins at column 3 (0-based):
#   . . . . . . .
#   O O . . . . .      moves: X0 O0 X1 O1 X2 O0?  -> built below as X in row 0 cols 0..2
#   X X X . . . .
C4_WIN = [0, 0, 1, 1, 2, 6]  # X: 0,1,2  O: 0,1,6; X to move, column 3 wins.
# Connect Four, O (player 1) to move must block column 3 (X threatens 0,1,2 + 3).
C4_BLOCK = [0, 6, 1, 6, 2]
# Tic-tac-toe, X to move wins at cell 2:   X X .   O O .   . . .
TTT_WIN = [0, 3, 1, 4]
# Tic-tac-toe, O to move must block cell 2:  X X .   O . .   . . .
TTT_BLOCK = [0, 3, 1]
# Tic-tac-toe, O to move after X forked (threats at cells 3 and 2), O has no win: lost.
#   X O .
#   . X .
#   X . O
TTT_LOST = [0, 1, 4, 8, 6]


@functools.cache
def network_search(game_name, algorithm, num_simulations):
    return small_network_search(
        games.make(game_name),
        num_simulations=num_simulations,
        algorithm=algorithm,
        params=SearchParams(dirichlet_fraction=0.0, gumbel_scale=0.0),
    )


@functools.cache
def baseline(game_name, num_simulations):
    return jax.jit(make_mcts_baseline(games.make(game_name), num_simulations=num_simulations))


CASES = [
    ("connect_four", C4_WIN, 3),
    ("connect_four", C4_BLOCK, 3),
    ("tic_tac_toe", TTT_WIN, 2),
    ("tic_tac_toe", TTT_BLOCK, 2),
]


@pytest.mark.parametrize("algorithm", ["puct", "gumbel"])
def test_network_search_finds_forced_win_and_block(algorithm):
    for game_name in ("connect_four", "tic_tac_toe"):
        game = games.make(game_name)
        cases = [(moves, best) for name, moves, best in CASES if name == game_name]
        states = batch(*[play(game, moves) for moves, _ in cases])
        # A block needs depth 2 (every reply, then the threat): 7 x 7 leaves in Connect Four.
        search, variables = network_search(game_name, algorithm, 256)
        output = search(variables, states, jax.random.PRNGKey(0))
        np.testing.assert_array_equal(output.action, [best for _, best in cases])


@pytest.mark.parametrize("value_scale, best", [(0.1, 8), (1.0, 2)])
def test_gumbel_value_scale_weighs_a_found_win_against_a_confident_prior(value_scale, best):
    """A prior 12 nats sure of cell 8 where cell 2 wins (TTT_WIN), every move visited: at
    mctx's c_scale 0.1 the completed Q-values move the choice by at most (50 + 2) * 0.1 nats
    and the prior's move stays; at 1.0 the win found is played."""

    def confident(params, states, key):
        logits = jnp.zeros((states.current_player.shape[0], TTT.num_actions)).at[:, 8].set(12.0)
        return logits, jnp.zeros(states.current_player.shape)

    search = make_search(
        TTT,
        confident,
        num_simulations=9,
        algorithm="gumbel",
        max_num_considered_actions=9,
        params=SearchParams(gumbel_scale=0.0),
        gumbel_value_scale=value_scale,
    )
    output = jax.jit(search)(None, batch(play(TTT, TTT_WIN)), jax.random.PRNGKey(0))
    assert int(output.action[0]) == best


def test_mcts_baseline_finds_forced_win_and_block():
    for game_name in ("connect_four", "tic_tac_toe"):
        game = games.make(game_name)
        cases = [(moves, best) for name, moves, best in CASES if name == game_name]
        states = batch(*[play(game, moves) for moves, _ in cases])
        output = baseline(game_name, 200)(None, states, jax.random.PRNGKey(0))
        np.testing.assert_array_equal(output.action, [best for _, best in cases])


@pytest.mark.parametrize("algorithm", ["puct", "gumbel"])
def test_values_at_terminal_adjacent_nodes_have_the_right_sign(algorithm):
    states = batch(play(TTT, TTT_WIN), play(TTT, TTT_LOST))
    search, variables = network_search("tic_tac_toe", algorithm, 64)
    output = search(variables, states, jax.random.PRNGKey(0))
    assert output.value[0] > 0.3, "the mover wins next move"
    assert output.value[1] < -0.3, "the mover is lost: two threats"
    output = baseline("tic_tac_toe", 200)(None, states, jax.random.PRNGKey(0))
    assert output.value[0] > 0.3
    assert output.value[1] < -0.3


@pytest.mark.parametrize("algorithm", ["puct", "gumbel"])
def test_illegal_actions_never_get_weight(algorithm):
    # Columns 0 and 6 full, X and O alternating up each column (no four in a row).
    state = play(C4, [0] * 6 + [6] * 6 + [3])
    assert not bool(state.terminated)
    assert not bool(state.legal_action_mask[0]) and not bool(state.legal_action_mask[6])
    states = batch(state, play(C4, [3, 3, 3]))
    search, variables = network_search("connect_four", algorithm, 32)
    for seed in range(3):
        output = search(variables, states, jax.random.PRNGKey(seed))
        assert float(jnp.sum(jnp.where(states.legal_action_mask, 0.0, output.action_weights))) == 0
        assert bool(jnp.all(states.legal_action_mask[jnp.arange(2), output.action]))
        np.testing.assert_allclose(output.action_weights.sum(-1), 1.0, rtol=1e-5)
    output = baseline("connect_four", 200)(None, states, jax.random.PRNGKey(0))
    assert float(jnp.sum(jnp.where(states.legal_action_mask, 0.0, output.action_weights))) == 0


def _illegal_visits(tree) -> int:
    """Visits of children whose move is illegal at their parent (a node with legal moves)."""
    legal = np.asarray(tree.embeddings.legal_action_mask)  # [B, N, A]
    has_legal = legal.any(-1, keepdims=True)
    visits = np.asarray(tree.children_visits)
    return int(np.sum(np.where(has_legal & ~legal, visits, 0)))


def test_puct_never_searches_an_illegal_move_below_the_root():
    """mctx's rule masks illegal moves at the root only: below it their prior is 0, and an
    unvisited one valued at its parent's value (+0.9 here) outscores legal children whose
    searched value is lower. `puct_selection` masks them at every node; mctx's own
    `muzero_policy`, run on the same roots, does search them (so this test can fail)."""
    game = TTT

    def evaluate(params, states, key):
        del params, key
        return jnp.zeros(states.legal_action_mask.shape), jnp.full(states.terminated.shape, 0.9)

    states = batch(play(TTT, []), play(TTT, [4, 0]), play(TTT, [0, 1, 2]))
    search = make_search(game, evaluate, num_simulations=200, return_tree=True)
    tree = jax.jit(search)(None, states, jax.random.PRNGKey(0)).tree
    assert _illegal_visits(tree) == 0
    root = mctx.RootFnOutput(
        prior_logits=mask_logits(jnp.zeros((3, 9)), states.legal_action_mask),
        value=jnp.full((3,), 0.9),
        embedding=states,
    )
    theirs = mctx.muzero_policy(
        None,
        jax.random.PRNGKey(0),
        root,
        search.recurrent_fn,
        200,
        invalid_actions=~states.legal_action_mask,
        qtransform=search.qtransform,
    )
    assert _illegal_visits(theirs.search_tree) > 0


@pytest.mark.parametrize("algorithm", ["puct", "gumbel"])
def test_return_tree_exposes_the_tree_and_changes_nothing_else(algorithm):
    game = TTT
    network = make_network(
        game.observation_shape, game.num_actions, channels=8, num_blocks=1, value_hidden=8
    )
    variables = network.init(jax.random.PRNGKey(1))
    states = batch(play(TTT, TTT_BLOCK), play(TTT, []))
    outputs = []
    for return_tree in (False, True):
        search = make_search(
            game,
            network_evaluator(game, network),
            num_simulations=16,
            algorithm=algorithm,
            return_tree=return_tree,
        )
        outputs.append(jax.jit(search)(variables, states, jax.random.PRNGKey(3)))
    plain, with_tree = outputs
    assert plain.tree is None
    tree = with_tree.tree
    assert tree.node_visits.shape == (2, 17)
    np.testing.assert_array_equal(tree.children_visits[:, 0].sum(-1), [16, 16])
    np.testing.assert_array_equal(tree.node_visits[:, 0], [17, 17])  # the root evaluation too
    np.testing.assert_array_equal(with_tree.action, plain.action)
    np.testing.assert_array_equal(with_tree.action_weights, plain.action_weights)
    np.testing.assert_array_equal(with_tree.value, plain.value)


@pytest.mark.parametrize("game_name", ["tic_tac_toe", "connect_four"])
def test_symmetric_evaluation_sees_each_state_through_one_symmetry(game_name):
    """Each state's prior is the network's prior of the state seen through some symmetry s,
    mapped back (checked forward: `apply_symmetry` of the prior gives the network's output
    on the transformed observation), with that view's value; several s are drawn."""
    game = games.make(game_name)
    network = make_network(
        game.observation_shape, game.num_actions, channels=8, num_blocks=1, value_hidden=8
    )
    variables = network.init(jax.random.PRNGKey(1))
    states = batch(*[play(game, moves) for moves in ([], [0], [1, 2], [2, 0, 1], [0, 1]) * 4])
    logits, value = network_evaluator(game, network, symmetric=True)(
        variables, states, jax.random.PRNGKey(3)
    )
    obs = jax.vmap(game.observe)(states)
    drawn = set()
    for i in range(obs.shape[0]):
        for s in range(game.symmetries):
            seen, mapped = game.apply_symmetry(obs[i], logits[i], jnp.int32(s))
            direct, direct_value, _ = network.apply(variables, seen[None], False)
            if np.allclose(mapped, direct[0], atol=1e-5) and np.isclose(value[i], direct_value[0]):
                drawn.add(s)
                break
        else:
            raise AssertionError(f"state {i}: no symmetry explains its prior")
    assert len(drawn) > 1, drawn
    plain = network_evaluator(game, network)(variables, states, jax.random.PRNGKey(3))
    assert not np.allclose(plain[0], logits)  # not the plain evaluation
