"""`azjax ablation`'s arguments and variants, apart from the runner (`ablation.py`) so that
the command line's parser loads no jax."""

import argparse

__all__ = ["ALL_OFF", "VARIANTS", "add_parser"]

# Few-simulation Gumbel search (Danihelka et al. 2022), the base of two variants.
GUMBEL_8 = {"search.algorithm": "gumbel", "search.num_simulations": "8"}
# Every technique off: the baseline the single-technique variants start from.
ALL_OFF = {
    "search.tree_reuse": "false",
    "selfplay.full_search_fraction": "1.0",
    "selfplay.resign": "false",
    "learner.kl_target": "0.0",
    "learner.value_target_mix": "0.0",
    "learner.ownership_weight": "0.0",
    "learner.score_weight": "0.0",
    "network.global_pooling": "false",
}
# Each technique on its own, and "defaults": the experiment as it is (today's defaults).
VARIANTS = {
    "baseline": ALL_OFF,
    "tree_reuse": {**ALL_OFF, "search.tree_reuse": "true"},
    "playout_cap": {
        **ALL_OFF,
        "selfplay.full_search_fraction": "0.25",
        "selfplay.cheap_simulations": "8",
    },
    "resign": {**ALL_OFF, "selfplay.resign": "true"},
    "kl_lr": {**ALL_OFF, "learner.kl_target": "0.02"},
    "value_mix": {**ALL_OFF, "learner.value_target_mix": "0.5"},
    # Options measured against the experiment as it is (its defaults, one changed).
    # KataGo's auxiliary targets (games with ownership and a final score: Go): KataGo's
    # ownership weight 1.5, and a score weight of 1 (ours: KataGo's score losses are on a
    # distribution of scores, not comparable).
    "ownership": {"learner.ownership_weight": "1.5", "learner.score_weight": "1.0"},
    "global_pooling": {"network.global_pooling": "true"},
    "symmetric_eval": {"search.symmetric_eval": "true"},
    # One ply of lookahead for wins in every evaluated position (`evaluators.
    # with_immediate_wins`), in self-play and in the rated agent's search.
    "win_check": {"search.win_check": "true"},
    # What the board's symmetries give in training: each sampled position as stored,
    # without its random symmetry (`replay.augment` is on in every experiment).
    "no_augment": {"replay.augment": "false"},
    "gumbel_8": GUMBEL_8,
    # The same with Gumbel's c_scale at 1.0 instead of mctx's 0.1 (what made Xiangqi learn).
    "gumbel_8_c1": {**GUMBEL_8, "search.gumbel_value_scale": "1.0"},
    "updates_32": {"learner.updates_per_iteration": "32"},  # the replay ratio, doubled from 16
    "forced_playouts": {"search.forced_playouts": "2.0"},  # KataGo's k
    # The two that helped most on Gomoku, together.
    "reuse_cap": {
        **ALL_OFF,
        "search.tree_reuse": "true",
        "selfplay.full_search_fraction": "0.25",
        "selfplay.cheap_simulations": "8",
    },
    # Everything that helped on Gomoku 6x6 k4 alone (tree reuse, KL-adaptive LR, value mix).
    "combined": {
        **ALL_OFF,
        "search.tree_reuse": "true",
        "learner.kl_target": "0.02",
        "learner.value_target_mix": "0.5",
    },
    "defaults": {},
}


def add_parser(commands, count, even_count) -> argparse.ArgumentParser:
    """Registers `ablation` in the command line's subparsers; `count(low)` and `even_count`
    type integers."""
    ablation = commands.add_parser(
        "ablation",
        help="train an experiment with each option on or off for one budget; rate each run",
    )
    ablation.add_argument(
        "--config", default=None, help="experiment file or name (default: connect_four)"
    )
    ablation.add_argument(
        "--workdir", required=True, help="ablation directory: a run per variant (resumes)"
    )
    ablation.add_argument(
        "--minutes", type=_positive, default=10.0, help="training budget per run (default 10)"
    )
    ablation.add_argument(
        "--opponent", default="mcts:1000", help="the rating opponent (default mcts:1000)"
    )
    ablation.add_argument(
        "--games", type=even_count, default=200, help="rating games (even; default 200)"
    )
    ablation.add_argument("--seed", type=count(0), default=0)
    ablation.add_argument(
        "--variants",
        default=None,
        help=f"comma-separated, of {', '.join(VARIANTS)} (default: every one the experiment "
        "accepts)",
    )
    return ablation


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value
