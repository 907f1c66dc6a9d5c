"""The pure-MCTS baseline: the fixed opponent that ratings and evaluations measure against.

It is `search.make_search` with a uniform prior and random-playout values
(`evaluators.rollout_evaluator`): classic UCT-style Monte Carlo tree search, no network.
"""

from azjax.core.evaluators import rollout_evaluator
from azjax.core.search import SearchParams, make_search, qtransform_min_max
from azjax.games import Game

__all__ = ["make_mcts_baseline"]


def make_mcts_baseline(game: Game, *, num_simulations: int, pb_c_init: float = 6.0):
    """The pure-MCTS baseline: uniform prior, one random playout per leaf, no noise.

    It scores children with mctx's min-max normalised Q. With a uniform prior the PUCT
    exploration term then needs a larger constant than AlphaZero's 1.25 to expand every
    move: on Connect Four at 200 simulations, c = 6 beat c = 1.25 in 62 of 64 games and drew
    level with c = 12 (32-6-26); c = 24 was weaker.
    """
    return make_search(
        game,
        rollout_evaluator(game),
        num_simulations=num_simulations,
        algorithm="puct",
        qtransform=qtransform_min_max,
        params=SearchParams(dirichlet_fraction=0.0, pb_c_init=pb_c_init),
    )
