"""Gomoku on 8x8, five in a row (AlphaZero_Gomoku's main setting; two days on a PC there).

On a 2-core CPU the network's forward pass alone (batch 256, 60 ms) puts one iteration at
over 60 s (65 evaluations x 16 plies), more with search overhead and learning; a GPU is the
intended home.
"""

from azjax.config import base_config


def get_config():
    config = base_config()
    config.name = "gomoku_8x8"
    config.game = "gomoku_8x8"
    config.network.channels = 64
    config.network.num_blocks = 4
    config.network.value_hidden = 64
    config.search.num_simulations = 64
    config.search.dirichlet_alpha = 0.15  # about 10 / (64 legal moves)
    config.selfplay.batch_size = 256
    config.selfplay.num_steps = 16
    config.selfplay.temperature_moves = 8
    config.replay.capacity = 200_000
    config.replay.min_size = 5_000
    config.learner.batch_size = 512
    config.learner.updates_per_iteration = 16
    config.train.num_iterations = 2_000
    config.eval.every = 50
    config.eval.num_games = 64
    config.eval.num_simulations = 64
    config.eval.opponents = ("random", "mcts:1000")
    return config
