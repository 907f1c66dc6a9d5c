"""Mistakes against perfect play in Connect Four: the share of positions in which an agent's
move has a worse solved outcome (win, draw or loss) than the best move's.

    positions = make_positions(1000, seed=0)    # the same positions for every agent
    record = measure(agent, positions, 32, name="runs/c4")
    print(format_record(record))                # mistakes, share and its 95% interval

The positions come from games whose moves are random with a probability drawn per game
(`RANDOM_FRACTION`) and otherwise the best of a shallow solver search (`GAME_DEPTH` plies,
random among equals). Each game gives one position, at a ply drawn uniformly from those
before its end, so every phase of the game is represented; a position met again is
skipped. The solver (`engines.solver`, bitbully) then scores every move of each position.
An agent's move is its search's at S simulations, or the raw network's most likely legal
move at S = 0, all positions in one batched search. `azjax mistakes` is the command line.
"""

import dataclasses
import json
import random

import jax
import jax.numpy as jnp
import numpy as np

from azjax import games
from azjax.config import build
from azjax.games import Game, State
from azjax.matches.agent import Agent
from azjax.matches.engines.solver import Solver
from azjax.stats import wilson_interval
from azjax.types import Array, PRNGKey, UserError

RANDOM_FRACTION = (0.1, 0.5)  # the range of each game's share of random moves
GAME_DEPTH = 6  # plies the position games' solver searches (beyond: bitbully's rollout)


@dataclasses.dataclass(frozen=True)
class Positions:
    """Connect Four positions that have not ended, with every move solved.

    Attributes:
      moves: each position's columns played from the start.
      scores: [N, 7] int32 the solver's score of each column (0 where the column is full).
      legal: [N, 7] bool the columns with room.
      solver: the solver's version (bitbully's).
    """

    moves: list[tuple[int, ...]]
    scores: np.ndarray
    legal: np.ndarray
    solver: str

    def __len__(self) -> int:
        return len(self.moves)

    def outcomes(self, actions) -> np.ndarray:
        """[N] int the solved outcome of playing `actions` [N] (+1 win, 0 draw, -1 loss for
        the mover; -2 for a full column)."""
        rows, actions = np.arange(len(self)), np.asarray(actions)
        outcome = np.sign(self.scores[rows, actions])
        return np.where(self.legal[rows, actions], outcome, -2)

    def mistakes(self, actions) -> np.ndarray:
        """[N] bool whether `actions` [N] are worse than the best move's outcome."""
        best = np.where(self.legal, np.sign(self.scores), -2).max(axis=1)
        return self.outcomes(actions) < best

    def states(self, game: Game) -> State:
        """The positions as azjax states [N], stepped from the start by `game`'s rules."""
        moves = np.zeros((len(self), game.max_episode_length), np.int32)
        for row, played in enumerate(self.moves):
            moves[row, : len(played)] = played
        counts = np.array([len(played) for played in self.moves], np.int32)
        return jax.jit(_replay, static_argnums=0)(game, jnp.asarray(moves), jnp.asarray(counts))


def make_positions(count: int, *, seed: int, solver: Solver | None = None) -> Positions:
    """`count` distinct positions from varied play, each move solved; the same for a seed.

    Raises:
      UserError: `count` below 1.
      ModuleNotFoundError: bitbully is not installed (the message names the solver extra).
    """
    if count < 1:
        raise UserError(f"the positions must be at least 1, got {count}")
    solver = solver or Solver()
    player = Solver()  # its own: a shallow search's scores depend on what it searched before
    rng = random.Random(seed)
    found = {}  # the board's stones -> (moves, board)
    while len(found) < count:
        fraction = rng.uniform(*RANDOM_FRACTION)
        board, moves, boards = player.board(), [], []
        while not board.is_game_over():
            boards.append(board.copy())
            if rng.random() < fraction:
                move = rng.choice(board.legal_moves())
            else:
                scores = player.scores(board, max_depth=GAME_DEPTH)
                top = max(scores.values())
                move = rng.choice(sorted(c for c, s in scores.items() if s == top))
            board.play(move)
            moves.append(move)
        ply = rng.randrange(len(moves))
        stones = tuple(map(tuple, boards[ply].to_array()))
        found.setdefault(stones, (tuple(moves[:ply]), boards[ply]))
    scores = np.zeros((count, 7), np.int32)
    legal = np.zeros((count, 7), bool)
    for row, (_, board) in enumerate(found.values()):
        for column, score in solver.scores(board).items():
            scores[row, column], legal[row, column] = score, True
    moves = [played for played, _ in found.values()]
    return Positions(moves, scores, legal, f"bitbully {solver.version}")


