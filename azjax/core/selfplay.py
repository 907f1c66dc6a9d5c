"""Batched self-play: B games in lockstep under one `lax.scan`, carried across iterations.

Each call plays `num_steps` plies in every one of `batch_size` game slots. A finished game
restarts in place at the next ply. Every position is written to the replay buffer as it is
played (compact, see `replay`), and labelled there with its own game's outcome when that
game ends, in this call or a later one: a running game keeps no copy of its positions, and
every position is labelled exactly once.
"""

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from azjax.core import replay, targets
from azjax.core import resignation as resignation_lib
from azjax.core.replay import ReplayBuffer

# Resignation's names, re-exported (`selfplay.ResignRule` and the rest).
from azjax.core.resignation import (  # noqa: F401
    NO_RESIGN,
    RESIGN_THRESHOLDS,
    Resignation,
    ResignRule,
    adapt_threshold,
    false_positive_rates,
)
from azjax.core.search import Search
from azjax.core.selfplay_rules import (
    adjudicate_wins,
    choose_action,
    random_moves,
    start_games,
    where_rows,
)
from azjax.games import Game, State
from azjax.types import Array, PRNGKey


@struct.dataclass
class SelfPlayState:
    """Everything self-play carries from one call to the next: the game in each slot [B].

    The positions of a running game are in the replay buffer, unlabelled; there are
    `num_pending` of them.
    """

    games: State  # [B]
    # [B] int32 positions of each slot's running game in the buffer: with playout caps only
    # the full searches are stored (None: every ply is).
    stored: Array | None = None
    resignation: Resignation | None = None  # None: games never resign

    @property
    def num_pending(self) -> Array:
        """[B] int32 positions of each slot's running game, waiting for its outcome."""
        count = self.games.step_count if self.stored is None else self.stored
        return jnp.where(self.games.terminated, 0, count).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class PlayoutCap:
    """KataGo's playout cap randomization (Wu 2019, section 3.1): each ply is a full search
    with probability `full_fraction` (its positions are stored as training targets) or a
    cheap search of `cheap_search` (no root noise; played, not stored). The choice is made
    per ply for the whole batch, so a cheap ply really runs the cheap search only."""

    full_fraction: float
    cheap_search: Search


@dataclasses.dataclass(frozen=True)
class SelfPlayRules:
    """How self-play chooses, plays, ends and labels its games, all static (`run`, `init`;
    `steps.Pipeline.rules`). The tunable `temperature_moves` comes with each call."""

    # In a game's first `temperature_moves` plies play the search's own `action` instead of
    # sampling from its policy (Gumbel search, whose action already carries noise).
    sample_search_action: bool = False
    playout_cap: PlayoutCap | None = None  # None: every ply is a full, stored search
    # Resignation (None: games are played out); `v_resign` adapts after each `run`.
    resign: ResignRule | None = None
    # w != 0 labels the positions of a drawn game with w times the game's `adjudicate` score
    # of its last position instead of 0 (`targets.game_result`).
    draw_adjudication: float = 0.0
    # m > 0 ends a game as a win for the side whose `adjudicate` score is at least m both
    # before and after a ply (a lead the reply did not win back). A self-play rule only:
    # evaluations play by the game's rules.
    win_adjudication: float = 0.0
    # The share of moves played uniformly at random instead of the chosen one; the positions
    # keep the search's policy as their target.
    random_move_fraction: float = 0.0
    # The share of games that restart from a handicap start (`game.handicap_init`). A
    # self-play rule only, as `win_adjudication`.
    handicap_starts: float = 0.0
    # Compute the auxiliary targets of the games that end (`replay.Entry.final`:
    # `game.ownership` and `game.final_score` of the position each game ended in, by the
    # rules, resignation or adjudication alike); the buffer has those fields.
    label_ownership: bool = False
    label_score: bool = False


class SelfPlayOutput(NamedTuple):
    """Statistics of a call (the scan of `run` yields one per ply, its fields [T], which
    the call sums, or averages for `root_value` and `carried_fraction`)."""

    num_labelled: Array  # [] int32 positions labelled (the plies of the games that ended)
    num_games: Array  # [] int32 games that ended in this call
    total_game_length: Array  # [] int32 plies of the games that ended
    first_player_wins: Array  # [] int32
    second_player_wins: Array  # [] int32
    root_value: Array  # [] float32 mean searched root value
    num_stored: Array  # [] int32 positions written to the buffer
    num_full_plies: Array  # [] int32 plies searched in full (all of them without caps)
    carried_fraction: Array  # [] float32 mean share of root visits carried over (tree reuse)
    num_resigned: Array  # [] int32 games that ended by resignation
    num_adjudicated: Array  # [] int32 games that ended by `win_adjudication`


