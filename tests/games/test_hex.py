"""Hex against OpenSpiel and hand-played positions.

Reference: OpenSpiel's Hex (`pyspiel.load_game("hex", {"board_size": n, "swap": ...})`,
open_spiel/games/hex/hex.cc in open-spiel 2.0): cells row-major from the top-left like
ours, player 0 (Black, "x") joins the top and bottom rows and player 1 (White, "o") the
left and right columns; a stone joins the six cells (r, c +- 1), (r - 1, c), (r - 1, c + 1),
(r + 1, c - 1) and (r + 1, c). With `swap`, action n*n on White's first move takes Black's
stone to the mirror cell as White's, and Black moves. Its game keeps edge-connected groups
by flood fill, where ours merges chains kept in the state: the same rules, computed apart.
Every random game is compared on every ply (the kit's `check_openspiel`: the end, rewards,
mover and legal moves) and on its final board (OpenSpiel's text of it).
"""

import jax
import numpy as np
import pytest
from openspiel_reference import assert_matches_openspiel
from positions import board, check_finished_game, play

import azjax.games
from azjax.games import conformance, notation
from azjax.games.hex import Hex, transposed
from azjax.types import UserError

pyspiel = pytest.importorskip("pyspiel")

# (size, games): a few hundred random games in all, each size with and without the swap;
# `docs/games.md` gives the thousands played once.
BOARDS = [(3, 150), (5, 60), (7, 30), (11, 12)]


def spiel_board(spiel_state) -> list[str]:
    """OpenSpiel's rows of "x", "o" and ".", one string a row, indentation removed."""
    return [row.replace(" ", "") for row in str(spiel_state).splitlines()]


def our_board(cells, size: int) -> list[str]:
    return ["".join(".xo"[v] for v in row) for row in np.asarray(cells).reshape(size, size)]


@pytest.mark.parametrize("swap", [False, True], ids=["plain", "swap"])
@pytest.mark.parametrize("size, num_games", BOARDS)
def test_random_games_match_openspiel(size, num_games, swap):
    game = Hex(size, swap=swap)
    spiel_game = pyspiel.load_game("hex", {"board_size": size, "swap": swap})
    # With the swap, the last action (the swap) is played in about half the games.
    pass_logit = float(np.log(size * size)) if swap else 0.0
    states, finals = assert_matches_openspiel(
        game, spiel_game, num_games, seed=size, pass_logit=pass_logit
    )
    for index, final in enumerate(finals):
        assert our_board(states.board[-1, index], size) == spiel_board(final), index
    # Both colours win some games; no game is drawn.
    winners = states.rewards.sum(axis=0)[:, 0]
    assert (winners > 0).any() and (winners < 0).any() and (winners != 0).all()
    swapped = [final.history()[1:2] == [size * size] for final in finals]
    assert any(swapped) == swap and not all(swapped)


@pytest.mark.deep
@pytest.mark.parametrize("swap", [False, True], ids=["plain", "swap"])
@pytest.mark.parametrize("size", [3, 5, 7, 11])
def test_thousands_of_games_replay_in_openspiel(size, swap):
    """400 random games a board, 3,200 in all (docs/games.md), through the kit: every rule of
    the contract, and every ply replayed in OpenSpiel (the swap 7 times as likely as a cell)."""
    game = Hex(size, swap=swap)
    name = f"hex(board_size={size},swap={str(swap).lower()})"
    passed = azjax.games.check(
        game, games=400, seed=size, openspiel=name, frequent_action=game.swap_action
    )
    assert passed[-1] == "openspiel"


def test_the_kit_replays_hex_in_openspiel():
    passed = azjax.games.check(
        Hex(4, swap=True), games=32, frequent_action=16, openspiel="hex(board_size=4,swap=True)"
    )
    assert passed[-1] == "openspiel"


def test_black_joins_top_and_bottom_along_the_short_diagonal():
    check_finished_game(
        Hex(3),
        ["c1", "a1", "b2", "b1", "a3"],
        """
        1 O O X
         2 . X .
          3 X . .
            a b c
        X wins
        """,
    )


def test_white_joins_left_and_right():
    check_finished_game(
        Hex(3),
        ["a1", "a2", "b1", "b2", "c3", "c2"],
        """
        1 X X .
         2 O O O
          3 . . X
            a b c
        O wins
        """,
    )


def test_cells_that_only_look_adjacent_do_not_join():
    # a1 and b2 share no side (the rows lean right): Black's a1 b2 b3 reaches no side twice.
    state = play(Hex(3), ["a1", "c1", "b2", "c2", "b3"])
    assert not bool(state.terminated)
    # c1 and b2 do: the same stones along the other diagonal win (the first test).


