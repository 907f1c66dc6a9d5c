"""Random-play differential testing against OpenSpiel, shared by the game tests.

OpenSpiel (github.com/google-deepmind/open_spiel, `pip install open-spiel`, imported as
`pyspiel`) implements its games in C++ and steps one game at a time from Python. So the
games are played here in two passes: a batch of random games in azjax as one jitted scan,
then each game's action sequence replayed in OpenSpiel, comparing every ply. The games'
action ids must mean the same moves in both (map them before calling if they do not).
"""

import jax
import jax.numpy as jnp
import numpy as np
from conftest import optimized_jit


def random_legal_action(key, legal_action_mask, pass_logit=0.0):
    """A uniform legal action (the last action's logit raised by `pass_logit`); action 0
    when none is legal (stepping is then a no-op)."""
    logits = jnp.where(legal_action_mask, 0.0, -jnp.inf).at[-1].add(pass_logit)
    return jax.random.categorical(key, logits).astype(jnp.int32)


def play_random_games(game, key, num_games, *, pass_logit: float = 0.0):
    """Plays `num_games` uniformly random games to the end as one jitted scan.

    Args:
      pass_logit: added to the logit of the last action (the pass in Go), so that random
        games pass more or less often; 0 keeps the moves uniform.

    Returns:
      (actions [T, B] int32, states [T+1, B] with the start position at index 0), as numpy;
      T = `game.max_episode_length`.
    """

    def play(key):
        init_key, play_key = jax.random.split(key)
        states = jax.vmap(game.init)(jax.random.split(init_key, num_games))

        def ply(states, key):
            actions = jax.vmap(random_legal_action, (0, 0, None))(
                jax.random.split(key, num_games), states.legal_action_mask, pass_logit
            )
            next_states = jax.vmap(game.step)(states, actions)
            return next_states, (next_states, actions)

        plies = jax.random.split(play_key, game.max_episode_length)
        _, (trajectory, actions) = jax.lax.scan(ply, states, plies)
        trajectory = jax.tree.map(lambda x, xs: jnp.concatenate([x[None], xs]), states, trajectory)
        return actions, trajectory

    return jax.device_get(optimized_jit(play)(key))


def assert_matches_openspiel(game, spiel_game, num_games, *, seed=0, pass_logit=0.0):
    """Plays random games in azjax, replays them in OpenSpiel and compares every ply.

    Compared at every ply up to the end of each game: terminated, rewards (OpenSpiel's
    `rewards()`, the returns on the final ply and zeros before), and while the game runs
    the player to move and the legal actions (as sorted ids). Also checks that every game
    ends within the scan.

    Args:
      game: an azjax game.
      spiel_game: the OpenSpiel game (`pyspiel.load_game(...)`) with the same action ids.
      num_games: B, games to play.
      seed: seeds the random actions.
      pass_logit: raises the odds of the last action (`play_random_games`).

    Returns:
      (the azjax states [T+1, B] as numpy, the B final OpenSpiel states).
    """
    actions, states = play_random_games(
        game, jax.random.key(seed), num_games, pass_logit=pass_logit
    )
    assert states.terminated[-1].all()
    finals = []
    for index in range(num_games):
        moves = actions[:, index].tolist()  # [T]
        terminated = states.terminated[:, index].tolist()  # [T+1]
        rewards = states.rewards[:, index].tolist()  # [T+1][2]
        players = states.current_player[:, index].tolist()  # [T+1]
        masks = states.legal_action_mask[:, index]  # [T+1, A]
        spiel_state = spiel_game.new_initial_state()
        for ply in range(len(moves) + 1):
            # The messages are built only when an assertion fails.
            assert terminated[ply] == spiel_state.is_terminal(), _where(index, moves[:ply])
            assert rewards[ply] == spiel_state.rewards(), _where(index, moves[:ply])
            if spiel_state.is_terminal():
                break
            assert players[ply] == spiel_state.current_player(), _where(index, moves[:ply])
            legal = np.flatnonzero(masks[ply]).tolist()
            assert legal == spiel_state.legal_actions(), _where(index, moves[:ply])
            spiel_state.apply_action(moves[ply])
        finals.append(spiel_state)
    return states, finals


def _where(index, moves):
    return f"game {index} after moves {moves}"
