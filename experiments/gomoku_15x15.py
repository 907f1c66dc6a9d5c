"""Gomoku on the standard 15x15 board, five in a row (freestyle).

AlphaGo Zero scaled down: a 10-block, 128-channel ResNet and 128 simulations per move.
Meant for a GPU or TPU: on a 2-core CPU one forward pass at batch 512 takes 5.5 s, which
puts one iteration at over 6 hours (129 evaluations x 32 plies).
"""

from azjax.config import base_config


def get_config():
    config = base_config()
    config.name = "gomoku_15x15"
    config.game = "gomoku_15x15"
    config.network.channels = 128
    config.network.num_blocks = 10
    config.network.value_hidden = 256
    config.search.algorithm = "gumbel"  # Gumbel MuZero keeps small simulation counts useful
    config.search.num_simulations = 128
    config.search.max_num_considered_actions = 16
    config.selfplay.batch_size = 512
    config.selfplay.num_steps = 32
    config.selfplay.temperature_moves = 0
    config.replay.capacity = 250_000  # positions of float32 [15, 15, 4]: 0.9 GB
    config.replay.min_size = 50_000
    config.learner.batch_size = 1024
    config.learner.updates_per_iteration = 32
    config.learner.optimizer = "sgd"
    config.learner.learning_rate = 0.02
    config.learner.schedule = "piecewise"
    config.learner.boundaries = (100_000, 200_000)
    config.train.num_iterations = 10_000
    config.eval.every = 100
    config.eval.num_games = 64
    config.eval.num_simulations = 128
    config.eval.opponents = ("random", "mcts:1000")
    return config
