"""Go 9x9, Tromp-Taylor rules with positional superko, komi 7.5: AlphaGo Zero scaled down.

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

from azjax.config import accelerator_config


def get_config():
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
