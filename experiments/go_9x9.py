"""Go 9x9, Tromp-Taylor rules with positional superko, komi 7.5: AlphaGo Zero scaled down.

Variants (`--config go_9x9:VARIANT`):
  (none)  the accelerator config below.
  cpu     a 2-core CPU: Gomoku 6x6 k4's recipe (Adam with the KL-adaptive rate) on a
          32-channel x 4-block network, Gumbel search at 16 simulations, 128 games, two
          hours; evaluated every 100 iterations against random and MCTS-50 in the run (pure
          MCTS's random playouts of Go run to the move limit, so stronger anchors cost
          minutes), with KataGo's ownership and score targets (weights 1.5 and 1), which the
          ablation measured to pay. The zoo agent `go_9x9` is 80 minutes of it from before they were
          on (docs/results.md, "Go 9x9").

AlphaGo Zero (19x19): 20-40 residual blocks x 256 channels, 1600 simulations per move,
Dirichlet alpha 0.03, temperature 1 for the first 30 moves, SGD with momentum 0.9 and a
stepped learning rate from 1e-2, L2 1e-4. Here on 9x9: 6 blocks x 64 channels and Gumbel
search (Gumbel MuZero learns Go 9x9 with few simulations) at 32 simulations; alpha scaled to
the ~80 legal moves (PUCT, `--config.search.algorithm=puct`). A GPU config.

On this 2-core CPU one iteration's self-play (256 games x 16 plies x 33 network
evaluations) took 78 s (iteration 2 of `azjax train --config go_9x9`, 55
positions/s; the forward pass alone is 119 ms per batch of 256); the 16 learner updates
come on top once the buffer holds `replay.min_size` positions.
"""

from azjax.config import accelerator_config, cpu_config
from azjax.types import UserError

VARIANTS = ("cpu",)


def get_config(variant: str | None = None):
    if variant is not None:
        if variant not in VARIANTS:
            raise UserError(f"go_9x9 has variants {', '.join(VARIANTS)}, not {variant!r}")
        return _cpu_config()
    config = accelerator_config()
    config.name = "go_9x9"
    config.game = "go_9x9"
    config.network.channels = 64
    config.network.num_blocks = 6
    config.network.value_hidden = 128
    config.search.dirichlet_alpha = 0.12  # about 10 / (81 legal moves), for PUCT
    config.selfplay.temperature_moves = 16
    config.replay.min_size = 10_000
    config.learner.boundaries = (40_000, 80_000)
    return config


def _cpu_config():
    config = cpu_config("go_9x9_cpu", "go_9x9")
    config.network.num_blocks = 4
    config.search.algorithm = "gumbel"
    config.search.num_simulations = 16
    config.search.max_num_considered_actions = 8
    config.selfplay.temperature_moves = 16
    config.replay.capacity = 100_000
    config.replay.min_size = 4_000
    config.eval.num_simulations = 16
    config.eval.opponents = ("random", "mcts:50")
    # KataGo's ownership and score targets: they paid in the Go 9x9 ablation
    # (docs/results.md, "Go 9x9").
    config.learner.ownership_weight = 1.5
    config.learner.score_weight = 1.0
    return config
