"""Xiangqi (Chinese chess): draws by a 120-ply no-capture rule, threefold repetition and a
400-ply limit (see `azjax/games/xiangqi.py`).

cchess-zero trained a 19-block network with 1600 simulations from Python move generation;
AlphaZero's chess used Dirichlet alpha 0.3 for about 30 legal moves. Here: 6 blocks x 96
channels, Gumbel search at 32 simulations (PUCT with `--config.search.algorithm=puct`), 256
games in lockstep. A GPU config.

On this 2-core CPU one iteration's self-play (256 games x 16 plies x 33 network evaluations)
took 192 s (iteration 2 of `azjax train --config xiangqi
--config.replay.capacity=120000`, 21 positions/s; the forward pass alone is 246 ms per batch
of 256); the 16 learner updates come on top once the buffer holds `replay.min_size`.
"""

from azjax.config import accelerator_config


def get_config():
    config = accelerator_config()
    config.name = "xiangqi"
    config.game = "xiangqi"
    config.network.channels = 96
    config.network.num_blocks = 6
    config.network.value_hidden = 128
    config.search.dirichlet_alpha = 0.3  # AlphaZero's chess value, for PUCT
    config.selfplay.temperature_moves = 20
    # 14 KB per position (5.8 KB of planes, 8.3 KB of policy over 2086 labels): 5.6 GB.
    config.replay.min_size = 20_000
    config.learner.boundaries = (50_000, 100_000)
    return config
