"""Gomoku on 8x8, five in a row (AlphaZero_Gomoku's main setting; two days on a PC there).

Variants (`--config gomoku_8x8:VARIANT`):
  (none)  accelerator-sized: 64 channels x 4 blocks, 256 games, 64 simulations (too slow
          for a CPU: 65 network evaluations of 256 positions per ply).
  cpu     a 2-core CPU: Gomoku 6x6 k4's recipe (32 channels x 3 blocks, 128 games, 32
          simulations, AlphaZero_Gomoku's KL-adaptive rate), two hours, evaluated every 300
          iterations against random and MCTS-200 (rating MCTS-1000 as an anchor costs
          minutes before the first iteration; `azjax zoo --export` rates the result
          against MCTS-1000).
"""

from azjax.config import base_config, cpu_config
from azjax.types import UserError

VARIANTS = ("cpu",)


def get_config(variant: str | None = None):
    if variant is not None:
        return _cpu_config(variant)
    config = base_config()
    config.name = "gomoku_8x8"
    config.game = "gomoku_8x8"
    config.network.channels = 64
    config.network.num_blocks = 4
    config.network.value_hidden = 64
    config.search.num_simulations = 64
    config.search.dirichlet_alpha = 0.15  # about 10 / (64 legal moves)
    config.selfplay.batch_size = 256
    config.selfplay.num_steps = 16
    config.selfplay.temperature_moves = 8
    config.replay.capacity = 200_000
    config.replay.min_size = 5_000
    config.learner.batch_size = 512
    config.learner.updates_per_iteration = 16
    config.train.num_iterations = 2_000
    config.eval.every = 50
    config.eval.num_games = 64
    config.eval.num_simulations = 64
    config.eval.opponents = ("random", "mcts:1000")
    return config


def _cpu_config(variant: str):
    if variant not in VARIANTS:
        raise UserError(f"gomoku_8x8 has variants {', '.join(VARIANTS)}, not {variant!r}")
    config = cpu_config(f"gomoku_8x8_{variant}", "gomoku_8x8")
    config.search.dirichlet_alpha = 0.15
    config.selfplay.temperature_moves = 8
    config.eval.every = 300
    config.eval.opponents = ("random", "mcts:200")
    return config
