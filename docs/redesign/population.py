"""A population of two tic-tac-toe members (two learning rates), fixed seed."""

import sys

import azjax

SMALL = {
    "network.channels": "16", "network.num_blocks": "2", "network.value_hidden": "16",
    "search.num_simulations": "8", "selfplay.batch_size": "16", "selfplay.num_steps": "8",
    "replay.capacity": "8192", "replay.min_size": "32", "learner.batch_size": "32",
    "learner.updates_per_iteration": "2", "train.checkpoint_every": "2", "eval.every": "2",
    "eval.num_games": "4", "eval.num_simulations": "4", "train.max_minutes": "0", "seed": "7",
    "train.num_iterations": "4", "eval.opponents": '("random",)',
}  # fmt: skip

configs = []
for learning_rate in ("0.001", "0.003"):
    config = azjax.load_config("tic_tac_toe")
    azjax.apply_overrides(config, {**SMALL, "learner.learning_rate": learning_rate})
    configs.append(config)
azjax.train_population(configs, [f"{sys.argv[1]}/m0", f"{sys.argv[1]}/m1"], progress="none")
