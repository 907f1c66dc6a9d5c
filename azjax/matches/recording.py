"""Game records (`azjax.games.records.Record`) of the games azjax plays: host games with
outside engines (`Recorder`, a watcher of `arena.play_host_game`), batched matches
(`match_records`) and self-play with its search policies (`selfplay_match`).

    recorder = recording.Recorder()
    arena.play_host_game(game, first, second, opening_plies=4, key=key, watchers=[recorder])
    start, actions = recorder.games[-1].start, recorder.games[-1].actions

A record's result is player 0's reward (1 won, -1 lost, 0 drawn). Go records keep, as
`info["result"]`, the game's Tromp-Taylor score of its final board ("B+3.5", what SGF's RE
shows) or "B+R" / "W+R" for a game lost by resignation or forfeit.
"""

import dataclasses
import datetime
import threading
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from azjax import games
from azjax.games import Game, State, records
from azjax.games.records.sgf import result_string
from azjax.matches.agent import Agent, selfplay_player
from azjax.matches.arena import MatchResult
from azjax.types import UserError

FORMATS = ("sgf", "pgn", "jsonl")
_FAMILY_FORMATS = {"go": "sgf", "xiangqi": "pgn"}  # the format a family's records default to


class Stopped(Exception):
    """A recorded game stopped on request (`Recorder`'s `stop`): its record is dropped."""


@dataclasses.dataclass
class WatchedGame:
    """One game a `Recorder` watched: its start, its moves, and the last move's position."""

    start: State
    actions: list[int] = dataclasses.field(default_factory=list)
    last: tuple[State, int] | None = None  # the position of the last move, and the move

    def final(self, step) -> State:
        """The final position (`step`: the game's step, jitted)."""
        if self.last is None:
            return self.start
        return jax.device_get(step(self.last[0], jnp.int32(self.last[1])))


class Recorder:
    """Watches host games (`arena.play_host_game(watchers=[recorder])`) and keeps each one's
    start and moves in `games`. Once `stop` is set, the game in play stops at its next move
    (`Stopped` is raised out of `play_host_game`)."""

    def __init__(self, stop: threading.Event | None = None):
        self.stop = stop
        self.games: list[WatchedGame] = []

    def start(self, game: Game, state: State) -> None:
        del game
        self.games.append(WatchedGame(jax.device_get(state)))

    def observe(self, state: State, action: int) -> None:
        if self.stop is not None and self.stop.is_set():
            raise Stopped
        self.games[-1].actions.append(int(action))
        self.games[-1].last = (state, int(action))


def default_format(game: Game) -> str:
    """The record format of `game`: sgf for Go, pgn for Xiangqi, jsonl for the others."""
    return _FAMILY_FORMATS.get(games.family_of(game), "jsonl")


def check_format(game: Game, fmt: str | None) -> str:
    """`fmt` (default: `default_format`), checked to hold `game`'s records.

    Raises:
      UserError: an unknown format, or SGF or PGN for a game they do not hold (one line).
    """
    fmt = fmt or default_format(game)
    if fmt not in FORMATS:
        raise UserError(f"unknown record format {fmt!r}; use {', '.join(FORMATS)}")
    holder = {value: family for family, value in _FAMILY_FORMATS.items()}.get(fmt)
    if holder is not None and games.family_of(game) != holder:
        raise UserError(f"{fmt} records hold {holder} games, not {game.name}: use jsonl")
    return fmt


def make_record(
    game: Game,
    start: State,
    actions: Sequence[int],
    result: float,
    *,
    final: State | None = None,
    source: str = "",
    players: tuple[str, str] = ("", ""),
    policies: np.ndarray | None = None,
    info: dict | None = None,
) -> records.Record:
    """A record; `info` gets today's date and, in Go, the result as SGF writes it: the
    Tromp-Taylor score of `final` where the game ended by the rules, else "B+R" or "W+R"."""
    info = {"date": datetime.date.today().isoformat(), **(info or {})}
    if games.family_of(game) == "go" and final is not None:
        if bool(final.terminated):
            info["result"] = result_string(float(_score(game)(final)))
        elif result:
            info["result"] = "B+R" if result > 0 else "W+R"
    return records.Record(
        source=source,
        start=jax.device_get(start),
        actions=tuple(int(a) for a in actions),
        result=float(result),
        policies=policies,
        players=players,
        info=info,
    )


