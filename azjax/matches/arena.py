"""Matches between players: batched games, win/draw/loss, score and Elo with intervals.

A player is a pure function `player(params, states [B], key) -> actions [B] int32`, so
AlphaZero agents, the pure-MCTS baseline and the random player are interchangeable and a
whole match is one jittable function.

Games with an outside engine (`engines.HostPlayer`: GNU Go over GTP,
Fairy-Stockfish over UCI) are played one at a time on the host (`play_host_game`): an
engine plays one game at a time in its process, and an azjax player in such a game searches
a batch of one position (`DeviceHostPlayer`). The referee is azjax's own game: every move is
checked against its legal moves and the game ends by its rules. An engine that crashes,
times out, answers something that is not a legal move, or resigns loses the game, and the
reason is returned with the result.
"""

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from azjax import games
from azjax.games import Game, State
from azjax.games.base import random_legal_action
from azjax.matches.engines import RESIGN, EngineError, EngineSpec, HostPlayer, open_player
from azjax.stats import wilson_interval
from azjax.types import Array, Player, PRNGKey, SearchOutput


def random_player(game: Game) -> Player:
    """Plays a uniformly random legal move."""

    def play(params, states: State, key: PRNGKey) -> Array:
        del params
        return random_legal_action(key, states.legal_action_mask)

    return play


def search_player(search: Callable[..., SearchOutput]) -> Player:
    """Plays the move chosen by a searcher (an AlphaZero agent or the pure-MCTS baseline);
    a search with tree reuse gives a `ReusingPlayer`."""
    if getattr(search, "tree_reuse", False):
        return ReusingPlayer(search)

    def play(params, states: State, key: PRNGKey) -> Array:
        return search(params, states, key).action

    return play


class ReusingPlayer:
    """A search player that keeps a tree per game between moves (`search.tree_reuse`).

    `make_match` gives it its memory: `init(states)` the empty trees, `act(params, states,
    trees, key) -> (actions, trees)` searches from them, and `observe(trees, actions)` moves
    every tree down the move played in its game, by either side. Called as a plain player
    it searches from empty trees.
    """

    def __init__(self, search):
        self.search = search

    def __call__(self, params, states: State, key: PRNGKey) -> Array:
        return self.search(params, states, key).action

    def init(self, states: State):
        return self.search.empty_tree(states)

    def act(self, params, states: State, trees, key: PRNGKey):
        output = self.search(params, states, key, tree=trees)
        return output.action, output.tree

    def observe(self, trees, actions: Array):
        return self.search.advance(trees, actions)


class MatchResult(NamedTuple):
    """Outcomes of a match from player A's view."""

    outcomes: Array  # [G] float32, +1 A won, 0 draw, -1 A lost
    a_first: Array  # [G] bool, whether A moved first in that game
    lengths: Array  # [G] int32 plies
    actions: Array  # [T, G] int32 the moves played; game g's are actions[:lengths[g], g]
    # (0 after the last game ended: the match stops there)
    final_states: State  # [G] the final positions
    start_states: State | None = None  # [G] the start positions


