"""`search.win_check`: one ply of lookahead for wins in every evaluated position
(`evaluators.with_immediate_wins`), and an agent's search changed at load time
(`load_agent(..., search=...)`, `azjax evaluate --config.search.KEY=VALUE`)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_search import C4, C4_BLOCK, C4_WIN, TTT, batch, play

import azjax
from azjax.apps import cli
from azjax.core.evaluators import with_immediate_wins
from azjax.core.search import SearchParams, make_search
from azjax.types import UserError

# The options of self-play, search and the learner are checked in the slow set (CI runs
# it): the quick tier (`pytest tests/games tests/core`) keeps the rules and the pipeline.
pytestmark = pytest.mark.slow

# Tic-tac-toe, X to move wins at cell 2 (row) and at cell 8 (diagonal):
#   X X .
#   O X O
#   . O .
TTT_TWO_WINS = [0, 3, 1, 5, 4, 7]


def blind(column: int, value: float = 0.0):
    """An evaluator whose prior for X (player 0) all but rules out `column` (20 nats below
    the others); O's prior is uniform."""

    def evaluate(params, states, key):
        size = states.current_player.shape[0]
        ruled_out = jnp.zeros((size, C4.num_actions)).at[:, column].set(-20.0)
        logits = jnp.where(states.current_player[:, None] == 0, ruled_out, 0.0)
        return logits, jnp.full((size,), value)

    return evaluate


def test_a_win_in_one_takes_the_prior_and_the_value():
    evaluate = with_immediate_wins(C4, blind(3, value=0.25))
    states = batch(play(C4, C4_WIN), play(C4, C4_BLOCK), play(C4, []))
    logits, value = jax.jit(evaluate)(None, states, jax.random.PRNGKey(0))
    prior = jax.nn.softmax(logits, axis=-1)
    assert float(prior[0, 3]) == 1.0 and float(value[0]) == 1.0  # X wins at column 3
    plain_logits, plain_value = blind(3, value=0.25)(None, states, None)
    np.testing.assert_array_equal(logits[1:], plain_logits[1:])  # no win: unchanged
    np.testing.assert_array_equal(value[1:], plain_value[1:])

    def uniform(params, states, key):
        return jnp.zeros((1, TTT.num_actions)), jnp.zeros(1)

    logits, value = with_immediate_wins(TTT, uniform)(None, batch(play(TTT, TTT_TWO_WINS)), None)
    prior = np.asarray(jax.nn.softmax(logits[0]))
    np.testing.assert_allclose(prior[[2, 8]], [0.5, 0.5])  # shared by the two wins alone
    assert float(value[0]) == 1.0


@pytest.mark.parametrize("algorithm", ["puct", "gumbel"])
def test_the_search_blocks_a_win_the_prior_rules_out(algorithm):
    """O must block column 3, and the prior all but rules out X's win there (as Othello
    8x8's zoo agent's prior did the wipeouts it walked into): without the check no
    simulation reaches that win and O plays elsewhere; with it every other move is seen as
    lost on its first visit."""
    states = batch(play(C4, C4_BLOCK))
    chosen = {}
    for check in (False, True):
        evaluate = with_immediate_wins(C4, blind(3)) if check else blind(3)
        search = make_search(
            C4,
            evaluate,
            num_simulations=16,
            algorithm=algorithm,
            max_num_considered_actions=7,
            params=SearchParams(dirichlet_fraction=0.0, gumbel_scale=0.0),
        )
        chosen[check] = int(jax.jit(search)(None, states, jax.random.PRNGKey(0)).action[0])
    assert chosen == {False: chosen[False], True: 3} and chosen[False] != 3, chosen


def test_an_agent_loads_with_another_search():
    agent = azjax.load_agent("zoo:tic_tac_toe", search={"search.win_check": "true"})
    assert agent.settings.agent.search.win_check is True
    assert azjax.load_agent("zoo:tic_tac_toe").settings.agent.search.win_check is False
    with pytest.raises(UserError, match="search.\\* keys, not 'eval.num_games'"):
        azjax.load_agent("zoo:tic_tac_toe", search={"eval.num_games": "4"})
    with pytest.raises(UserError, match="search.win_check"):
        azjax.load_agent("zoo:tic_tac_toe", search={"search.win_check": "maybe"})


def test_evaluate_rates_the_agent_with_another_search(capsys):
    argv = ["evaluate", "--agent", "tic_tac_toe", "--opponent", "random", "--games", "4"]
    assert cli.main([*argv, "--config.search.win_check=true"]) == 0
    out = capsys.readouterr().out
    assert "simulations, search.win_check=true) vs random:" in out
    assert cli.main([*argv, "--config.eval.num_games=4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("azjax: error:") and "search.* keys" in err[0]