def test_a_long_chain_wins_whatever_order_it_was_built_in():
    # Black's chain runs down the c and b columns of 5 x 5, built from both ends (c1 c2 and
    # b4 b5) and joined in the middle by b3, which merges the two chains and wins.
    game = Hex(5)
    moves = ["c1", "a1", "b5", "a2", "c2", "a3", "b4", "a4", "b3"]
    state = play(game, moves[:-1])
    assert not bool(state.terminated)
    state = play(game, moves)
    assert bool(state.terminated) and state.rewards.tolist() == [1.0, -1.0]


def test_the_swap_turns_blacks_stone_into_whites():
    game = Hex(5, swap=True)
    assert notation.action_to_string(game, 25) == "swap"
    start = play(game, [])
    assert not bool(start.legal_action_mask[25])  # no stone to take yet
    after = play(game, ["b1", "swap"])
    assert notation.render(game, after) == board(
        """
        1 . . . . .
         2 O . . . .
          3 . . . . .
           4 . . . . .
            5 . . . . .
              a b c d e
        X to move
        """
    )
    assert int(after.current_player) == 0 and int(after.step_count) == 2
    assert after.legal_action_mask.tolist() == [cell != 5 for cell in range(25)] + [False]
    later = play(game, ["b1", "c3"])
    assert not bool(later.legal_action_mask[25])  # White's first move only
    with pytest.raises(UserError, match="the swap is White's first move only"):
        notation.parse_action(game, "swap", later)
    # The swapped stone is White's: it joins White's later stones (a2 b2 c2 d2 e2 wins).
    state = play(game, ["b1", "swap", "a1", "b2", "b1", "c2", "c1", "d2", "d1", "e2"])
    assert bool(state.terminated) and state.rewards.tolist() == [-1.0, 1.0]


def test_observations_from_the_movers_view():
    game = Hex(3, swap=True)
    obs = np.asarray(game.observe(play(game, ["a1"])))  # White to move, the swap legal
    assert obs.shape == (3, 3, 4)
    assert obs[0, 0, 1] == 1 and obs[..., 0].sum() == 0  # Black's stone is the opponent's
    assert (obs[..., 2] == 0).all() and (obs[..., 3] == 1).all()
    obs = np.asarray(game.observe(play(game, ["a1", "b2"])))  # Black to move
    assert obs[0, 0, 0] == 1 and obs[1, 1, 1] == 1
    assert (obs[..., 2] == 1).all() and (obs[..., 3] == 0).all()
    assert Hex(3).observation_shape == (3, 3, 3)


def test_the_half_turn_keeps_each_players_sides():
    game = Hex(3)
    state = play(game, ["a1", "b1"])
    obs, policy = game.apply_symmetry(game.observe(state), np.arange(9.0), 1)
    np.testing.assert_array_equal(obs, np.asarray(game.observe(state))[::-1, ::-1])
    assert policy.tolist() == list(range(8, -1, -1))
    assert Hex(3, swap=True).action_permutations()[1, 9] == 9  # the swap maps to itself


class DiagonalMirror(Hex):
    """The mirror in the long diagonal as a symmetry: it turns Black's sides into White's,
    so it is none while the observation says who moves."""

    def __init__(self):
        super().__init__(4)
        self._board_perms = np.stack([np.arange(16), transposed(4)]).astype(np.int32)
        self._action_perms = self._board_perms


def test_the_kit_refuses_the_diagonal_mirror_as_a_symmetry():
    game = DiagonalMirror()
    with pytest.raises(conformance.ContractError, match="symmetry 1 commutes with play"):
        conformance.CHECKS["symmetries_commute"](game, conformance.play(game, games=32))


def test_options():
    assert azjax.games.make("hex_7x7", swap=True).num_actions == 50
    assert repr(azjax.games.make("hex_11x11")) == "Hex(size=11, swap=False)"
    for options in ({"size": 1}, {"size": 27}, {"size": 7.0}, {"swap": "yes"}):
        with pytest.raises(UserError, match="bad options for game 'hex_7x7'"):
            azjax.games.make("hex_7x7", **options)


def test_cells_are_named_as_openspiel_names_them():
    game, spiel_game = Hex(7), pyspiel.load_game("hex", {"board_size": 7})
    state, spiel = game.init(jax.random.key(0)), spiel_game.new_initial_state()
    names = [notation.action_to_string(game, a, state) for a in range(49)]
    assert names == [spiel.action_to_string(a) for a in range(49)]
    assert names[:3] == ["a1", "b1", "c1"] and names[7] == "a2" and names[-1] == "g7"
    with pytest.raises(UserError, match="type a column a-g and a row 1-7, like d4"):
        notation.parse_action(game, "h1", state)