def init(
    game: Game, key: PRNGKey, *, batch_size: int, rules: SelfPlayRules = SelfPlayRules()
) -> SelfPlayState:
    """Starts `batch_size` games (B) by `rules` (handicap starts, resignation, playout caps)."""
    game_key, resign_key = jax.random.split(key)
    games = start_games(game, game_key, batch_size, rules.handicap_starts)
    resign = rules.resign
    resignation = None if resign is None else resignation_lib.init(resign, resign_key, batch_size)
    stored = jnp.zeros(batch_size, jnp.int32) if rules.playout_cap is not None else None
    return SelfPlayState(games, stored, resignation)


class Ply(NamedTuple):
    """What one ply played, for the buffer and the statistics."""

    searched: State  # [B] the positions searched
    entry: replay.Entry  # what the ply writes to the buffer (its [B] slots)
    rewards: Array  # [B, 2] final rewards of the games that ended (by the rules)
    carried: Array  # [B] int32 root visits carried over
    resigned: Array  # [B] bool
    adjudicated: Array  # [B] bool the game ended as a win by `win_adjudication`


def play_ply(
    game: Game,
    search: Search,
    variables,
    state: SelfPlayState,
    tree,
    key: PRNGKey,
    *,
    temperature_moves: int | Array,
    rules: SelfPlayRules,
) -> tuple[SelfPlayState, Any, Ply]:
    """One ply in every slot [B]: restart finished games, search, choose and play a move
    (or resign), by `rules` (`temperature_moves`: see `choose_action`).

    Args:
      tree: with tree reuse, the trees [B] carried from the previous ply (else None).

    Returns:
      The next self-play state, the trees carried to the next ply, and the `Ply`.
    """
    batch_size = state.games.terminated.shape[0]
    reset_key, search_key, sample_key, cap_key, resign_key = jax.random.split(key, 5)
    restart = state.games.terminated
    fresh = start_games(game, reset_key, batch_size, rules.handicap_starts)
    states = where_rows(restart, fresh, state.games)
    carried = jnp.zeros(batch_size, jnp.int32)
    if tree is not None:
        tree = tree.replace(node_visits=jnp.where(restart[:, None], 0, tree.node_visits))
        carried = tree.node_visits[:, 0]

    playout_cap = rules.playout_cap
    if playout_cap is None:
        full = jnp.bool_(True)
        output = search(variables, states, search_key, tree=tree)
    else:
        full = jax.random.uniform(cap_key) < playout_cap.full_fraction
        cheap = playout_cap.cheap_search.with_params(
            search.params.replace(dirichlet_fraction=0.0, gumbel_scale=0.0)
        )
        output = jax.lax.cond(
            full,
            lambda tree: search(variables, states, search_key, tree=tree),
            lambda tree: cheap(variables, states, search_key, tree=tree),
            tree,
        )
    action = choose_action(
        output,
        states,
        sample_key,
        temperature_moves,
        sample_search_action=rules.sample_search_action,
    )
    if rules.random_move_fraction > 0:  # a key of its own: runs without it are unchanged
        action = random_moves(
            action, states, jax.random.fold_in(sample_key, 1), rules.random_move_fraction
        )
    next_games = jax.vmap(game.step)(states, action)

    resignation, resigned = state.resignation, jnp.zeros(batch_size, bool)
    if resignation is not None:
        resignation = resignation_lib.restart(resignation, restart, rules.resign, resign_key)
        resignation, resigned, next_games = resignation_lib.resign(
            resignation, states, next_games, output, rules.resign
        )
    adjudicated = jnp.zeros(batch_size, bool)
    if rules.win_adjudication > 0:
        next_games, adjudicated = adjudicate_wins(game, states, next_games, rules.win_adjudication)

    ended = next_games.terminated
    if state.stored is None:
        stored, lengths = None, next_games.step_count
    else:
        stored = jnp.where(restart, 0, state.stored) + full.astype(jnp.int32)
        lengths = stored
    if tree is not None:
        tree = search.advance(output.tree, action)
    next_state = SelfPlayState(next_games, stored, resignation)
    final = {}
    if rules.label_ownership:
        final["ownership"] = jax.vmap(game.ownership)(next_games).astype(jnp.int8)
    if rules.label_score:
        final["score"] = jax.vmap(game.final_score)(next_games)
    entry = replay.Entry(
        obs=jax.vmap(game.encode_observation)(jax.vmap(game.observe)(states)),
        policy=output.action_weights,
        player=states.current_player,
        ended=ended,
        result=targets.game_result(game, next_games, rules.draw_adjudication),
        lengths=lengths,
        store=full,
        root_value=output.value,
        final=final,
    )
    ply = Ply(
        searched=states,
        entry=entry,
        rewards=next_games.rewards,
        carried=carried,
        resigned=resigned,
        adjudicated=adjudicated,
    )
    return next_state, tree, ply


