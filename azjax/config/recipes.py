"""The config recipes: the defaults (`base_config`, from `azjax.config.keys`) and the two
starting points the experiment files build on, sized for a 2-core CPU (`cpu_config`) and for
one accelerator host (`accelerator_config`). `azjax.config` re-exports them.
"""

import ml_collections

from azjax.config.keys import KEYS


def base_config() -> ml_collections.ConfigDict:
    """Defaults every experiment starts from (sized for Connect Four on a laptop CPU): the
    defaults of `azjax.config.keys.KEYS`."""
    config = ml_collections.ConfigDict()
    for name, key in KEYS.items():
        node = config
        *groups, field = name.split(".")
        for group in groups:
            if group not in node:
                node[group] = ml_collections.ConfigDict()
            node = node[group]
        default = key.default
        node[field] = ml_collections.ConfigDict() if isinstance(default, dict) else default
    return config


def cpu_config(name: str, game: str) -> ml_collections.ConfigDict:
    """The recipe the 2-core-CPU variants of the larger games start from: Gomoku 6x6 k4's
    (0.945 against MCTS-1000 after 10 minutes): 32 channels x 3 blocks, 128 games of 16
    plies in lockstep, 32 PUCT simulations, 60,000 positions of replay, 16 Adam updates of
    256 with AlphaZero_Gomoku's KL-adaptive rate; two hours, rated every 100 iterations
    against random and MCTS-1000."""
    config = base_config()
    config.name, config.game = name, game
    config.network.channels = 32
    config.network.num_blocks = 3
    config.network.value_hidden = 64
    config.search.num_simulations = 32
    config.selfplay.batch_size = 128
    config.selfplay.num_steps = 16
    config.replay.capacity = 60_000
    config.replay.min_size = 2_000
    config.learner.batch_size = 256
    config.learner.updates_per_iteration = 16
    config.learner.kl_target = 0.02
    config.train.num_iterations = 10_000
    config.train.max_minutes = 120.0
    config.eval.every = 100
    config.eval.num_games = 64
    config.eval.num_simulations = 32
    config.eval.opponents = ("random", "mcts:1000")
    return config


def accelerator_config() -> ml_collections.ConfigDict:
    """The recipe the accelerator experiments (Go, Xiangqi) start from: AlphaGo Zero's
    (SGD with momentum 0.9, a stepped learning rate, L2 1e-4, a large replay) scaled to one
    accelerator host, with Gumbel search at 32 simulations and 256 games in lockstep."""
    config = base_config()
    config.search.algorithm = "gumbel"
    config.search.num_simulations = 32
    config.search.max_num_considered_actions = 16
    config.selfplay.batch_size = 256
    config.selfplay.num_steps = 16
    config.replay.capacity = 400_000
    config.learner.batch_size = 512
    config.learner.updates_per_iteration = 16
    config.learner.optimizer = "sgd"
    config.learner.learning_rate = 2e-2
    config.learner.momentum = 0.9
    config.learner.schedule = "piecewise"
    config.learner.boundaries = (50_000, 100_000)  # updates
    config.learner.decay_factor = 0.1
    config.learner.weight_decay = 1e-4
    config.train.num_iterations = 10_000
    config.eval.every = 100
    config.eval.num_games = 64
    config.eval.num_simulations = 64
    config.eval.opponents = ("random", "mcts:400")
    return config
