"""`azjax records`'s arguments, apart from the games (`matches/engine_records.py`) so that
the command line's parser loads no jax; and `--records DIR` of `selfplay` and `evaluate`."""

import argparse

__all__ = ["add_parser", "add_records_arguments"]

FORMATS = ("sgf", "pgn", "jsonl")  # `recording.FORMATS`, without importing jax


def add_parser(commands, count) -> argparse.ArgumentParser:
    """Registers `records` in the command line's subparsers; `count(low, high)` types
    integers."""
    records = commands.add_parser(
        "records",
        help="outside engines (GNU Go, Fairy-Stockfish) play each other or themselves; "
        "writes their game records (resumes)",
    )
    records.add_argument("--game", required=True, help="the game, such as go_9x9 or xiangqi")
    records.add_argument(
        "--players",
        nargs="+",
        required=True,
        metavar="SPEC",
        help='one engine spec (it plays itself) or two (colours alternate): gtp:"COMMAND", '
        'uci:"COMMAND" depth=D skill=S, solver',
    )
    records.add_argument("--games", type=count(1), required=True, help="games when done")
    records.add_argument(
        "--out", required=True, help="folder of the records, one file a game (resumes)"
    )
    records.add_argument(
        "--jobs", type=count(1, 256), default=1, help="games played at once (default 1)"
    )
    records.add_argument(
        "--opening-plies",
        type=count(0),
        default=4,
        help="random legal moves opening each game, seeded by --seed and the game's number "
        "(default 4)",
    )
    records.add_argument("--seed", type=count(0), default=0)
    records.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="sgf (go), pgn (xiangqi) or jsonl (any game); default: the game's",
    )
    records.add_argument(
        "--timeout",
        type=count(1),
        default=None,
        help="seconds an engine may take per answer (default: its spec's timeout=, else 30)",
    )
    return records


def add_records_arguments(command, default: str) -> None:
    """`--records DIR` and `--records-format` of `selfplay` and `evaluate`."""
    command.add_argument(
        "--records",
        default=None,
        metavar="DIR",
        help="write the games as game records to this folder (any game)",
    )
    command.add_argument(
        "--records-format",
        choices=FORMATS,
        default=None,
        help=f"sgf (go), pgn (xiangqi) or jsonl (any game, with search policies); default: "
        f"{default}",
    )
