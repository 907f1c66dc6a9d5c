"""Othello (as in reversi-zero and alpha-zero-general).

Variants (`--config othello:VARIANT`):
  (none)   8x8, accelerator-sized: 64 channels x 6 blocks, 256 games, 64 simulations (too
           slow for a CPU: 65 network evaluations of 256 positions per ply).
  cpu6     6x6 on a 2-core CPU: 32 channels x 3 blocks, 128 games, 32 simulations (the size
           that learned Gomoku 6x6 k4 in minutes), value targets from game outcomes alone,
           one hour, evaluated against random and MCTS-200 as it trains, rated against
           MCTS-1000 at the end.
  cpu      8x8 on a 2-core CPU: the same network, two hours, rated against MCTS-1000.
"""

from azjax.config import base_config, cpu_config
from azjax.types import UserError

VARIANTS = ("cpu6", "cpu")


def get_config(variant: str | None = None):
    if variant is not None:
        return _cpu_config(variant)
    config = base_config()
    config.name = "othello"
    config.game = "othello"
    config.network.channels = 64
    config.network.num_blocks = 6
    config.network.value_hidden = 128
    config.search.num_simulations = 64
    config.search.dirichlet_alpha = 1.0  # about 10 / (typical 10 legal moves)
    config.selfplay.batch_size = 256
    config.selfplay.num_steps = 16
    config.selfplay.temperature_moves = 12
    config.replay.capacity = 200_000
    config.replay.min_size = 5_000
    config.learner.batch_size = 512
    config.learner.updates_per_iteration = 16
    config.train.num_iterations = 2_000
    config.eval.every = 50
    config.eval.num_games = 64
    config.eval.num_simulations = 64
    config.eval.opponents = ("random", "mcts:400")
    return config


def _cpu_config(variant: str):
    if variant not in VARIANTS:
        raise UserError(f"othello has variants {', '.join(VARIANTS)}, not {variant!r}")
    # The CPU variants: Gomoku 6x6 k4's recipe. Pure MCTS-1000 plays Othello slowly (random
    # rollouts of ~30 plies per simulation), so the CPU runs evaluate rarely.
    config = cpu_config(f"othello_{variant}", "othello_6x6" if variant == "cpu6" else "othello")
    config.search.dirichlet_alpha = 1.0
    config.eval.every = 150
    if variant == "cpu6":
        config.selfplay.temperature_moves = 8
        config.train.max_minutes = 60.0
        # MCTS-1000's evaluations took a large share of the first run's hour (docs/results.md,
        # "Othello 6x6"); MCTS-200 costs a fifth, and the export rates against MCTS-1000.
        config.eval.opponents = ("random", "mcts:200")
        # Outcomes alone as value targets: the recipe's 0.5 mix of the searched value lost
        # to them (docs/results.md, "Othello 6x6").
        config.learner.value_target_mix = 0.0
    else:
        config.selfplay.temperature_moves = 12
    return config
