"""`azjax mistakes`'s arguments, apart from the measurement (`matches/mistakes.py`) so that
the command line's parser loads no jax."""

import argparse

__all__ = ["add_parser"]


def _simulation_counts(text: str) -> list[int]:
    """An argparse type: comma-separated simulation counts, each 0 (the raw network) to
    1000000."""
    counts = []
    for word in text.split(","):
        word = word.strip()
        if not (word.isascii() and word.isdecimal()) or not 0 <= int(word) <= 1_000_000:
            raise argparse.ArgumentTypeError(
                f"expected simulation counts from 0 to 1000000 separated by commas, got {text!r}"
            )
        counts.append(int(word))
    return list(dict.fromkeys(counts))


def add_parser(commands, count, agent_arguments) -> argparse.ArgumentParser:
    """Registers `mistakes` in the command line's subparsers; `count(low, high)` types
    integers and `agent_arguments(command, help)` adds `--workdir RUN` or `--agent NAME`."""
    mistakes = commands.add_parser(
        "mistakes",
        help="a Connect Four (the solver extra) or Hex (to 5x5) agent's share of moves worse "
        "than perfect play",
    )
    agent_arguments(mistakes, "run directory or checkpoint path")
    mistakes.add_argument("--step", type=count(0), default=None, help="the checkpoint's iteration")
    mistakes.add_argument(
        "--simulations",
        type=_simulation_counts,
        default=[0, 32, 200],
        help="search simulations, comma separated; 0: the raw network (default 0,32,200)",
    )
    mistakes.add_argument(
        "--positions",
        type=count(1, 100_000),
        default=1000,
        help="positions measured, searched in one batch (default 1000)",
    )
    mistakes.add_argument("--seed", type=count(0), default=0, help="picks the positions")
    mistakes.add_argument("--out", default=None, help="append a JSON line per measurement")
    return mistakes
