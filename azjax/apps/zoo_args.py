"""`azjax zoo`'s arguments, apart from the zoo (`matches/zoo/`) so that the command line's
parser loads no jax."""

__all__ = ["add_parser"]


def add_parser(commands, count, even_count) -> None:
    zoo = commands.add_parser(
        "zoo", help="the trained agents shipped with azjax (play one: --agent NAME)"
    )
    zoo.add_argument("--names", action="store_true", help="the names alone, one a line")
    zoo.add_argument("--export", default=None, metavar="RUN", help="add RUN's newest checkpoint")
    zoo.add_argument("--name", default=None, help="--export: the agent's name")
    zoo.add_argument(
        "--rate", default=None, metavar="NAME", help="rate the shipped agent NAME (--opponents)"
    )
    zoo.add_argument(
        "--command", dest="train_command", default="", help="--export: the command that trained RUN"
    )
    zoo.add_argument(
        "--from-tournament",
        default=None,
        metavar="DIR",
        help="--rate: ratings from the games NAME played in the tournament DIR, not played now",
    )
    zoo.add_argument(
        "--opponents",
        default=None,
        help='--export, --rate: fixed opponents and engines (gtp:"COMMAND"), comma separated '
        "(default: random,mcts:200; with --from-tournament: every opponent NAME met there)",
    )
    zoo.add_argument(
        "--games",
        type=even_count,
        default=None,
        help="--export, --rate: games per opponent (default 200)",
    )
    zoo.add_argument(
        "--engine-games",
        type=even_count,
        default=None,
        help="--export, --rate: games per outside engine, one at a time (default: --games)",
    )
    zoo.add_argument("--notes", default="", help="--export: a note shown with the agent")
    zoo.add_argument("--seed", type=count(0), default=0)
