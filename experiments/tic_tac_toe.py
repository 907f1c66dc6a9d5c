"""Tic-tac-toe: a fast test bed; learns to never lose against minimax in a few minutes."""

from azjax.config import base_config


def get_config():
    config = base_config()
    config.name = "tic_tac_toe"
    config.game = "tic_tac_toe"
    config.network.channels = 32
    config.network.num_blocks = 2
    config.network.value_hidden = 32
    config.search.num_simulations = 32
    config.search.dirichlet_alpha = 1.0
    config.selfplay.batch_size = 128
    config.selfplay.num_steps = 9
    config.selfplay.temperature_moves = 4
    config.replay.capacity = 20_000
    config.replay.min_size = 1_000
    config.learner.updates_per_iteration = 16
    config.train.num_iterations = 60
    config.eval.every = 20
    config.eval.opponents = ("random", "mcts:200")
    return config
