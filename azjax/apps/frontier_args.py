"""`azjax frontier`'s arguments, apart from the study (`frontier.py`) so that the command
line's parser loads no jax."""

import argparse

__all__ = ["add_parser"]


def _budget(text: str) -> float:
    """An argparse type: a FLOP budget such as 1e15, from 1e6 to 1e24."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected FLOPs such as 1e15, got {text!r}") from None
    if not 1e6 <= value <= 1e24:
        raise argparse.ArgumentTypeError(f"the budget must be from 1e6 to 1e24 FLOPs, got {text}")
    return value


def _words(text: str) -> list[str]:
    words = [w.strip() for w in text.split(",") if w.strip()]
    if not words:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
    return list(dict.fromkeys(words))


def _simulations(text: str) -> list[int]:
    counts = []
    for word in _words(text):
        if not (word.isascii() and word.isdecimal()) or not 1 <= int(word) <= 100_000:
            raise argparse.ArgumentTypeError(
                f"expected simulation counts from 1 to 100000 separated by commas, got {text!r}"
            )
        counts.append(int(word))
    return counts


def _target(text: str) -> tuple[float, str]:
    """An argparse type: SCORE@ANCHOR, such as 0.8@mcts:800."""
    score, at, anchor = text.partition("@")
    try:
        value = float(score)
    except ValueError:
        value = None
    if not at or not anchor.strip() or value is None or not 0 < value < 1:
        raise argparse.ArgumentTypeError(
            f"expected SCORE@ANCHOR, a score between 0 and 1 such as 0.8@mcts:800, not {text!r}"
        )
    return value, anchor.strip()


def add_parser(commands, count, even_count) -> argparse.ArgumentParser:
    """Registers `frontier` in the command line's subparsers; `count(low, high)` and
    `even_count` type integers."""
    frontier = commands.add_parser(
        "frontier",
        help="train network sizes to one FLOP budget, rate every checkpoint, fit the frontier",
    )
    frontier.add_argument(
        "--config", default=None, help="experiment file or name (default: connect_four)"
    )
    frontier.add_argument("--dir", required=True, help="the study's directory (resumes)")
    frontier.add_argument(
        "--sizes",
        default="8x1,16x2,32x3,64x4,128x5",
        help="network sizes CHANNELSxBLOCKS, comma separated (default 8x1,16x2,32x3,64x4,128x5)",
    )
    frontier.add_argument(
        "--budget", type=_budget, required=True, help="training FLOPs of each size, such as 1e15"
    )
    frontier.add_argument(
        "--per-decade", type=count(1, 10), default=2, help="checkpoints per tenfold (default 2)"
    )
    frontier.add_argument(
        "--decades", type=count(1, 6), default=2, help="tenfolds below the budget (default 2)"
    )
    frontier.add_argument(
        "--anchors",
        type=_words,
        default=["random", "mcts:50", "mcts:200"],
        help="fixed players every checkpoint plays (default random,mcts:50,mcts:200)",
    )
    frontier.add_argument(
        "--games", type=even_count, default=40, help="games per anchor (even; default 40)"
    )
    frontier.add_argument(
        "--simulations",
        type=_simulations,
        default=None,
        help="the checkpoints' search simulations, comma separated (default: eval's)",
    )
    frontier.add_argument(
        "--mistakes",
        type=count(0, 100_000),
        default=0,
        help="Connect Four, Hex to 5x5: positions on which moves worse than perfect play count",
    )
    frontier.add_argument(
        "--target",
        type=_target,
        action="append",
        help="SCORE@ANCHOR: predict the training FLOPs at which the frontier scores SCORE "
        "against ANCHOR, one of the anchors (repeatable)",
    )
    frontier.add_argument("--seed", type=count(0), default=0)
    frontier.add_argument(
        "--stage",
        choices=("all", "train", "rate", "report"),
        default="all",
        help="train the sizes, rate the checkpoints, or write the report (default: all)",
    )
    frontier.add_argument(
        "--only", default=None, help="train this size alone (machines sharing --dir split them)"
    )
    return frontier
