"""Go 19x19, Tromp-Taylor rules with positional superko, komi 7.5: AlphaGo Zero's setting,
scaled to one accelerator host.

AlphaGo Zero: 20 blocks x 256 channels (40 for the final run), 1600 simulations per move,
Dirichlet alpha 0.03, temperature 1 for the first 30 moves, SGD with momentum 0.9, learning
rate 1e-2 -> 1e-3 -> 1e-4, L2 1e-4, batch 2048. Here: 10 blocks x 128 channels, Gumbel search
at 64 simulations (PUCT at 800 with `--config.search.algorithm=puct
--config.search.num_simulations=800`). A multi-GPU/TPU config.

One iteration's self-play is 65 network evaluations of 256 positions for each of 32 plies:
accelerators only.
"""

from azjax.config import accelerator_config


def get_config():
    config = accelerator_config()
    config.name = "go_19x19"
    config.game = "go_19x19"
    config.network.channels = 128
    config.network.num_blocks = 10
    config.network.value_hidden = 256
    config.search.num_simulations = 64
    config.search.dirichlet_alpha = 0.03  # AlphaGo Zero's value, for PUCT
    config.selfplay.num_steps = 32
    config.selfplay.temperature_moves = 30
    # 26 KB per position (float32 planes and policy): 10.4 GB here, 4.8 GB more for the
    # self-play positions of unfinished games (256 x 722 plies at most).
    config.replay.min_size = 50_000
    config.learner.batch_size = 2048
    config.learner.updates_per_iteration = 32
    config.learner.learning_rate = 1e-2
    config.learner.boundaries = (200_000, 400_000)
    config.train.num_iterations = 100_000
    config.eval.every = 200
    config.eval.num_simulations = 128
    config.eval.opponents = ("random", "mcts:800")
    return config
