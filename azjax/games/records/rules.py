"""The game's side of reading and writing records, built once per game and cached: the start
position, the name of every action for each mover and back (the game's own notation), FEN
starts where the notation reads them, the compiled step, and why a move is not legal.

Names are built for each mover from the start position with its player set: a notation may
name an action by the mover (Xiangqi's labels are seen from the mover), never by more of the
position, as `Notation.action_to_string` names actions without a state.
"""

import contextlib
import functools

import jax
import numpy as np

from azjax.games import notation
from azjax.games.base import Game, State
from azjax.games.conformance_rules import compiled
from azjax.games.records.base import MESSAGE_CHARS, RecordError, shorten
from azjax.types import UserError


def on_host():
    """A context that runs JAX on the host's CPU: records are replayed there, beside their
    files, whatever accelerator the process also trains on (the default device where JAX
    has no CPU backend)."""
    try:
        return jax.default_device(jax.devices("cpu")[0])
    except RuntimeError:
        return contextlib.nullcontext()


@functools.lru_cache(maxsize=16)
def notation_of(game: Game) -> notation.Notation:
    """The game's notation (`notation.of`), made once."""
    return notation.of(game)


@functools.lru_cache(maxsize=16)
def initial(game: Game) -> State:
    """The game's start position (`game.init`), as host arrays."""
    with on_host():
        return jax.device_get(jax.jit(game.init)(jax.random.PRNGKey(0)))


@functools.lru_cache(maxsize=16)
def _names(game: Game) -> tuple[tuple[dict[str, int], ...], tuple[tuple[str, ...], ...]]:
    """Per mover (0, 1): lowercase name -> action, and action -> name."""
    write = notation_of(game).action_to_string
    to_name = tuple(
        tuple(
            write(action, initial(game).replace(current_player=np.int32(player)))
            for action in range(game.num_actions)
        )
        for player in (0, 1)
    )
    to_action = tuple({_key(n): a for a, n in enumerate(names)} for names in to_name)
    return to_action, to_name


def _key(name: str) -> str:
    """A name as looked up: stripped, lowercase where ASCII ("\u212a".lower() is "k")."""
    name = name.strip()
    return name.lower() if name.isascii() else name


def action_of(game: Game, name: str, player: int) -> int | None:
    """The action `name` (ASCII case-insensitive) names when `player` moves; None: none."""
    return _names(game)[0][player].get(_key(name))


def name_of(game: Game, action: int, player: int) -> str:
    """The game's name of `action` when `player` moves ("E5", "h2e2")."""
    return _names(game)[1][player][action]


def from_fen(game: Game, fen: str) -> State:
    """The start position a FEN describes, where the game's notation reads FEN.

    Raises:
      RecordError: the notation reads no FEN, or this FEN is bad (the reason, one line).
    """
    if not hasattr(notation_of(game), "from_fen"):
        raise RecordError(f"{game.name} has no FEN positions to start from")
    return _from_fen(game, fen)


@functools.lru_cache(maxsize=1024)
def _from_fen(game: Game, fen: str) -> State:
    try:
        with on_host():
            return jax.device_get(notation_of(game).from_fen(fen))
    except UserError as error:
        raise RecordError(shorten(str(error), MESSAGE_CHARS)) from None


def start_text(game: Game, start: State) -> str | None:
    """The FEN of a start that is not the game's own, None for the game's own start.

    Raises:
      RecordError: a start the game's notation cannot write (no FEN).
    """
    leaves = zip(jax.tree.leaves(start), jax.tree.leaves(initial(game)), strict=True)
    if all(np.array_equal(ours, initial_leaf) for ours, initial_leaf in leaves):
        return None
    if not hasattr(notation_of(game), "to_fen"):
        raise RecordError(f"{game.name} records start from the initial position only")
    return notation_of(game).to_fen(start)


@functools.lru_cache(maxsize=16)
def step(game: Game):
    """`game.step`, compiled (`conformance_rules.compiled`)."""
    return compiled(game)(game.step)


def state_at(game: Game, start: State, actions: tuple[int, ...]) -> State:
    """The position after `actions` from `start` (host arrays), one compiled step a move."""
    state = start
    with on_host():
        for action in actions:
            state = step(game)(state, np.int32(action))
        return jax.device_get(state)


def why_illegal(game: Game, state: State, action: int) -> str:
    """Why `action` is not legal in `state` (the notation's reason), at most a line."""
    return shorten(notation_of(game)._why_illegal(state, action), MESSAGE_CHARS)
