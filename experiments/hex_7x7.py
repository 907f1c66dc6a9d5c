"""Hex on 7x7, without the swap rule (Black, who moves first, wins with perfect play).

Sized for a 2-core CPU from the recipe of the small boards (`cpu_config`: Gomoku 6x6 k4's,
32 channels x 3 blocks, 128 games of 16 plies in lockstep, 32 PUCT simulations, 16 Adam
updates of 256 with AlphaZero_Gomoku's KL-adaptive rate), with Dirichlet noise for 49
moves; 20 minutes, evaluated every 50 iterations against random and MCTS-200 (rate the
result against MCTS-1000 with `azjax zoo --export`). The swap rule is a game option:
`--config.game_kwargs.swap=true`.
"""

from azjax.config import cpu_config


def get_config():
    config = cpu_config("hex_7x7", "hex_7x7")
    config.search.dirichlet_alpha = 0.2  # about 10 / (49 legal moves)
    config.selfplay.temperature_moves = 8
    config.train.num_iterations = 400
    config.train.max_minutes = 20.0
    config.eval.every = 50
    config.eval.opponents = ("random", "mcts:200")
    return config
