import sys
import azjax
from azjax.training import population  # azjax.population before the wings

out = sys.argv[1]
configs = []
for lr in ("0.001", "0.003"):
    c = azjax.load_config("tic_tac_toe")
    azjax.apply_overrides(
        c,
        {
            "network.channels": "16",
            "network.num_blocks": "2",
            "network.value_hidden": "16",
            "search.num_simulations": "8",
            "selfplay.batch_size": "16",
            "selfplay.num_steps": "8",
            "replay.capacity": "8192",
            "replay.min_size": "32",
            "learner.batch_size": "32",
            "learner.updates_per_iteration": "2",
            "train.checkpoint_every": "2",
            "eval.every": "2",
            "eval.num_games": "4",
            "eval.num_simulations": "4",
            "train.max_minutes": "0",
            "seed": "7",
            "train.num_iterations": "4",
            "eval.opponents": '("random",)',
            "learner.learning_rate": lr,
        },
    )
    configs.append(c)
population.train_population(configs, [f"{out}/m0", f"{out}/m1"], progress="none")
