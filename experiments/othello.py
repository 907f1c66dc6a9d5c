"""Othello 8x8 (as in reversi-zero and alpha-zero-general; `--config.game=othello_6x6` for
the smaller board).

On a 2-core CPU the network's forward pass alone (batch 256, 103 ms) puts one iteration at
over 100 s (65 evaluations x 16 plies), more with search overhead and learning.
"""

from azjax.config import base_config


def get_config():
    config = base_config()
    config.name = "othello"
    config.game = "othello"
    config.network.channels = 64
    config.network.num_blocks = 6
    config.network.value_hidden = 128
    config.search.num_simulations = 64
    config.search.dirichlet_alpha = 1.0  # about 10 / (typical 10 legal moves)
    config.selfplay.batch_size = 256
    config.selfplay.num_steps = 16
    config.selfplay.temperature_moves = 12
    config.replay.capacity = 200_000
    config.replay.min_size = 5_000
    config.learner.batch_size = 512
    config.learner.updates_per_iteration = 16
    config.train.num_iterations = 2_000
    config.eval.every = 50
    config.eval.num_games = 64
    config.eval.num_simulations = 64
    config.eval.opponents = ("random", "mcts:400")
    return config
