"""Test helpers for Xiangqi: a batched perft and random-play comparison with OpenSpiel.

OpenSpiel's `xiangqi` (open_spiel/games/xiangqi/xiangqi.cc) numbers a move `from * 90 + to`
with points row-major from the top-left as Red sees the board, which is how
`XiangqiState.board` is laid out; our labels are seen from the mover, so the map from our
ids to OpenSpiel's depends on the player to move (`spiel_actions`). OpenSpiel has no
repetition or no-capture rule and ends games after 500 plies as a draw.
"""

import jax
import numpy as np
from openspiel_reference import play_random_games

from azjax.games import xiangqi
from azjax.games.notation.xiangqi import to_fen

PERFT_CHUNK = 8192  # (state, action) pairs stepped per call while expanding a perft level


def spiel_actions() -> np.ndarray:
    """[2, A] int: OpenSpiel's action id of each of our labels, per player to move."""
    points = xiangqi._MOVE_POINTS  # [2, A, 2] (from, to) on the board as Red sees it
    return points[..., 0] * xiangqi.POINTS + points[..., 1]


def perft(state, depth: int, step) -> list[int]:
    """Leaf counts of the move tree at depths 1..depth below `state` (an unbatched state).

    A level is a batch of states; the leaves one ply deeper are the sum of their legal
    masks (a finished game has an all-False mask, so a mate before `depth` counts no leaf,
    as in engine perft). Each level's legal (state, action) pairs are stepped with `step`
    (`jit(vmap(game.step))`) in chunks of PERFT_CHUNK, so it compiles once; the deepest
    level needed is only counted, chunk by chunk, not kept.
    """
    states = jax.device_get(jax.tree.map(lambda x: x[None], state))
    leaves = [int(states.legal_action_mask.sum())]
    for level in range(2, depth + 1):
        parents, actions = np.nonzero(states.legal_action_mask)  # [M] each, the children
        count, children = 0, []
        for start in range(0, len(parents), PERFT_CHUNK):
            chunk = slice(start, start + PERFT_CHUNK)
            size = len(parents[chunk])
            padding = (0, PERFT_CHUNK - size)  # Padded pairs step state 0 and are dropped.
            rows = np.pad(parents[chunk], padding)
            batch = step(
                jax.tree.map(lambda x, rows=rows: x[rows], states), np.pad(actions[chunk], padding)
            )
            batch = jax.tree.map(lambda x, size=size: x[:size], jax.device_get(batch))
            count += int(batch.legal_action_mask.sum())
            if level < depth:
                children.append(batch)
        leaves.append(count)
        if children:
            states = jax.tree.map(lambda *xs: np.concatenate(xs), *children)
    return leaves


def assert_matches_openspiel(game, spiel_game, num_games: int, *, seed: int = 0):
    """Plays random games in azjax, replays them in OpenSpiel and compares every ply.

    While our game runs, the player to move and the legal moves (as OpenSpiel ids) must
    agree, and `game.legal_action_mask` must give back the state's mask. Where our game
    ends, OpenSpiel must end too with the same returns, unless ours ended in a draw by one
    of the rules OpenSpiel lacks (repetition, no capture, a move limit below its 500 plies):
    then the comparison of that game stops there, and the rule that fired is checked.

    Returns:
      A dict of counts of how the games ended: "red", "black" (wins), "drawn at the move
      limit", "repetition", "no capture", "perpetual check" (a win OpenSpiel does not rule).
    """
    actions, states = play_random_games(game, jax.random.key(seed), num_games)
    assert states.terminated[-1].all()
    live = ~states.terminated  # [T+1, B]
    recomputed = jax.jit(jax.vmap(jax.vmap(game.legal_action_mask)))(states)  # [T+1, B, A]
    np.testing.assert_array_equal(np.asarray(recomputed)[live], states.legal_action_mask[live])
    to_spiel = spiel_actions()
    endings = dict.fromkeys(
        ["red", "black", "move limit", "repetition", "no capture", "perpetual check"], 0
    )
    for index in range(num_games):
        spiel_state = spiel_game.new_initial_state()
        for ply in range(actions.shape[0] + 1):
            # The messages (a FEN) are built only when an assertion fails.
            player = int(states.current_player[ply, index])
            if states.terminated[ply, index]:
                rewards = states.rewards[ply, index].tolist()
                # A perpetual check decided at a repetition: a rule OpenSpiel lacks.
                decided = rewards != [0.0, 0.0] and not _repeated(game, states, ply, index)
                if decided or spiel_state.is_terminal():
                    assert spiel_state.is_terminal(), _where(game, states, ply, index)
                    assert rewards == spiel_state.returns(), _where(game, states, ply, index)
                endings[_ending(game, states, ply, index)] += 1
                break
            assert not spiel_state.is_terminal(), _where(game, states, ply, index)
            assert player == spiel_state.current_player(), _where(game, states, ply, index)
            legal = to_spiel[player, np.flatnonzero(states.legal_action_mask[ply, index])]
            assert sorted(legal.tolist()) == spiel_state.legal_actions(), _where(
                game, states, ply, index
            )
            spiel_state.apply_action(int(to_spiel[player, actions[ply, index]]))
    return endings


def _where(game, states, ply, index):
    return f"game {index} ply {ply}: {to_fen(game, jax.tree.map(lambda x: x[ply, index], states))}"


def _repeated(game, states, ply, index) -> bool:
    return bool(game.repetition_limit) and states.repetitions[ply, index] >= game.repetition_limit


def _ending(game, states, ply, index) -> str:
    """How game `index` ended at `ply` (a terminated state); fails if no rule explains it."""
    rewards = states.rewards[ply, index]
    if rewards[0] != rewards[1] and _repeated(game, states, ply, index):
        return "perpetual check"
    if rewards[0] != rewards[1]:
        return "red" if rewards[0] > 0 else "black"
    if game.repetition_limit and states.repetitions[ply, index] >= game.repetition_limit:
        return "repetition"
    if game.no_capture_limit and states.no_capture_plies[ply, index] >= game.no_capture_limit:
        return "no capture"
    assert states.step_count[ply, index] == game.max_episode_length, (index, ply)
    return "move limit"