def make_match(
    game: Game, player_a: Player, player_b: Player, *, num_games: int, opening_plies: int = 0
) -> Callable[[Any, Any, PRNGKey], MatchResult]:
    """Builds `match(params_a, params_b, key) -> MatchResult` for `num_games` (even) games.

    A moves first in the first half of the games and second in the other half. At every ply
    each player moves in exactly one half (all games of a half share the player to move), so
    nobody's search runs on positions where the other side is to move.

    Args:
      opening_plies: that many uniformly random moves open every game (varies the games
        between two deterministic players); never a voluntary pass in Go (`_opening_mask`).
    """
    if num_games % 2:
        raise ValueError(f"num_games must be even, got {num_games}")
    half = num_games // 2

    def opening(params, states: State, key: PRNGKey) -> Array:  # no voluntary pass in Go
        del params
        masks = jax.vmap(functools.partial(_opening_mask, game))(states)
        return random_legal_action(key, masks)

    def match(params_a, params_b, key: PRNGKey) -> MatchResult:
        init_key, play_key = jax.random.split(key)
        states = starts = jax.vmap(game.init)(jax.random.split(init_key, num_games))

        def take(tree, start):
            return jax.tree.map(lambda x: jax.lax.dynamic_slice_in_dim(x, start, half), tree)

        def put(tree, start, part):
            return jax.tree.map(
                lambda x, y: jax.lax.dynamic_update_slice_in_dim(x, y, start, 0), tree, part
            )

        def act(player, params, memory, states, start, key):
            """The player's moves in the half of the games from `start`, and its memory."""
            if not isinstance(player, ReusingPlayer):
                return player(params, take(states, start), key), memory
            actions, part = player.act(params, take(states, start), take(memory, start), key)
            return actions, put(memory, start, part)

        def observe(player, memory, actions):
            if not isinstance(player, ReusingPlayer):
                return memory
            return player.observe(memory, actions)

        def ply(carry, xs):
            states, returns, memory_a, memory_b = carry
            ply_index, ply_key = xs
            a_key, b_key, opening_key = jax.random.split(ply_key, 3)
            # Even plies: A moves in the first half; odd plies: in the second half.
            a_start = jnp.where(ply_index % 2 == 0, 0, half)
            b_start = half - a_start
            a_actions, memory_a = act(player_a, params_a, memory_a, states, a_start, a_key)
            b_actions, memory_b = act(player_b, params_b, memory_b, states, b_start, b_key)
            actions = jnp.where(
                jnp.arange(num_games) // half == a_start // half,
                jnp.tile(a_actions, 2),
                jnp.tile(b_actions, 2),
            )
            random_actions = opening(None, states, opening_key)
            actions = jnp.where(ply_index < opening_plies, random_actions, actions)
            states = jax.vmap(game.step)(states, actions)
            memory_a = observe(player_a, memory_a, actions)
            memory_b = observe(player_b, memory_b, actions)
            return (states, returns + states.rewards, memory_a, memory_b), actions

        def memory(player):
            return player.init(states) if isinstance(player, ReusingPlayer) else ()

        init_carry = (
            states,
            jnp.zeros((num_games, 2), jnp.float32),
            memory(player_a),
            memory(player_b),
        )
        # Ply by ply until every game has ended (at most the game's longest game): the
        # players' searches stop with the last game instead of searching finished positions.
        num_plies = game.max_episode_length
        ply_keys = jax.random.split(play_key, num_plies)

        def unfinished(loop):
            index, carry, _ = loop
            return (index < num_plies) & ~jnp.all(carry[0].terminated)

        def next_ply(loop):
            index, carry, actions = loop
            carry, played = ply(carry, (index, ply_keys[index]))
            return index + 1, carry, actions.at[index].set(played)

        no_moves = jnp.zeros((num_plies, num_games), jnp.int32)
        _, (states, returns, _, _), actions = jax.lax.while_loop(
            unfinished, next_ply, (jnp.int32(0), init_carry, no_moves)
        )
        a_first = jnp.arange(num_games) < half
        outcomes = jnp.where(a_first, returns[:, 0], returns[:, 1])
        return MatchResult(
            outcomes=jnp.sign(outcomes),
            a_first=a_first,
            lengths=states.step_count,
            actions=actions,
            final_states=states,
            start_states=starts,
        )

    return match


class Summary(NamedTuple):
    """Win/draw/loss counts and derived statistics for player A."""

    wins: int
    draws: int
    losses: int
    score: float  # (wins + draws / 2) / games
    score_low: float  # 95% confidence interval of the score
    score_high: float
    elo: float  # Elo difference A - B implied by the score
    elo_low: float
    elo_high: float

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def format(self) -> str:
        def elo(x):
            return f"{x:+.0f}" if math.isfinite(x) else ("+inf" if x > 0 else "-inf")

        return (
            f"{self.wins:,} wins, {self.draws:,} draws, {self.losses:,} losses "
            f"in {self.games:,} games; "
            f"score {self.score:.3f} (95% CI {self.score_low:.3f}-{self.score_high:.3f}), "
            f"Elo {elo(self.elo)} ({elo(self.elo_low)} to {elo(self.elo_high)})"
        )


