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

Variants (`--config xiangqi:VARIANT`):
  cpu  a 2-core CPU: a 32-channel x 3-block network, Gumbel search at 16 simulations with 16
       actions considered and c_scale 1.0 (`search.gumbel_value_scale`), 64 games, every
       move sampled, half the self-play games from handicap starts
       (`selfplay.handicap_starts`) and self-play without the no-capture and repetition
       draws (`selfplay.game_kwargs`; evaluations keep them); evaluated every 40 iterations
       against random (32 games; pure MCTS plays Xiangqi too slowly to evaluate against in
       the run). With mctx's c_scale 0.1 self-play collapsed into draws: a collapsed prior
       outweighed the mates the search found (docs/results.md, "Xiangqi").
"""

from azjax.config import accelerator_config, cpu_config
from azjax.types import UserError

VARIANTS = ("cpu",)


def get_config(variant: str | None = None):
    if variant is not None:
        if variant not in VARIANTS:
            raise UserError(f"xiangqi has variants {', '.join(VARIANTS)}, not {variant!r}")
        return _cpu_config()
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


def _cpu_config():
    config = cpu_config("xiangqi_cpu", "xiangqi")
    config.search.algorithm = "gumbel"
    config.search.num_simulations = 16
    config.search.max_num_considered_actions = 16
    config.search.gumbel_value_scale = 1.0  # mctx's 0.1 lets a collapsed prior pass over mates
    config.selfplay.batch_size = 64
    config.selfplay.temperature_moves = 400  # every move sampled
    config.selfplay.handicap_starts = 0.5  # won positions to play out
    # Self-play games end by mate or at 400 plies: a side behind is not saved by a draw.
    config.selfplay.game_kwargs.no_capture_limit = None
    config.selfplay.game_kwargs.repetition_limit = None
    config.replay.capacity = 40_000  # 14 KB a position: 560 MB
    config.learner.updates_per_iteration = 8
    config.train.max_minutes = 120.0
    config.eval.every = 40
    config.eval.num_games = 32
    config.eval.num_simulations = 16
    config.eval.opponents = ("random",)
    return config
