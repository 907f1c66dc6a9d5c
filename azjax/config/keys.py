"""Every config key, defined once: its default, its range or choices, what it does, and how a
run treats it when resumed, tuned or loaded from an older config.json.

`base_config()` is built from `KEYS`, `validate` checks against it, and the tables the rest
of azjax reads (`RESUMABLE_KEYS`, `GATING_KEYS`, `TUNABLE_KEYS`, `ADDED_KEYS`, `OLD_VALUES`)
are derived from it. A new key is one entry here, its use, and (when it changes what the
step functions compute) its field in the record that carries it (`azjax.config.build`).
"""

import dataclasses
import json
from typing import Any

__all__ = [
    "ADDED_KEYS",
    "GATING_KEYS",
    "KEYS",
    "MAX_SEED",
    "MAX_SIMULATIONS",
    "OLD_VALUES",
    "RESUMABLE_KEYS",
    "TUNABLE_KEYS",
    "Key",
    "LOGGERS",
    "config_text",
    "flatten",
]

# The largest seed: the PRNG keys take a signed 64-bit seed, and a run draws keys from
# `seed + 1` and `seed + 2` too (evaluation, gating); 2**62 leaves room for those.
MAX_SEED = 2**62
# The most simulations a search, or an `mcts:N` or `ladder:N` opponent, may run per move.
MAX_SIMULATIONS = 1_000_000
# The trackers a run's records may go to besides metrics.jsonl (azjax/runs/trackers.py).
LOGGERS = ("tensorboard", "wandb", "mlflow")
_DEFAULT = object()


@dataclasses.dataclass(frozen=True)
class Key:
    """One config key.

    Attributes:
      default: its value in `base_config()`; its type is the key's type (an int key takes
        integers only, a float key any finite number).
      doc: what it does.
      low, high: a number's inclusive range (None: unbounded); `low_open` excludes `low`.
      choices: the values a string key takes (empty: any string).
      change: how a run treats a change of it: "fixed" (a resumed run refuses it; it may
        change the compiled step functions), "resume" (a resumed run may change it: budget,
        cadence, evaluation; no effect on what the run computes), "gating" (changes which
        network self-play plays, not the compiled functions), "tunable" (reaches the step
        functions as an argument, `core.steps.Hyperparams`: a population's members may
        differ in it and share one compiled program).
      added: added after runs were saved: a config.json without it gets `old`, the value
        those runs used (default: `default`).
    """

    default: Any
    doc: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple = ()
    change: str = "fixed"
    added: bool = False
    old: Any = _DEFAULT