def elo_from_score(score: float) -> float:
    """Elo difference for an expected score in [0, 1] (infinite at 0 and 1)."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def summarize(outcomes) -> Summary:
    """Score with a 95% Wilson interval (draws count half) and the Elo it implies."""
    outcomes = [float(x) for x in outcomes]
    games = len(outcomes)
    wins = sum(x > 0 for x in outcomes)
    losses = sum(x < 0 for x in outcomes)
    draws = games - wins - losses
    score = (wins + 0.5 * draws) / games
    low, high = wilson_interval(score, games)
    elos = map(elo_from_score, (score, low, high))
    return Summary(wins, draws, losses, score, low, high, *elos)


class DeviceHostPlayer(HostPlayer):
    """An azjax player (a checkpoint or a baseline) as a `HostPlayer`.

    Args:
      name: the player's name.
      player: the player function `player(params, states [B], key) -> actions [B]`, jitted
        (shared by players of one family so that it compiles once).
      params: its parameters (None for baselines).
      seed: seeds its searches.
    """

    def __init__(self, name: str, player, params, seed: int = 0):
        self.name = name
        self._player = player
        self._params = params
        self._key = jax.random.PRNGKey(seed)

    def start(self, game: Game, state: State) -> None:
        del game, state

    def observe(self, state: State, action: int) -> None:
        del state, action

    def choose(self, state: State) -> int:
        self._key, key = jax.random.split(self._key)
        batched = jax.tree.map(lambda x: jnp.asarray(x)[None], state)
        return int(self._player(self._params, batched, key)[0])

    def close(self) -> None:
        pass


def play_host_game(
    game: Game,
    first: HostPlayer,
    second: HostPlayer,
    *,
    opening_plies: int,
    key,
    step=None,
    watchers=(),
) -> tuple[float, int, str]:
    """Plays one game; returns (score of `first` in [0, 1], plies, reason).

    `reason` is "" when the game ended by the rules, otherwise what ended it ("resigned",
    or the engine error), and the player at fault loses.

    Args:
      opening_plies: that many uniformly random moves open the game (told to both players);
        never a voluntary pass in Go (`_opening_mask`).
      key: seeds the start position and the opening.
      step: `game.step`, jitted (pass one to share its compilation between games).
      watchers: told the game before the players are (`start`, `observe`), never asked to move
        (`recording.Recorder` keeps the game's record).
    """
    step = step or jax.jit(game.step)
    init_key, opening_key = jax.random.split(key)
    state = game.init(init_key)
    players = (first, second)
    for index, player in enumerate((*watchers, *players), -len(watchers)):  # players 0, 1
        try:
            player.start(game, state)
        except EngineError as error:  # a handshake that failed: the engine loses
            return _forfeit(index, 0, str(error))
    plies = 0
    while not bool(state.terminated):
        mover = int(state.current_player)
        if plies < opening_plies:
            opening_key, move_key = jax.random.split(opening_key)
            action = int(random_legal_action(move_key, _opening_mask(game, state)))
        else:
            try:
                action = players[mover].choose(state)
            except EngineError as error:
                return _forfeit(mover, plies, str(error))
            if action == RESIGN:
                return _forfeit(mover, plies, f"{players[mover].name} resigned")
            if not 0 <= action < game.num_actions or not bool(state.legal_action_mask[action]):
                return _forfeit(mover, plies, f"{players[mover].name} played illegal {action}")
        for index, player in enumerate((*watchers, *players), -len(watchers)):
            try:
                player.observe(state, action)
            except EngineError as error:
                return _forfeit(index, plies, str(error))
        state = step(state, jnp.int32(action))
        plies += 1
    reward = float(state.rewards[0])
    return (1.0 if reward > 0 else 0.0 if reward < 0 else 0.5), plies, ""


def engine_outcomes(
    game: Game,
    player,
    params,
    engine: EngineSpec,
    *,
    num_games: int,
    key,
    seed: int = 0,
    timeout: float | None = None,
    step=None,
    opening_plies: int = 0,
    watchers=(),
    should_stop: Callable[[], object] = lambda: False,
) -> tuple[list[float], list[str], int]:
    """An azjax player against an outside engine or the solver: `num_games` host games (the
    player first in the even ones) after `opening_plies` random moves. Returns the player's
    outcome in each game (+1, 0, -1) and the reasons of those not ended by the rules; fewer
    games where `should_stop()` (asked after each game: `interrupt.requested`) came true.

    Args:
      player: the player function, jitted (`DeviceHostPlayer`).
      timeout: seconds the engine may take per answer (default: its spec's or the player's).
      step: `game.step`, jitted.
      watchers: told every game (`play_host_game`).
    """
    outcomes, reasons, moves = [], [], 0
    step = step or jax.jit(game.step)
    agent = DeviceHostPlayer("azjax", player, params, seed=seed)
    options = dict(opening_plies=opening_plies, step=step, watchers=watchers)
    with open_player(engine, timeout=timeout) as opponent:
        for index in range(num_games):
            agent_first = index % 2 == 0
            first, second = (agent, opponent) if agent_first else (opponent, agent)
            game_key = jax.random.fold_in(key, index)
            score, plies, reason = play_host_game(game, first, second, key=game_key, **options)
            outcomes.append((2 * score - 1) * (1 if agent_first else -1))
            moves += sum((ply % 2 == 0) == agent_first for ply in range(opening_plies, plies))
            if reason:
                reasons.append(reason)
            if should_stop():
                break
    return outcomes, reasons, moves


def _opening_mask(game: Game, state: State):
    """The moves a random opening ply draws from: the legal moves, less Go's pass where any
    other move is legal. A random pass would let the next player end the game at once by
    passing too, scored on a board of one or two random stones (Tromp-Taylor: a lone
    stone owns the whole board), before the other player has moved at all."""
    mask = state.legal_action_mask
    if games.family_of(game) == "go":
        pass_action = game.num_actions - 1
        others = jnp.any(mask[:pass_action])
        mask = mask.at[pass_action].set(mask[pass_action] & ~others)
    return mask


def _forfeit(loser: int, plies: int, reason: str) -> tuple[float, int, str]:
    """Player `loser` (0 first, 1 second) loses; the score is the first player's."""
    return (0.0 if loser == 0 else 1.0), plies, reason
