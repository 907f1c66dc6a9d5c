"""Outside engines as players: GNU Go, KataGo over GTP; Fairy-Stockfish, Pikafish over UCI;
and the Connect Four solver (`solver`, bitbully in this process).

    from azjax.matches import engines
    spec = engines.parse_engine_spec('gtp:"gnugo --mode gtp --level 5"')
    with engines.open_player(spec, timeout=60) as player:   # a `HostPlayer`
        player.start(game, state)

`base` holds the guarded subprocess (`EngineProcess`), the player interface (`HostPlayer`)
and the specs; `gtp_client` and `uci_client` the players of each protocol, `solver` the
solver's; `hex_solver` is azjax's exact solver of small Hex boards (for `mistakes`, not yet a
player). azjax's own engines, which GUIs and other programs talk to, are in
`azjax.apps.protocols`.
"""

import dataclasses

from azjax.config.opponents import EngineSpec, parse_engine_spec
from azjax.matches.engines.base import (
    DEFAULT_TIMEOUT,
    RESIGN,
    EngineError,
    EngineProcess,
    HostPlayer,
)
from azjax.matches.engines.gtp_client import GtpPlayer
from azjax.matches.engines.solver import SolverPlayer
from azjax.matches.engines.uci_client import UciPlayer

__all__ = [
    "DEFAULT_TIMEOUT",
    "RESIGN",
    "EngineError",
    "EngineProcess",
    "EngineSpec",
    "GtpPlayer",
    "HostPlayer",
    "SolverPlayer",
    "UciPlayer",
    "open_player",
    "parse_engine_spec",
]


def open_player(spec: EngineSpec | str, *, timeout: float | None = None) -> HostPlayer:
    """A new player for the engine of a spec (its program starts with the first game and
    stops at `close`).

    Args:
      spec: an `EngineSpec`, or its text (`parse_engine_spec`).
      timeout: seconds per answer where the spec sets no `timeout` (default: the player's).

    Raises:
      UserError: a bad spec.
    """
    if isinstance(spec, str):
        spec = parse_engine_spec(spec)
    if timeout is not None:
        spec = dataclasses.replace(spec, options={"timeout": timeout, **spec.options})
    player = {"gtp": GtpPlayer, "uci": UciPlayer, "solver": SolverPlayer}[spec.protocol]
    return player(spec.command, **spec.options)
