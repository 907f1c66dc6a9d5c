"""A tiny search space for Tic-tac-toe: the tests' and the sweep notebook's.

    azjax sweep --config tic_tac_toe --space tic_tac_toe \
        --workdir runs/sweep_ttt --trials 4

Two tunable scalars (one compiled program for every trial), judged by the default objective:
`eval/elo` where the runs rate themselves against two or more fixed opponents (the experiment
as it is), else the score against the last one (the tests and the notebook evaluate against
the random player alone).
"""

from azjax.apps.sweeps import Choice, LogUniform, Space


def get_space():
    return Space(
        params={
            "learner.learning_rate": LogUniform(3e-4, 3e-3),
            "selfplay.temperature_moves": Choice([2, 4]),
        },
        sampler="random",
    )
