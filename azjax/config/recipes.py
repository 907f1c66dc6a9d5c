"""The config recipes: every key's default (`base_config`), and the two starting points the
experiment files build on, sized for a 2-core CPU (`cpu_config`) and for one accelerator
host (`accelerator_config`). `azjax.config` re-exports them.
"""

import ml_collections


def base_config() -> ml_collections.ConfigDict:
    """Defaults every experiment starts from (sized for Connect Four on a laptop CPU)."""
    config = ml_collections.ConfigDict()
    config.name = "connect_four"
    config.game = "connect_four"
    config.game_kwargs = ml_collections.ConfigDict()
    config.seed = 0

    config.network = ml_collections.ConfigDict()
    config.network.channels = 32
    config.network.num_blocks = 3
    config.network.policy_channels = 2
    config.network.value_channels = 1
    config.network.value_hidden = 64
    # "bfloat16": computes in bfloat16 with float32 parameters, optimizer state, BatchNorm
    # statistics and outputs (TPUs, recent GPUs); "float32" computes everything in float32.
    config.network.dtype = "float32"
    # KataGo's global pooling bias in residual blocks 3, 6, 9, ... (azjax/core/networks.py).
    config.network.global_pooling = False

    config.search = ml_collections.ConfigDict()
    config.search.algorithm = "puct"  # "puct" (AlphaZero) or "gumbel" (Gumbel MuZero)
    config.search.num_simulations = 32
    config.search.dirichlet_alpha = 1.0  # about 10 / (typical number of legal moves)
    config.search.dirichlet_fraction = 0.25
    config.search.pb_c_init = 1.25
    config.search.pb_c_base = 19652.0
    config.search.max_num_considered_actions = 16
    config.search.gumbel_scale = 1.0
    # Gumbel's c_scale: the weight of the searched Q-values against the prior in the improved
    # policy and the move (mctx's default). A collapsed prior outweighs it (Xiangqi:
    # docs/results.md), so that a mate the search finds is not played; larger trusts Q more.
    config.search.gumbel_value_scale = 0.1
    # Start each search from the subtree the previous one left under the move played (PUCT
    # only, Gumbel ignores it; AlphaGo Zero, AlphaZero_Gomoku): its visits count toward the
    # next move's. On Gomoku 6x6 k4, 10 minutes on 2 CPU cores, its score against
    # 1000-simulation MCTS was 0.940 against 0.895 without (docs/results.md, "Learning faster").
    config.search.tree_reuse = True
    # Each network evaluation in the search sees the position through a random board
    # symmetry (AlphaGo Zero); off by default (the ablation measures it).
    config.search.symmetric_eval = False
    # One ply of lookahead for wins in every evaluated position (`evaluators.
    # with_immediate_wins`): a move that lets the opponent win at once is seen as lost on its
    # first visit, however low the prior of the winning reply. Off by default: it costs one
    # game step per action per evaluation (docs/results.md, Othello 8x8).
    config.search.win_check = False
    # KataGo's forced playouts with policy target pruning in self-play's PUCT search: k (0:
    # off; KataGo uses 2). A root child short of sqrt(k * prior * visits) visits is visited
    # next, and those forced visits come off the policy target (azjax/core/forced_playouts.py).
    # At 32 simulations on Gomoku 6x6 it scored 0.075 against MCTS-1000 where the defaults
    # scored 0.885 (docs/results.md): forcing then takes most of each search.
    config.search.forced_playouts = 0.0

    config.selfplay = ml_collections.ConfigDict()
    config.selfplay.batch_size = 128  # games in lockstep
    config.selfplay.num_steps = 16  # plies per iteration in every game
    config.selfplay.temperature_moves = 8  # sample moves for this many plies, then argmax
    # KataGo's playout cap randomization: a ply is a full search with this probability (its
    # positions are trained on), else a cheap one of `cheap_simulations` without noise
    # (played, not stored). 1.0: every ply is full.
    config.selfplay.full_search_fraction = 1.0
    config.selfplay.cheap_simulations = 8
    # AlphaGo Zero's resignation: a game resigns when the mover's searched value and its
    # move's value fall below v_resign (starting at resign_threshold); resign_check_fraction
    # of the games never resign and measure false positives, and v_resign adapts to keep
    # their rate at most resign_false_positives.
    config.selfplay.resign = False
    config.selfplay.resign_threshold = -0.9
    config.selfplay.resign_check_fraction = 0.1
    config.selfplay.resign_false_positives = 0.05
    # Drawn games' positions labelled with this weight times the game's heuristic score of
    # the last position (`Game.adjudicate`: Xiangqi's material) instead of 0; 0: off. Not
    # AlphaZero: a prior for games whose self-play draws everything (docs/results.md, Xiangqi).
    # Negative: a contempt for draws (the side ahead when a game is drawn is labelled as losing).
    config.selfplay.draw_adjudication = 0.0
    config.selfplay.win_adjudication = 0.0
    config.selfplay.random_move_fraction = 0.0
    # The share of self-play games started from a handicap start (`Game.handicap_init`:
    # Xiangqi takes pieces off at random), so that won positions are played out.
    config.selfplay.handicap_starts = 0.0
    # Rule options of the self-play games only, over `game_kwargs` (evaluations, agents and
    # checkpoints keep `game_kwargs`): e.g. Xiangqi self-play without its draw rules
    # (`no_capture_limit=None`, `repetition_limit=None`), so that a lead must be converted.
    config.selfplay.game_kwargs = ml_collections.ConfigDict()

    config.replay = ml_collections.ConfigDict()
    config.replay.capacity = 60_000
    config.replay.min_size = 2_000  # no updates before the buffer holds this many positions
    config.replay.augment = True  # random board symmetry per sample

    config.learner = ml_collections.ConfigDict()
    config.learner.batch_size = 256
    config.learner.updates_per_iteration = 8
    config.learner.optimizer = "adam"  # "adam" or "sgd" (with momentum)
    config.learner.learning_rate = 1e-3
    config.learner.momentum = 0.9
    config.learner.schedule = "constant"  # "constant", "cosine" or "piecewise"
    config.learner.warmup_steps = 0
    config.learner.decay_steps = 10_000
    config.learner.boundaries = (0,)  # piecewise: multiply by decay_factor at these updates
    config.learner.decay_factor = 0.1
    config.learner.weight_decay = 1e-4
    # loss = value_loss_weight * (z - v)^2 + CE(pi, p) + weight_decay * ||theta||^2
    config.learner.value_loss_weight = 1.0
    config.learner.max_grad_norm = 0.0
    # Value target (1 - w) z + w v: the game outcome z mixed with the searched root value v.
    # On Gomoku 6x6 k4 (10 minutes, 2 CPU cores) 0.5 scored 0.935 against 1000-simulation
    # MCTS where 0 scored 0.895 (docs/results.md, "Learning faster"); older runs keep 0.
    config.learner.value_target_mix = 0.5
    # AlphaZero_Gomoku's adaptive learning rate: after each chunk of updates the rate's
    # multiplier shrinks by 1.5 when the KL divergence of the policy before and after it
    # exceeds 2 * kl_target, and grows by 1.5 when below kl_target / 2 (0: off).
    config.learner.kl_target = 0.0
    # KataGo's auxiliary targets (Go): the loss weights of an ownership head (KataGo: 1.5) and
    # a score head, trained on the game's final position (azjax/core/learner.py). 0: off.
    config.learner.ownership_weight = 0.0
    config.learner.score_weight = 0.0

    config.train = ml_collections.ConfigDict()
    config.train.num_iterations = 300
    config.train.max_minutes = 0.0  # stop after this much wall-clock time (0: no limit)
    config.train.checkpoint_every = 10
    config.train.keep_checkpoints = 3
    # AlphaGo Zero's gating (off in AlphaZero): self-play plays the best network so far, and
    # every `gating_every` iterations the trained network replaces it if it scores at least
    # `gating_threshold` in `gating_games` games against it (see `azjax/training/gating.py`).
    config.train.gating = False
    config.train.gating_every = 10
    config.train.gating_games = 40  # even: half with each colour
    config.train.gating_threshold = 0.55
    # Where records go besides metrics.jsonl (azjax/runs/trackers.py): "tensorboard", "wandb"
    # (Weights & Biases, project `wandb_project`), "mlflow" (at `mlflow_uri`; "": SQLite in
    # WORKDIR/mlflow.db).
    config.train.loggers = ("tensorboard",)
    config.train.wandb_project = "azjax"
    config.train.mlflow_uri = ""
    # A jax.profiler trace of iterations (first, last) in WORKDIR/profile; (0, 0): none.
    config.train.profile = (0, 0)

    config.eval = ml_collections.ConfigDict()
    config.eval.every = 10  # iterations between evaluations (0: never)
    config.eval.num_games = 64  # per opponent, half with each colour
    config.eval.num_simulations = 32  # the agent's search when evaluated
    # Specs: random, minimax, mcts:N, ladder:N, previous, workdir:PATH, gtp:..., uci:...
    config.eval.opponents = ("random", "mcts:200")
    # `eval/elo` against the fixed opponents (ratings.anchors): rated by a tournament among
    # them at the first evaluation, or from a tournament's ratings file (elo_ratings).
    config.eval.elo = True
    config.eval.elo_anchor = ""  # the anchor at 0; "": the first mcts:N opponent
    config.eval.elo_ratings = ""  # a tournament's ratings.csv rating every fixed opponent
    return config