_SCORES: dict = {}


def _score(game: Game):
    """Go's `score`, jitted once per game."""
    if game not in _SCORES:
        _SCORES[game] = jax.jit(game.score)
    return _SCORES[game]


def match_records(
    game: Game,
    result: MatchResult,
    name_a: str,
    name_b: str,
    *,
    policies=None,
    info: dict | None = None,
) -> list[records.Record]:
    """The records of a batched match (`arena.make_match`, `selfplay_match`), A named
    `name_a`; `policies` [T, G, A]: the searched policy of every move, or None."""
    result = jax.device_get(result)
    policies = None if policies is None else np.asarray(jax.device_get(policies), np.float32)
    starts = result.start_states
    if starts is None:  # a result made before matches kept their starts
        start = jax.device_get(game.init(jax.random.PRNGKey(0)))
        starts = jax.tree.map(lambda x: np.stack([x] * len(result.lengths)), start)
    made = []
    for index, length in enumerate(result.lengths.tolist()):
        a_first = bool(result.a_first[index])
        outcome = float(result.outcomes[index]) * (1 if a_first else -1)  # player 0's
        made.append(
            make_record(
                game,
                jax.tree.map(lambda x, i=index: x[i], starts),
                result.actions[:length, index].tolist(),
                outcome,
                final=jax.tree.map(lambda x, i=index: x[i], result.final_states),
                source=f"game {index}",
                players=(name_a, name_b) if a_first else (name_b, name_a),
                policies=None if policies is None else policies[:length, index],
                info=info,
            )
        )
    return made


def selfplay_match(agent: Agent, *, num_games: int, key) -> tuple[MatchResult, jax.Array]:
    """`num_games` self-play games of `agent` as in training (`agent.selfplay_player`), in
    lockstep: (the match, A first in every game; policies [T, G, A] float32, the searched
    policy of every move)."""
    game = agent.game
    play = selfplay_player(agent, with_policy=True)
    plies = game.max_episode_length

    def match(params, key):
        init_key, play_key = jax.random.split(key)
        starts = jax.vmap(game.init)(jax.random.split(init_key, num_games))
        keys = jax.random.split(play_key, plies)

        def unfinished(loop):
            return (loop[0] < plies) & ~jnp.all(loop[1].terminated)

        def next_ply(loop):
            index, states, returns, actions, policies = loop
            action, weights = play(params, states, keys[index])
            states = jax.vmap(game.step)(states, action)
            returns = returns + states.rewards
            return (
                index + 1,
                states,
                returns,
                actions.at[index].set(action),
                policies.at[index].set(weights.astype(jnp.float32)),
            )

        loop = (
            jnp.int32(0),
            starts,
            jnp.zeros((num_games, 2), jnp.float32),
            jnp.zeros((plies, num_games), jnp.int32),
            jnp.zeros((plies, num_games, game.num_actions), jnp.float32),
        )
        _, states, returns, actions, policies = jax.lax.while_loop(unfinished, next_ply, loop)
        result = MatchResult(
            outcomes=jnp.sign(returns[:, 0]),
            a_first=jnp.ones(num_games, bool),
            lengths=states.step_count,
            actions=actions,
            final_states=states,
            start_states=starts,
        )
        return result, policies

    return jax.jit(match)(agent.variables, key)


def write_records(
    directory: str | Path, game: Game, made: Sequence[records.Record], prefix: str, fmt: str
) -> list[Path]:
    """Writes records to `directory` (`records.write`): JSONL appended to `prefix.jsonl`, SGF
    and PGN one file a game (`prefix-0000.sgf`, ...: replacing those of an earlier call).
    Returns the paths written.

    Raises:
      RunError: the file system refuses a write (one line).
    """
    directory = Path(directory)
    if fmt == "jsonl":
        return list({records.write(directory / f"{prefix}.jsonl", game, r): 0 for r in made})
    return [
        records.write(directory / f"{prefix}-{index:04d}.{fmt}", game, record)
        for index, record in enumerate(made)
    ]
