"""Connect Four (6x7): the default experiment (`azjax train` with no arguments).

Sized to improve visibly within 15 minutes on a 2-core CPU: a 3-block, 32-channel ResNet,
128 games in lockstep, 32 PUCT simulations per move, 16 Adam updates of 256 positions per
iteration at a rate of 4e-3 adapted to the KL divergence of each update (target 0.02), tree
reuse and value targets mixed with the searched value.
Evaluation every 100 iterations (the agent with 200 simulations) against the random player
and the pure-MCTS baseline at 200 and 800 simulations (32 games each) is included in the
wall-clock time. What the 30-minute run reaches: docs/results.md, "Connect Four".
"""

from azjax.config import base_config


def get_config():
    config = base_config()
    config.name = "connect_four"
    config.game = "connect_four"
    config.learner.updates_per_iteration = 16
    # The learning-rate sweep in docs/sweeps.md: 4e-3 to 1e-2 learned fastest (1e-3 before).
    config.learner.learning_rate = 4e-3
    # AlphaZero_Gomoku's KL-adaptive rate, with tree reuse and value mixing (the defaults):
    # the best of the Connect Four ablation (docs/results.md, "Learning faster").
    config.learner.kl_target = 0.02
    config.train.num_iterations = 1000
    config.train.max_minutes = 30.0
    config.eval.every = 100
    config.eval.num_games = 32
    config.eval.opponents = ("random", "mcts:200", "mcts:800")
    # The agent plays its evaluations (and `evaluate`, `play`, `serve`) with 200 simulations,
    # still a quarter of the strongest opponent's.
    config.eval.num_simulations = 200
    return config