def cpu_config(name: str, game: str) -> ml_collections.ConfigDict:
    """The recipe the 2-core-CPU variants of the larger games start from: Gomoku 6x6 k4's
    (0.945 against MCTS-1000 after 10 minutes): 32 channels x 3 blocks, 128 games of 16
    plies in lockstep, 32 PUCT simulations, 60,000 positions of replay, 16 Adam updates of
    256 with AlphaZero_Gomoku's KL-adaptive rate; two hours, rated every 100 iterations
    against random and MCTS-1000."""
    config = base_config()
    config.name, config.game = name, game
    config.network.channels = 32
    config.network.num_blocks = 3
    config.network.value_hidden = 64
    config.search.num_simulations = 32
    config.selfplay.batch_size = 128
    config.selfplay.num_steps = 16
    config.replay.capacity = 60_000
    config.replay.min_size = 2_000
    config.learner.batch_size = 256
    config.learner.updates_per_iteration = 16
    config.learner.kl_target = 0.02
    config.train.num_iterations = 10_000
    config.train.max_minutes = 120.0
    config.eval.every = 100
    config.eval.num_games = 64
    config.eval.num_simulations = 32
    config.eval.opponents = ("random", "mcts:1000")
    return config


def accelerator_config() -> ml_collections.ConfigDict:
    """The recipe the accelerator experiments (Go, Xiangqi) start from: AlphaGo Zero's
    (SGD with momentum 0.9, a stepped learning rate, L2 1e-4, a large replay) scaled to one
    accelerator host, with Gumbel search at 32 simulations and 256 games in lockstep."""
    config = base_config()
    config.search.algorithm = "gumbel"
    config.search.num_simulations = 32
    config.search.max_num_considered_actions = 16
    config.selfplay.batch_size = 256
    config.selfplay.num_steps = 16
    config.replay.capacity = 400_000
    config.learner.batch_size = 512
    config.learner.updates_per_iteration = 16
    config.learner.optimizer = "sgd"
    config.learner.learning_rate = 2e-2
    config.learner.momentum = 0.9
    config.learner.schedule = "piecewise"
    config.learner.boundaries = (50_000, 100_000)  # updates
    config.learner.decay_factor = 0.1
    config.learner.weight_decay = 1e-4
    config.train.num_iterations = 10_000
    config.eval.every = 100
    config.eval.num_games = 64
    config.eval.num_simulations = 64
    config.eval.opponents = ("random", "mcts:400")
    return config
