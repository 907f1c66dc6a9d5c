"""Mistakes against perfect play in Connect Four and small Hex: the share of positions in
which an agent's move has a worse solved outcome (win, draw or loss) than the best move's.

    positions = make_positions(1000, seed=0)    # the same positions for every agent
    record = measure(agent, positions, 32, name="runs/c4")
    print(format_record(record))                # mistakes, share and its 95% interval
    make_positions(1000, seed=0, game=games.make("hex_5x5"))   # Hex, 2x2 to 5x5

The positions come from games whose moves are random with a probability drawn per game
(`RANDOM_FRACTION`) and otherwise the best of a shallow solver search (`GAME_DEPTH` plies,
random among equals). Each game gives one position, at a ply drawn uniformly from those
before its end, so every phase of the game is represented; a position met again is
skipped. The solver (`engines.solver`, bitbully) then scores every move of each position.
An agent's move is its search's at S simulations, or the raw network's most likely legal
move at S = 0, all positions in one batched search. `azjax mistakes` is the command line.

Hex (`engines.hex_solver`, exact) plays its position games the same way with the solver's
best move (the winning move nearest the centre) for the shallow search, and every move is
a win or a loss. On 5x5 the first `HEX_FIRST_PLY` plies are random and give no positions:
each of those positions takes the solver up to a minute (a later one, seconds).
"""

import dataclasses
import json
import random

import jax
import jax.numpy as jnp
import numpy as np

from azjax import games
from azjax.games import Game, State
from azjax.matches.agent import Agent
from azjax.matches.engines.hex_solver import MAX_SIZE as HEX_MAX_SIZE
from azjax.matches.engines.hex_solver import HexSolver
from azjax.matches.engines.solver import Solver
from azjax.stats import wilson_interval
from azjax.types import Array, PRNGKey, UserError

RANDOM_FRACTION = (0.1, 0.5)  # the range of each game's share of random moves
GAME_DEPTH = 6  # plies the position games' solver searches (beyond: bitbully's rollout)
HEX_FIRST_PLY = {5: 3}  # Hex board size -> the first ply that gives positions (default 0)
PHASE_PLIES = 8  # a record's mistakes are counted per this many plies played (`by_phase`)
HEX_MAX_MISSES = 1000  # Hex position games in a row without a new position before giving up


@dataclasses.dataclass(frozen=True)
class Positions:
    """Positions that have not ended, with every move solved.

    Attributes:
      moves: each position's actions played from the start.
      scores: [N, A] int32 the solver's score of each action (0 where it is illegal): its
        sign is the outcome for the mover.
      legal: [N, A] bool the legal actions.
      solver: the solver and its version.
    """

    moves: list[tuple[int, ...]]
    scores: np.ndarray
    legal: np.ndarray
    solver: str

    def __len__(self) -> int:
        return len(self.moves)

    def outcomes(self, actions) -> np.ndarray:
        """[N] int the solved outcome of playing `actions` [N] (+1 win, 0 draw, -1 loss for
        the mover; -2 for an illegal action, a full column)."""
        rows, actions = np.arange(len(self)), np.asarray(actions)
        outcome = np.sign(self.scores[rows, actions])
        return np.where(self.legal[rows, actions], outcome, -2)

    def best(self) -> np.ndarray:
        """[N] int the best move's solved outcome for the mover (+1, 0 or -1)."""
        return np.where(self.legal, np.sign(self.scores), -2).max(axis=1)

    def mistakes(self, actions) -> np.ndarray:
        """[N] bool whether `actions` [N] are worse than the best move's outcome."""
        return self.outcomes(actions) < self.best()

    def states(self, game: Game) -> State:
        """The positions as azjax states [N], stepped from the start by `game`'s rules."""
        moves = np.zeros((len(self), game.max_episode_length), np.int32)
        for row, played in enumerate(self.moves):
            moves[row, : len(played)] = played
        counts = np.array([len(played) for played in self.moves], np.int32)
        return jax.jit(_replay, static_argnums=0)(game, jnp.asarray(moves), jnp.asarray(counts))


def make_positions(
    count: int, *, seed: int, solver: Solver | None = None, game: Game | None = None
) -> Positions:
    """`count` distinct positions of `game` (default Connect Four; or Hex up to 5x5) from
    varied play, each move solved; the same for a seed.

    Raises:
      UserError: `count` below 1, a game no solver solves, or a small Hex board with
        fewer distinct positions than `count`.
      ModuleNotFoundError: Connect Four without bitbully (the message names the solver extra).
    """
    if count < 1:
        raise UserError(f"the positions must be at least 1, got {count}")
    if game is not None and games.family_of(game) != "connect_four":
        require_solved(game, game.name)
        return _hex_positions(game, count, seed=seed)
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


