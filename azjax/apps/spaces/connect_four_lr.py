"""A learning-rate sweep of the Connect Four experiment (docs/sweeps.md).

    azjax sweep --config connect_four --space connect_four_lr \
        --workdir runs/sweep_c4_lr --trials 8 --config.train.num_iterations=30 \
        --config.eval.every=15 --config.eval.opponents='("mcts:100",)' --config.eval.elo=false

Each trial trains the experiment for 30 iterations (about 3 minutes on a 2-core CPU) and is
judged by its score in 64 games against 100-simulation pure MCTS at the end.
"""

from azjax.apps.sweeps import LogUniform, Space


def get_space():
    return Space(
        params={"learner.learning_rate": LogUniform(1e-4, 3e-2)},
        sampler="tpe",
        objective="eval/mcts:100/score",
        direction="maximize",
    )