def require_connect_four(game: Game, name: str) -> None:
    """Raises UserError unless `game` is Connect Four (the solved game)."""
    if games.family_of(game) != "connect_four":
        raise UserError(f"mistakes are measured in connect_four only; {name} plays {game.name}")


def agent_actions(agent: Agent, states: State, simulations: int, key: PRNGKey) -> np.ndarray:
    """The agent's moves [N] in `states` [N]: its search's at `simulations`, or the raw
    network's most likely legal move at 0."""
    if simulations == 0:
        logits, _ = agent.policy_value(states)
        return np.asarray(jnp.argmax(jnp.where(states.legal_action_mask, logits, -jnp.inf), -1))
    search = build.make_agent_searcher(
        agent.config, agent.game, agent.network, num_simulations=simulations
    )
    return np.asarray(jax.jit(search)(agent.variables, states, key).action)


def measure(agent: Agent, positions: Positions, simulations: int, *, name: str, seed: int = 0):
    """The agent's mistakes on `positions` at `simulations` (0: the raw network), as a record
    (a JSON line of `azjax mistakes --out`)."""
    require_connect_four(agent.game, name)
    states = positions.states(agent.game)
    key = jax.random.fold_in(jax.random.PRNGKey(seed), simulations)
    actions = agent_actions(agent, states, simulations, key)
    return record(
        positions, actions, name=name, simulations=simulations, seed=seed, iteration=agent.iteration
    )


def record(positions: Positions, actions, *, name: str, simulations: int, seed: int, **extra):
    """The record of a player's `actions` [N] on `positions`: its mistakes, their share and
    the share's 95% interval (`extra` fields first, such as the iteration)."""
    wrong = positions.mistakes(actions)
    rate = float(wrong.mean())
    low, high = wilson_interval(rate, len(wrong))
    return {
        "agent": name,
        **extra,
        "simulations": simulations,
        "positions": len(wrong),
        "seed": seed,
        "mistakes": int(wrong.sum()),
        "rate": rate,
        "rate_low": low,
        "rate_high": high,
        "solver": positions.solver,
    }


def format_record(record: dict) -> str:
    """A record as one line: the agent, its search, mistakes and their share with its 95%
    interval."""
    count = record["simulations"]
    search = f"{count} simulations" if count else "the raw network"
    return (
        f"{record['agent']} (iteration {record['iteration']}), {search}: "
        f"{record['mistakes']:,} mistakes in {record['positions']:,} positions, "
        f"{record['rate']:.1%} (95% CI {record['rate_low']:.1%}-{record['rate_high']:.1%})"
    )


def append_records(path: str, records: list[dict]) -> None:
    """Appends each record to the file `path` as a JSON line (creating it; none: a check
    that it can be written).

    Raises:
      UserError: the file cannot be written (one line).
    """
    try:
        with open(path, "a") as file:
            file.writelines(json.dumps(record) + "\n" for record in records)
    except OSError as error:
        raise UserError(f"cannot write {path}: {error.strerror or error}") from None


def _replay(game: Game, moves: Array, counts: Array) -> State:
    """States [N] after the first counts[i] of moves[i] (moves [N, L], counts [N])."""
    states = jax.vmap(game.init)(jax.random.split(jax.random.PRNGKey(0), moves.shape[0]))

    def ply(states, index):
        stepped = jax.vmap(game.step)(states, moves[:, index])
        played = index < counts

        def keep(new, old):
            return jnp.where(played.reshape(played.shape + (1,) * (new.ndim - 1)), new, old)

        return jax.tree.map(keep, stepped, states), None

    return jax.lax.scan(ply, states, jnp.arange(moves.shape[1]))[0]
