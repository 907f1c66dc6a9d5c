"""The searching half of the UCI engine (`uci.py`): `go` read, budgets, the search, its numbers.

Search budgets. `go` searches synchronously; `stop` and `isready` arriving meanwhile are
read afterwards. The budget in simulations is the smallest of those its limits give:
`nodes N` -> N; `depth D` -> 2**D; `movetime MS` -> MS / 1000 x the simulations per
second measured on the last search; a clock (`wtime`/`btime` and `winc`/`binc`, by the side
to move, `movestogo` default 30) -> min(time / 2, time / movestogo + increment) seconds,
converted the same way. Before any measurement a time limit gives the default budget
(`--simulations`, the option Simulations). `go` with no limit, `go infinite` and
`go mate N` use the default budget. The budget is then rounded down to a power of two (or
the default) within [min_simulations, max_simulations]: each budget is compiled once, on
first use.

The info line: `info depth D nodes N time MS nps R score cp CP pv M1 M2 ...` then `bestmove M
[ponder M2]`, or `bestmove (none)` with no legal move. N is the simulations searched; the
PV follows the chosen move, then the most visited child, while the tree goes (D = its
length). CP is Leela Chess Zero's mapping of the searched value v in [-1, 1] (for the side
to move): cp = 111.714640912 * tan(1.5620688421 * v), about 100 at v = 0.5, 12,800 at 1.
"""

import dataclasses
import math
import re
from collections.abc import Callable

import jax
import jax.numpy as jnp

MAX_SIMULATIONS = 4096  # the largest budget: mctx's tree takes about 50 KB per simulation
MOVES_TO_GO = 30  # moves left in the time control when the GUI does not say
PV_LENGTH = 16  # longest principal variation reported
GO_NUMBERS = ("wtime", "btime", "winc", "binc", "movestogo", "depth", "nodes", "mate", "movetime")
GO_WORDS = (*GO_NUMBERS, "searchmoves", "ponder", "infinite")  # what `go` may be followed by
INTEGER = re.compile(r"[+-]?[0-9]{1,18}")  # ASCII digits only (str.isdigit takes "²")


def parse_go(args: list[str], output: list[str]) -> tuple[dict, set, list[str]]:
    """`go`'s numeric limits, flags (infinite, ponder) and searchmoves; complaints about
    malformed values go to `output`."""
    values, flags, searchmoves, index = {}, set(), [], 0
    while index < len(args):
        word = args[index]
        index += 1
        if word in ("infinite", "ponder"):
            flags.add(word)
        elif word == "searchmoves":
            while index < len(args) and args[index] not in GO_WORDS:
                searchmoves.append(args[index])
                index += 1
        elif word in GO_NUMBERS:
            if index < len(args) and INTEGER.fullmatch(args[index]):
                values[word] = int(args[index])
                index += 1
            else:
                output.append(f"info string go {word} needs an integer")
    return values, flags, searchmoves


def centipawns(value: float) -> int:
    """Centipawns of a searched value in [-1, 1] (Leela Chess Zero's mapping)."""
    value = min(max(float(value), -1.0), 1.0)
    return round(111.714640912 * math.tan(1.5620688421 * value))


def principal_variation(tree, action: jax.Array, length: int) -> jax.Array:
    """[B, length] int32: `action` [B], then the most visited child's action at each node
    below, -1 where the tree ends (mctx `Tree` [B, ...])."""

    def one(children_index, children_visits, first):  # [N, A], [N, A], []
        def follow(carry, _):
            node, move = carry
            valid = (node >= 0) & (move >= 0)
            child = jnp.where(valid, children_index[jnp.maximum(node, 0), jnp.maximum(move, 0)], -1)
            visits = children_visits[jnp.maximum(child, 0)]
            after = jnp.where((child >= 0) & (jnp.max(visits) > 0), jnp.argmax(visits), -1)
            return (child, after.astype(jnp.int32)), jnp.where(valid, move, -1)

        _, moves = jax.lax.scan(follow, (jnp.int32(0), first), None, length=length)
        return moves

    return jax.vmap(one)(tree.children_index, tree.children_visits, action)


def budget(
    values: dict, flags: set, player: int, *, default: int, rate: float | None, low: int, high: int
) -> int:
    """Simulations for a `go` with these numbers (`values`) and words (`flags`), for
    `player` (0 Red) to move; `rate` is the measured simulations per second (or None)."""
    limits = []
    if "infinite" not in flags:
        if "nodes" in values:
            limits.append(values["nodes"])
        if "depth" in values:
            limits.append(2 ** min(max(values["depth"], 0), 40))
        seconds = None
        own, increment = ("wtime", "winc") if player == 0 else ("btime", "binc")
        if "movetime" in values:
            seconds = values["movetime"] / 1000
        elif own in values:
            clock, moves_to_go = values[own], values.get("movestogo", 0)
            moves_to_go = moves_to_go if moves_to_go > 0 else MOVES_TO_GO
            seconds = min(clock / 2, clock / moves_to_go + values.get(increment, 0)) / 1000
        if seconds is not None:
            limits.append(default if rate is None else int(max(seconds, 0) * rate))
    wanted = min(limits) if limits else default
    wanted = min(max(wanted, low), high)
    rounded = max(1 << (wanted.bit_length() - 1), low)
    return max(rounded, default) if default <= wanted else rounded


class PvSearch:
    """The jitted search of one budget: `(variables, states [1], key) -> (action [1], value
    [1], principal variation [1, PV_LENGTH])`. It is the agent's search
    (`AgentSettings.searcher`) keeping its tree for the PV. With the run's
    `search.tree_reuse` it also keeps the tree between calls, of this budget or another:
    a position the last tree holds (after the engine's move and the reply, or the same
    position searched again) starts from its subtree (`Search.reroot`), and `carried` is
    the number of visits it brought to the root. `on_trace` is called each time the search
    is traced (compiled)."""

    def __init__(self, agent, num_simulations: int, *, on_trace: Callable[[], None]):
        search = agent.settings.agent.searcher(
            agent.game, agent.network, num_simulations=num_simulations
        )
        self.search = dataclasses.replace(search, return_tree=True)
        self.reuse = self.search.tree_reuse
        self.carried = 0

        def act(variables, states, key, tree):
            on_trace()
            output = self.search(variables, states, key, None, tree)
            pv = principal_variation(output.tree, output.action, PV_LENGTH)
            return output.action, output.value, pv, output.tree

        self._act = jax.jit(act)
        self._empty = jax.jit(self.search.empty_tree) if self.reuse else None
        self._reroot = jax.jit(self.search.reroot) if self.reuse else None

    def __call__(self, variables, states, key, held=None):
        """Searches `states` from the subtree of `held` (the last search's tree) holding
        them: (action, value, pv, tree) with the tree to hand to the next call."""
        tree = None
        if self.reuse:
            tree = self._empty(states) if held is None else self._reroot(held, states)
            self.carried = int(tree.node_visits[0, 0])
        return self._act(variables, states, key, tree)
