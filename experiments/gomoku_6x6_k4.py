"""Gomoku on 6x6, four in a row (AlphaZero_Gomoku's small benchmark).

AlphaZero_Gomoku reports a reasonable model after 500-1000 self-play games (about 2 hours
on a PC); here 128 games run in lockstep. Evaluated against pure MCTS with 1000 simulations.
One iteration takes about 3.9 s on an idle 2-core CPU (median of the run in docs/results.md,
self-play and learning; evaluation against MCTS-1000 adds about 65 s every 20 iterations).
"""

from azjax.config import base_config


def get_config():
    config = base_config()
    config.name = "gomoku_6x6_k4"
    config.game = "gomoku_6x6_k4"
    config.network.channels = 32
    config.network.num_blocks = 3
    config.network.value_hidden = 64
    config.search.num_simulations = 32
    config.search.dirichlet_alpha = 0.3  # about 10 / (36 legal moves)
    config.selfplay.batch_size = 128
    config.selfplay.num_steps = 12
    config.selfplay.temperature_moves = 6
    # AlphaZero_Gomoku's KL-adaptive rate: with tree reuse and value mixing (the defaults)
    # the best of the ablation (docs/results.md, "Learning faster").
    config.learner.kl_target = 0.02
    config.replay.capacity = 60_000
    config.replay.min_size = 2_000
    config.learner.updates_per_iteration = 16
    config.train.num_iterations = 400
    config.train.max_minutes = 30.0
    config.eval.every = 20
    config.eval.num_games = 64
    config.eval.opponents = ("random", "mcts:1000")
    return config