K = Key
# Grouped as `base_config` nests them; within the train and eval groups and across the
# tunable keys, the order is the order of the derived tables.
KEYS: dict[str, Key] = {
    "name": K("connect_four", "the run's name (its default workdir is runs/NAME)"),
    "game": K("connect_four", "the game, one of `azjax.games.names()`"),
    "game_kwargs": K({}, "the game's rule options, its constructor's keywords (`komi`, `k`)"),
    "seed": K(0, "seeds every random draw of the run", 0, MAX_SEED),
    # The network (azjax/core/networks.py).
    "network.channels": K(32, "convolution channels of the ResNet", 1, 4096),
    "network.num_blocks": K(3, "residual blocks", 0, 256),
    "network.policy_channels": K(2, "channels of the policy head's convolution", 1, 256),
    "network.value_channels": K(1, "channels of the value head's convolution", 1, 256),
    "network.value_hidden": K(64, "units of the value head's hidden layer", 1, 65536),
    "network.dtype": K(
        "float32",
        "bfloat16: computes in bfloat16 with float32 parameters, optimizer state, BatchNorm "
        "statistics and outputs (TPUs, recent GPUs); float32: everything in float32",
        choices=("float32", "bfloat16"),
        added=True,
    ),
    "network.global_pooling": K(
        False, "KataGo's global pooling bias in residual blocks 3, 6, 9, ...", added=True
    ),
    # The learner (azjax/core/learner.py); loss = value_loss_weight * (z - v)^2 + CE(pi, p)
    # + weight_decay * ||theta||^2.
    "learner.batch_size": K(256, "positions per update", 1),
    "learner.updates_per_iteration": K(8, "updates after each iteration's self-play", 1),
    "learner.optimizer": K("adam", "adam, or sgd with momentum", choices=("adam", "sgd")),
    "learner.learning_rate": K(
        1e-3, "the (peak) learning rate", 0.0, 10.0, low_open=True, change="tunable"
    ),
    "learner.momentum": K(0.9, "SGD's momentum", 0.0, 1.0),
    "learner.schedule": K(
        "constant",
        "the learning rate's schedule: constant, cosine (decay over decay_steps) or piecewise "
        "(times decay_factor at each of `boundaries` updates)",
        choices=("constant", "cosine", "piecewise"),
    ),
    "learner.warmup_steps": K(0, "updates of linear warm-up", 0),
    "learner.decay_steps": K(10_000, "updates of the cosine decay", 1),
    "learner.boundaries": K((0,), "piecewise: the updates at which the rate is multiplied"),
    "learner.decay_factor": K(0.1, "piecewise: the factor at each boundary", 0.0),
    "learner.weight_decay": K(1e-4, "L2 weight decay", 0.0, change="tunable"),
    "learner.value_loss_weight": K(
        1.0, "the value loss's weight", 0.0, change="tunable", added=True
    ),
    "learner.max_grad_norm": K(0.0, "clips the gradient's global norm (0: off)", 0.0),
    "learner.value_target_mix": K(
        0.5,
        "value target (1 - w) z + w v: the outcome z mixed with the searched root value v "
        '(docs/results.md, "Learning faster")',
        0.0,
        1.0,
        added=True,
        old=0.0,
    ),
    "learner.kl_target": K(
        0.0,
        "AlphaZero_Gomoku's adaptive rate: after each chunk of updates the rate's multiplier "
        "shrinks by 1.5 when the policy's KL divergence exceeds 2 * kl_target, grows by 1.5 "
        "below kl_target / 2 (0: off)",
        0.0,
        added=True,
        old=0.0,
    ),
    "learner.ownership_weight": K(
        0.0, "KataGo's ownership target's loss weight (Go; KataGo: 1.5; 0: off)", 0.0, added=True
    ),
    "learner.score_weight": K(
        0.0, "KataGo's score target's loss weight (Go; 0: off)", 0.0, added=True
    ),
    # Self-play (azjax/core/selfplay.py).
    "selfplay.batch_size": K(128, "games in lockstep", 1),
    "selfplay.num_steps": K(16, "plies per iteration in every game", 1),
    "selfplay.temperature_moves": K(
        8, "plies whose move is sampled from the search policy, then argmax", 0, change="tunable"
    ),
    "selfplay.full_search_fraction": K(
        1.0,
        "KataGo's playout cap randomization: a ply is a full search with this probability "
        "(its position is trained on), else a cheap one of cheap_simulations without noise "
        "(played, not stored); 1: every ply is full",
        0.0,
        1.0,
        low_open=True,
        added=True,
        old=1.0,
    ),
    "selfplay.cheap_simulations": K(
        8, "the cheap searches' simulations", 1, MAX_SIMULATIONS, added=True
    ),
    "selfplay.resign": K(
        False,
        "AlphaGo Zero's resignation: a game resigns when the mover's searched value and its "
        "move's value fall below v_resign (from resign_threshold), which adapts to keep the "
        "false positives of the resign_check_fraction games that never resign at most "
        "resign_false_positives",
        added=True,
        old=False,
    ),
    "selfplay.resign_threshold": K(-0.9, "v_resign's start", -1.0, 1.0, added=True),
    "selfplay.resign_check_fraction": K(0.1, "games that never resign", 0.0, 1.0, added=True),
    "selfplay.resign_false_positives": K(0.05, "v_resign's target rate", 0.0, 1.0, added=True),
    "selfplay.draw_adjudication": K(
        0.0,
        "drawn games' positions labelled with this weight times the game's heuristic score of "
        "the last position (`Game.adjudicate`: Xiangqi's material) instead of 0; negative: a "
        "contempt for draws; 0: off (docs/results.md, Xiangqi)",
        -1.0,
        1.0,
        added=True,
    ),
    "selfplay.win_adjudication": K(
        0.0,
        "m > 0 ends a self-play game as a win for the side whose `Game.adjudicate` score is at "
        "least m before and after a ply (a lead the reply did not win back); 0: off",
        0.0,
        1.0,
        added=True,
    ),
    "selfplay.random_move_fraction": K(
        0.0,
        "the share of self-play moves played at random instead of the chosen one (their "
        "positions keep the search's policy as target)",
        0.0,
        1.0,
        added=True,
    ),
    "selfplay.handicap_starts": K(
        0.0,
        "self-play games started from a handicap start (`Game.handicap_init`: Xiangqi takes "
        "pieces off at random), so that won positions are played out",
        0.0,
        1.0,
        added=True,
    ),
    "selfplay.game_kwargs": K(
        {},
        "rule options of the self-play games only, over game_kwargs (e.g. Xiangqi without "
        "its draw rules, so that a lead must be converted)",
        added=True,
        old={},
    ),
    # The search (azjax/core/search.py).
    "search.algorithm": K(
        "puct", "puct (AlphaZero) or gumbel (Gumbel MuZero)", choices=("puct", "gumbel")
    ),
    "search.num_simulations": K(32, "simulations per self-play move", 1, MAX_SIMULATIONS),
    "search.dirichlet_alpha": K(
        1.0, "root noise's alpha, about 10 / legal moves", 0.0, low_open=True, change="tunable"
    ),
    "search.dirichlet_fraction": K(0.25, "root noise's weight", 0.0, 1.0, change="tunable"),
    "search.pb_c_init": K(1.25, "PUCT's exploration constant", 0.0, change="tunable"),
    "search.pb_c_base": K(19652.0, "PUCT's exploration base", 0.0, low_open=True, change="tunable"),
    "search.max_num_considered_actions": K(16, "Gumbel's root sampling width", 1),
    "search.gumbel_scale": K(1.0, "Gumbel noise's scale in self-play", 0.0, change="tunable"),
    "search.gumbel_value_scale": K(
        0.1,
        "Gumbel's c_scale, the searched Q-values' weight against the prior (mctx's default); "
        "a collapsed prior outweighs it (Xiangqi, docs/results.md); larger trusts Q more",
        0.0,
        low_open=True,
        added=True,
    ),
    "search.tree_reuse": K(
        True,
        "each search starts from the subtree the previous one left under the move played "
        '(PUCT only; AlphaGo Zero, AlphaZero_Gomoku; docs/results.md, "Learning faster")',
        added=True,
        old=False,
    ),
    "search.symmetric_eval": K(
        False, "each evaluation sees the position through a random board symmetry", added=True
    ),
    "search.win_check": K(
        False,
        "one ply of lookahead for wins in every evaluated position: a move that lets the "
        "opponent win at once is lost on its first visit (costs a game step per action)",
        added=True,
    ),
    "search.forced_playouts": K(
        0.0,
        "KataGo's forced playouts with policy target pruning, k (0: off; KataGo: 2)",
        0.0,
        added=True,
    ),
    # The replay buffer (azjax/core/replay.py).
    "replay.capacity": K(60_000, "positions kept", 1),
    "replay.min_size": K(2_000, "no updates before the buffer holds this many", 0),
    "replay.augment": K(True, "a random board symmetry per sample"),
    # Game records learned from before self-play (azjax/training/pretrain.py, docs/records.md).
    "records.path": K(
        "",
        "game records (a file, folder or glob of .sgf, .pgn, .jsonl) the network learns from "
        "before self-play's first iteration ('': none)",
        added=True,
    ),
    "records.updates": K(2_000, "supervised updates on the records", 0, added=True),
    "records.holdout": K(
        0.05, "share of the games held out (move accuracy, value loss)", 0.0, 0.5, added=True
    ),
    "records.eval_every": K(250, "updates between held-out measurements and saves", 1, added=True),
    "records.strict": K(
        False,
        "refuse all records at the first bad one (else each is skipped in a line)",
        added=True,
    ),
    "records.replay": K(
        True,
        "the records' positions fill self-play's empty replay; self-play overwrites them in "
        "ring order, so their share falls to none over replay.capacity positions",
        added=True,
    ),
    "records.max_games": K(0, "games read at most (0: all)", 0, added=True),
    # Training (azjax/training/).
    "train.num_iterations": K(300, "iterations to train", 0, change="resume"),
    "train.max_minutes": K(
        0.0, "stops after this much wall-clock time (0: no limit)", 0.0, change="resume"
    ),
    "train.checkpoint_every": K(10, "iterations between checkpoints", 1, change="resume"),
    "train.keep_checkpoints": K(3, "checkpoints kept", 1, change="resume"),
    "train.storage_timeout_s": K(
        300.0,
        "cloud storage (gs://) that stops answering during a checkpoint save or a file's "
        "write stops the run with one line after this many seconds, the checkpoints saved "
        "before kept (0: tensorstore's and gcsfs's own retries, a quarter of an hour or more)",
        0.0,
        change="resume",
        added=True,
    ),
    "train.gating": K(
        False,
        "AlphaGo Zero's gating: self-play plays the best network so far, replaced when the "
        "trained one scores gating_threshold in gating_games games against it",
        change="gating",
        added=True,
    ),
    "train.gating_every": K(
        10, "iterations between gating matches", 1, change="gating", added=True
    ),
    "train.gating_games": K(40, "games per gating match (even)", 2, change="gating", added=True),
    "train.gating_threshold": K(
        0.55,
        "the score that replaces the best network",
        0.0,
        1.0,
        True,
        change="gating",
        added=True,
    ),
    "train.loggers": K(
        ("tensorboard",),
        "trackers besides metrics.jsonl: tensorboard, wandb (project wandb_project), mlflow "
        '(at mlflow_uri; "": SQLite in WORKDIR/mlflow.db)',
        change="resume",
        added=True,
    ),
    "train.wandb_project": K("azjax", "the Weights & Biases project", change="resume", added=True),
    "train.mlflow_uri": K("", "the MLflow tracking URI", change="resume", added=True),
    "train.profile": K(
        (0, 0),
        "a profiler trace of iterations (first, last); (0, 0): none",
        change="resume",
        added=True,
    ),
    # Evaluation (azjax/training/evaluation.py).
    "eval.every": K(10, "iterations between evaluations (0: never)", 0, change="resume"),
    "eval.num_games": K(64, "games per opponent, half with each colour (even)", 2, change="resume"),
    "eval.opponents": K(
        ("random", "mcts:200"),
        "random, minimax, mcts:N, ladder:N, previous, workdir:PATH, zoo:NAME, gtp:..., uci:...",
        change="resume",
    ),
    "eval.num_simulations": K(
        32, "the agent's search when evaluated", 1, MAX_SIMULATIONS, change="resume"
    ),
    "eval.elo": K(
        True,
        "eval/elo against the fixed opponents, rated by a tournament among them at the first "
        "evaluation or read from elo_ratings",
        change="resume",
        added=True,
    ),
    "eval.elo_anchor": K(
        "", 'the opponent rated 0 ("": the first mcts:N)', change="resume", added=True
    ),
    "eval.elo_ratings": K(
        "", "a tournament's ratings.csv rating every fixed opponent", change="resume", added=True
    ),
}


def _names(change: str) -> tuple[str, ...]:
    return tuple(name for name, key in KEYS.items() if key.change == change)


RESUMABLE_KEYS = _names("resume")
GATING_KEYS = _names("gating")
TUNABLE_KEYS = _names("tunable")
ADDED_KEYS = tuple(name for name, key in KEYS.items() if key.added)
OLD_VALUES = {name: key.old for name, key in KEYS.items() if key.added and key.old is not _DEFAULT}


def flatten(tree: dict, prefix: str = "", *, keep_tuples: bool = False) -> dict[str, object]:
    """Flattens a nested dict into {'a.b': value}, with lists and tuples normalised to lists
    (kept as they are with `keep_tuples`)."""
    items = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            items.update(flatten(value, name + ".", keep_tuples=keep_tuples))
        elif isinstance(value, list | tuple) and not keep_tuples:
            items[name] = list(value)
        else:
            items[name] = value
    return items


def config_text(tree: dict) -> str:
    """A resolved config (its nested dict) as stable JSON: what config.json holds."""
    return json.dumps(tree, indent=2, sort_keys=True, default=list)
