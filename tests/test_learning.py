"""It learns: Tic-tac-toe self-play training until the agent never loses to perfect play.

The reference is an exact minimax player (azjax/minimax.py) choosing at random among
optimal moves, so the agent meets every optimal line. Marked slow: a few minutes on 2 cores.
"""

import sys
from pathlib import Path

import jax
import pytest

sys.path.insert(0, str(Path(__file__).parent / "games"))

from minimax import make_minimax_player  # noqa: E402

from azjax import arena  # noqa: E402
from azjax import train as train_lib  # noqa: E402
from azjax.agent import load_agent  # noqa: E402
from azjax.config import load_config  # noqa: E402


@pytest.mark.slow
def test_tic_tac_toe_agent_never_loses_to_minimax(tmp_path):
    config = load_config("experiments/tic_tac_toe.py")
    config.eval.every = 0
    minimax = make_minimax_player(load_agent_game(config))
    perfect = lambda params, states, key: minimax(states, key)  # noqa: E731
    losses, iteration = None, 0
    for iteration in range(20, 121, 20):
        config.train.num_iterations = iteration
        train_lib.train(config, tmp_path, quiet=True)
        agent = load_agent(tmp_path)
        match = jax.jit(arena.make_match(agent.game, agent.player, perfect, num_games=400))
        result = match(agent.variables, None, jax.random.PRNGKey(iteration))
        summary = arena.summarize(jax.device_get(result.outcomes))
        losses = summary.losses
        print(f"iteration {iteration}: vs minimax {summary.format()}")
        if losses == 0:
            break
    assert losses == 0, f"still losing to minimax after {iteration} iterations"
    # Confirm on fresh games, as first and as second player separately.
    result = match(agent.variables, None, jax.random.PRNGKey(12345))
    outcomes = jax.device_get(result.outcomes)
    first = jax.device_get(result.a_first)
    assert (outcomes[first] >= 0).all() and (outcomes[~first] >= 0).all()


def load_agent_game(config):
    from azjax import games

    return games.make(config.game)