class _Carry(NamedTuple):
    """What `run`'s scan carries from one ply to the next."""

    state: SelfPlayState  # the games [B]
    tree: Any  # with tree reuse the `mctx.Tree` [B, ...] of each slot's game, else None
    buffer: ReplayBuffer


def run(
    game: Game,
    search: Search,
    variables,
    state: SelfPlayState,
    buffer: ReplayBuffer,
    key: PRNGKey,
    *,
    num_steps: int,
    temperature_moves: int | Array,
    rules: SelfPlayRules = SelfPlayRules(),
    write: Callable | None = None,
) -> tuple[SelfPlayState, ReplayBuffer, SelfPlayOutput]:
    """Plays `num_steps` plies (T) in every slot, writing each position to `buffer` and
    labelling the positions of the games that end.

    Args:
      game: the game.
      search: the `search.Search` (with exploration noise); with tree reuse each slot's
        tree follows its game through the call (it starts empty at every call).
      variables: the network variables the search evaluates with.
      state: the games in progress (`init`, with the same `rules`).
      buffer: the replay buffer the positions go to.
      key: randomness of this call.
      num_steps: T, plies per call (static).
      temperature_moves: k: for the first k plies of a game the move is sampled from the
        search policy (temperature 1), afterwards it is the policy's argmax (an int, or a []
        int32 array).
      rules: the static rules (`SelfPlayRules`).
      write: `replay.write` with its static settings bound, sharded over the devices when
        there is a mesh (`steps.play_step` passes it); default: one unsharded ring.
    """
    write = write or functools.partial(replay.write, max_length=game.max_episode_length)

    def scan_ply(carry: _Carry, ply_key) -> tuple[_Carry, SelfPlayOutput]:
        state, tree, ply = play_ply(
            game,
            search,
            variables,
            carry.state,
            carry.tree,
            ply_key,
            temperature_moves=temperature_moves,
            rules=rules,
        )
        searched, entry, rewards = ply.searched, ply.entry, ply.rewards
        ended = entry.ended
        buffer, labelled = write(carry.buffer, entry)
        visits = jnp.maximum(ply.carried + search.num_simulations, 1)
        stats = SelfPlayOutput(
            num_labelled=labelled,
            num_games=jnp.sum(ended, dtype=jnp.int32),
            total_game_length=jnp.sum(
                jnp.where(ended, searched.step_count + 1, 0), dtype=jnp.int32
            ),
            first_player_wins=jnp.sum(ended & (rewards[:, 0] > 0), dtype=jnp.int32),
            second_player_wins=jnp.sum(ended & (rewards[:, 1] > 0), dtype=jnp.int32),
            root_value=jnp.mean(entry.root_value),
            num_stored=jnp.where(entry.store, ended.shape[0], 0).astype(jnp.int32),
            num_full_plies=entry.store.astype(jnp.int32),
            carried_fraction=jnp.mean(ply.carried / visits),
            num_resigned=jnp.sum(ply.resigned, dtype=jnp.int32),
            num_adjudicated=jnp.sum(ply.adjudicated, dtype=jnp.int32),
        )
        return _Carry(state, tree, buffer), stats

    tree = search.empty_tree(state.games) if search.tree_reuse else None
    carry, per_ply = jax.lax.scan(
        scan_ply, _Carry(state, tree, buffer), jax.random.split(key, num_steps)
    )
    state = carry.state
    if state.resignation is not None:
        state = state.replace(resignation=adapt_threshold(state.resignation, rules.resign))
    output = jax.tree.map(jnp.sum, per_ply)._replace(
        root_value=jnp.mean(per_ply.root_value),
        carried_fraction=jnp.mean(per_ply.carried_fraction),
    )
    return state, carry.buffer, output