def _hex_positions(game: Game, count: int, *, seed: int) -> Positions:
    """`make_positions` for Hex: the position games' best moves are the exact solver's."""
    solver, step, rng = HexSolver(game.size), jax.jit(game.step), random.Random(seed)
    first_ply = HEX_FIRST_PLY.get(game.size, 0)
    start = game.init(jax.random.PRNGKey(0))
    found = {}  # the board (and whose move) -> (moves, state)
    misses = 0  # games in a row that gave no new position (small boards run out)
    while len(found) < count:
        if misses >= HEX_MAX_MISSES:
            raise UserError(
                f"{game!r} gave {len(found)} distinct positions in its position games, "
                f"fewer than the {count} asked for; ask for fewer"
            )
        fraction = rng.uniform(*RANDOM_FRACTION)
        state, moves, states = start, [], []
        while not bool(state.terminated):
            states.append(state)
            if len(moves) < first_ply or rng.random() < fraction:
                move = rng.choice(np.flatnonzero(np.asarray(state.legal_action_mask)).tolist())
            else:
                move = solver.best(state)
            state = step(state, jnp.int32(move))
            moves.append(move)
        ply = rng.randrange(first_ply, len(moves))
        seen = (bytes(np.asarray(states[ply].board)), int(states[ply].current_player))
        misses = 0 if seen not in found else misses + 1
        found.setdefault(seen, (tuple(moves[:ply]), states[ply]))
    scores = np.zeros((count, game.num_actions), np.int32)
    for row, (_, state) in enumerate(found.values()):
        for action, outcome in solver.outcomes(state).items():
            scores[row, action] = outcome
    legal = np.stack([np.asarray(state.legal_action_mask) for _, state in found.values()])
    moves = [played for played, _ in found.values()]
    return Positions(moves, scores, legal, f"azjax hex_solver {game.size}x{game.size}")


def require_solved(game: Game, name: str) -> None:
    """Raises UserError unless a solver plays `game` perfectly: Connect Four (bitbully) or
    Hex up to 5x5 (`engines.hex_solver`)."""
    family = games.family_of(game)
    if family == "connect_four" or (family == "hex" and game.size <= HEX_MAX_SIZE):
        return
    raise UserError(
        f"mistakes are measured in connect_four and in hex up to {HEX_MAX_SIZE}x{HEX_MAX_SIZE}"
        f" only; {name} plays {game.name} ({game!r})"
    )


def agent_actions(agent: Agent, states: State, simulations: int, key: PRNGKey) -> np.ndarray:
    """The agent's moves [N] in `states` [N]: its search's at `simulations`, or the raw
    network's most likely legal move at 0."""
    if simulations == 0:
        logits, _ = agent.policy_value(states)
        return np.asarray(jnp.argmax(jnp.where(states.legal_action_mask, logits, -jnp.inf), -1))
    search = agent.settings.agent.searcher(agent.game, agent.network, num_simulations=simulations)
    return np.asarray(jax.jit(search)(agent.variables, states, key).action)


def measure(agent: Agent, positions: Positions, simulations: int, *, name: str, seed: int = 0):
    """The agent's mistakes on `positions` at `simulations` (0: the raw network), as a record
    (a JSON line of `azjax mistakes --out`)."""
    require_solved(agent.game, name)
    states = positions.states(agent.game)
    key = jax.random.fold_in(jax.random.PRNGKey(seed), simulations)
    actions = agent_actions(agent, states, simulations, key)
    return record(
        positions, actions, name=name, simulations=simulations, seed=seed, iteration=agent.iteration
    )


def record(positions: Positions, actions, *, name: str, simulations: int, seed: int, **extra):
    """The record of a player's `actions` [N] on `positions`: its mistakes, their share and
    the share's 95% interval (`extra` fields first, such as the iteration), and where they
    are: `by_phase`, per `PHASE_PLIES` plies played, and `by_best`, per the best move's
    solved outcome for the mover (a lost position admits no mistake)."""
    wrong = positions.mistakes(actions)
    rate = float(wrong.mean())
    low, high = wilson_interval(rate, len(wrong))
    plies = np.array([len(moves) for moves in positions.moves])
    best = positions.best()
    phases = {}
    for start in range(0, int(plies.max()) + 1, PHASE_PLIES):
        where = (plies >= start) & (plies < start + PHASE_PLIES)
        phases[f"{start}-{start + PHASE_PLIES - 1}"] = _count(wrong, where)
    outcomes = {n: _count(wrong, best == v) for n, v in (("win", 1), ("draw", 0), ("loss", -1))}
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
        "by_phase": phases,
        "by_best": outcomes,
    }


def _count(wrong: np.ndarray, where: np.ndarray) -> dict:
    return {"positions": int(where.sum()), "mistakes": int(wrong[where].sum())}


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
