"""The game contract, checked on any game by random play: `azjax.games.check(game)`.

What pgx's `api_test`, Gymnasium's `check_env` and PettingZoo's `api_test` do for their
environments, for a game written to `azjax.games.base.Game`, yours or a shipped one:

    import azjax.games
    azjax.games.check(MyGame())        # raises ContractError naming the broken rule
    azjax.games.check("othello", openspiel="othello")    # and each game replayed in OpenSpiel

It plays random games (uniform over the legal actions; `frequent_action` raises one action's
odds, such as Go's pass, so that rare moves are played) as one compiled `lax.scan` of
vmapped steps, and checks, in the order of `CHECKS`:

- `init`: player 0 to move, zero float32 rewards, step 0, a bool mask of `num_actions` with
  a legal action;
- `state_types`: a step keeps the state's structure, shapes, dtypes and weak types (so a
  jitted step never traces again);
- `terminal_is_fixed`: stepping a finished game changes nothing and rewards nothing;
- `legal_masks`: all False once a game has ended, some action legal before, and every
  played action legal;
- `rewards`: zero-sum, in {-1, 0, 1}, nonzero only on the ply a game ends;
- `turns`: players alternate and `step_count` counts the plies;
- `episode_length`: every game ends within `max_episode_length`;
- `observations`: `observation_shape`, float32, finite;
- `stored_observations`: `encode_observation` is integer, at most 2 bytes a value, and
  `decode_observation` gives back every observation bit for bit;
- `eager_matches_compiled`: eager `init`, `step` and `observe` give what the compiled games
  gave, ply for ply;
- `symmetry_inverses`: symmetry 0 is the identity and each symmetry has one inverse;
- `symmetries_commute`: playing the transformed actions gives the transformed observations
  and masks (for the symmetries that keep the start position);
- `notation`: every legal action's name parses back to it (`azjax.games.notation`: the
  game's module, or the default that names actions by their ids);
- `picture`: a start and a finished position draw as SVG (`azjax.games.render`: the
  game's module, or the fallback picture);
- `openspiel` (where asked): each game replayed in OpenSpiel (`pip install open-spiel`)
  agrees on every ply: terminated, rewards, the player to move and the legal actions. The
  action ids must mean the same moves in both (`action_map` translates azjax's to its).

A checker, not part of the compute core: it jits what it plays. `azjax.games.check` imports
it on first use (it imports the game's text and pictures, which import the registry).
"""

import jax
import jax.numpy as jnp
import numpy as np

from azjax import games as games_lib
from azjax.games.base import Game
from azjax.games.conformance_rules import CHECKS, ContractError, Play, compiled, require

__all__ = ["CHECKS", "ContractError", "Play", "check", "check_openspiel", "num_games", "play"]

NUM_GAMES = 256
OBSERVATION_BUDGET = 256 * 2**20  # bytes of recorded observations; fewer games for big ones
MIN_GAMES = 16


