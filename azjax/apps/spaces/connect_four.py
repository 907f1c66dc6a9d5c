"""The search space of the Connect Four sweep (`experiments/connect_four.py`).

    azjax sweep --config connect_four --space connect_four \
        --workdir runs/sweep_c4 --trials 16

The five tunable scalars that most change what AlphaZero learns from its own games, at
ranges around the experiment's values; each trial is judged by its last `eval/elo` (the
experiment rates itself against random, mcts:200 and mcts:800). They are all tunable keys
(`config.TUNABLE_KEYS`), so every trial shares one compiled program, and `--population K`
trains K of them in one.
"""

from azjax.apps.sweeps import Int, LogUniform, Space, Uniform


def get_space():
    return Space(
        params={
            "learner.learning_rate": LogUniform(2e-4, 5e-3),
            "learner.weight_decay": LogUniform(1e-5, 1e-3),
            "learner.value_loss_weight": Uniform(0.25, 2.0),
            "search.dirichlet_alpha": LogUniform(0.3, 2.0),
            "selfplay.temperature_moves": Int(2, 16, step=2),
        },
        sampler="tpe",
        objective="eval/elo",
        direction="maximize",
        pruner="median",
    )