def num_games(game: Game) -> int:
    """NUM_GAMES, or fewer where their observations would exceed OBSERVATION_BUDGET (Go 19x19
    records 724 plies of 19x19x17 planes per game), but at least MIN_GAMES."""
    per_game = (game.max_episode_length + 3) * int(np.prod(game.observation_shape)) * 4
    return int(min(NUM_GAMES, max(MIN_GAMES, OBSERVATION_BUDGET // per_game)))


def random_action(key, legal_action_mask, frequent_action=None, extra_logit=0.0):
    """A uniform legal action, `frequent_action`'s logit raised by `extra_logit`; action 0
    when none is legal (stepping is then a no-op)."""
    logits = jnp.where(legal_action_mask, 0.0, -jnp.inf)
    if frequent_action is not None:
        logits = logits.at[frequent_action].add(extra_logit)
    return jax.random.categorical(key, logits).astype(jnp.int32)


def play(game: Game, *, games: int | None = None, seed: int = 0, frequent_action=None,
         extra_logit: float = 2.0) -> Play:  # fmt: skip
    """`games` random games (default `num_games`), two plies past `max_episode_length`."""
    batch = num_games(game) if games is None else games
    num_plies = game.max_episode_length + 2
    init_key, play_key = jax.random.split(jax.random.key(seed))
    init_keys = jax.random.split(init_key, batch)

    def run(init_keys, play_key):
        states = jax.vmap(game.init)(init_keys)

        def ply(states, key):
            keys = jax.random.split(key, batch)
            choose = jax.vmap(random_action, (0, 0, None, None))
            actions = choose(keys, states.legal_action_mask, frequent_action, extra_logit)
            next_states = jax.vmap(game.step)(states, actions)
            return next_states, (next_states, actions)

        _, (trajectory, actions) = jax.lax.scan(ply, states, jax.random.split(play_key, num_plies))
        trajectory = jax.tree.map(lambda x, xs: jnp.concatenate([x[None], xs]), states, trajectory)
        return trajectory, actions, jax.vmap(jax.vmap(game.observe))(trajectory)

    states, actions, observations = jax.device_get(compiled(game)(run)(init_keys, play_key))
    return Play(init_keys, states, actions, observations)


def check_openspiel(game: Game, play_: Play, name: str, action_map=None) -> None:
    """Each random game replayed in OpenSpiel's game `name` (`pyspiel.load_game(name)`),
    compared on every ply; `action_map` turns an azjax action id into OpenSpiel's."""
    import pyspiel  # noqa: PLC0415  (optional: pip install open-spiel)

    spiel_game = pyspiel.load_game(name)
    to_spiel = action_map or (lambda action: action)
    states = play_.states
    for index in range(len(play_.init_keys)):
        spiel = spiel_game.new_initial_state()
        for ply in range(play_.actions.shape[0] + 1):
            where = f": game {index} after the actions {play_.actions[:ply, index].tolist()}"
            require(
                bool(states.terminated[ply, index]) == spiel.is_terminal(),
                "OpenSpiel agrees the game has ended" + where,
            )
            require(
                states.rewards[ply, index].tolist() == spiel.rewards(),
                "OpenSpiel agrees on the rewards" + where,
            )
            if spiel.is_terminal():
                break
            require(
                int(states.current_player[ply, index]) == spiel.current_player(),
                "OpenSpiel agrees on the player to move" + where,
            )
            legal = sorted(
                to_spiel(a) for a in np.flatnonzero(states.legal_action_mask[ply, index])
            )
            require(legal == spiel.legal_actions(), "OpenSpiel agrees on the legal actions" + where)
            spiel.apply_action(to_spiel(int(play_.actions[ply, index])))


def check(game, *, games: int | None = None, seed: int = 0, frequent_action: int | None = None,
          openspiel: str | None = None, action_map=None) -> list[str]:  # fmt: skip
    """Checks `game` (a `Game`, or a registered name) against the contract by random play.

    Args:
      game: the game.
      games: random games to play (default: `num_games`, 256 or fewer for big boards).
      seed: seeds the games.
      frequent_action: an action played more often than uniform (Go's pass), so that what
        follows it is checked.
      openspiel: an OpenSpiel game to replay every game in (`pyspiel.load_game` name).
      action_map: azjax action id -> OpenSpiel's, where they differ.

    Returns:
      The names of the checks passed (all of `CHECKS`, then "openspiel" where asked).

    Raises:
      ContractError: the first rule broken, with the game and its moves.
    """
    if isinstance(game, str):
        game = games_lib.make(game)
    play_ = play(game, games=games, seed=seed, frequent_action=frequent_action)
    for rule in CHECKS.values():
        rule(game, play_)
    if openspiel is None:
        return list(CHECKS)
    check_openspiel(game, play_, openspiel, action_map)
    return [*CHECKS, "openspiel"]
