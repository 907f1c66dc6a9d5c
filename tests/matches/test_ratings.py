"""Bradley-Terry maximum-likelihood Elo (azjax.matches.ratings): recovers known strengths from
synthetic games at the stated interval coverage, places players that never met, anchors."""

import math

import numpy as np
import pytest

from azjax.matches.arena import elo_from_score
from azjax.matches.ratings import fit
from azjax.types import UserError


def synthetic_games(elos: dict, games_per_pair: int, rng, draw_rate: float = 0.2, pairs=None):
    """Games between players of known Elo: each game is a draw with probability `draw_rate`
    (scaled down where the expected score leaves no room), else a win drawn so that the
    expected score is the Elo model's."""
    names = list(elos)
    pairs = pairs or [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    games = []
    for a, b in pairs:
        expected = 1.0 / (1.0 + 10 ** ((elos[b] - elos[a]) / 400))
        draw = min(draw_rate, 2 * expected, 2 * (1 - expected))
        win = expected - draw / 2
        outcomes = rng.choice([1.0, 0.5, 0.0], size=games_per_pair, p=[win, draw, 1 - win - draw])
        games += [(a, b, float(s)) for s in outcomes]
    return games


def test_two_players_match_the_closed_form():
    # 30 wins, 10 draws, 20 losses: score 35/60; with no prior the maximum-likelihood gap is
    # the Elo of that score (arena.elo_from_score, the logistic formula).
    games = [("a", "b", 1.0)] * 30 + [("a", "b", 0.5)] * 10 + [("a", "b", 0.0)] * 20
    ratings = fit(games, anchor="b", prior_sd=math.inf)
    assert ratings.elo[ratings.players.index("a")] == pytest.approx(elo_from_score(35 / 60))
    assert ratings.interval("b") == (0.0, 0.0)
    table = ratings.table
    assert table["player"].tolist() == ["a", "b"] and table["games"].tolist() == [60, 60]
    assert table["score"].tolist() == pytest.approx([35 / 60, 25 / 60])


def coverage(draw_rate: float, rounds: int = 200) -> float:
    """The share of 95% intervals holding the true rating, over `rounds` round robins of 40
    games per pair between five players of known Elo."""
    true = {"random": 0.0, "p1": 150.0, "p2": 300.0, "p3": 400.0, "p4": 650.0}
    rng = np.random.default_rng(7)
    covered = trials = 0
    for _ in range(rounds):
        ratings = fit(synthetic_games(true, 40, rng, draw_rate=draw_rate), anchor="random")
        for player, elo in true.items():
            if player != "random":
                low, high = ratings.interval(player)
                covered += low <= elo <= high
                trials += 1
    return covered / trials


def test_intervals_cover_the_true_ratings_at_the_stated_rate():
    # 800 intervals at 95%: the binomial 95% range of the share is about 0.935-0.965.
    assert 0.93 <= coverage(draw_rate=0.0) <= 0.97


def test_draws_make_the_intervals_conservative():
    # A draw counts as half a win, and the model's variance is that of a win or a loss, so
    # with draws the intervals are wider than needed (measured: 0.987 at 20% draws).
    assert coverage(draw_rate=0.2) >= 0.95


def test_players_that_never_met_get_a_gap_with_a_wider_interval():
    true = {"a": 0.0, "b": 200.0, "c": 400.0}
    games = synthetic_games(true, 100, np.random.default_rng(1), pairs=[("a", "b"), ("b", "c")])
    ratings = fit(games, anchor="a")
    gap, low, high = ratings.difference("c", "a")
    _, met_low, met_high = ratings.difference("b", "a")
    assert low < 400 < high
    assert high - low > 1.3 * (met_high - met_low)  # two links of uncertainty instead of one


def test_unbeaten_players_stay_finite_and_unconnected_ones_are_nan():
    games = [("a", "b", 1.0)] * 10 + [("c", "d", 0.5)] * 4
    ratings = fit(games, anchor="b")
    a = ratings.players.index("a")
    assert math.isfinite(ratings.elo[a]) and ratings.elo[a] > 300
    assert ratings.interval("a")[1] - ratings.interval("a")[0] > 400  # little evidence
    for player in ("c", "d"):
        assert math.isnan(ratings.elo[ratings.players.index(player)])
    assert ratings.table["player"].tolist()[-2:] == ["c", "d"]


@pytest.mark.parametrize(
    "games, anchor, message",
    [
        ([], "random", "no games"),
        ([("a", "b", 2.0)], "a", "not in"),
        ([("a", "a", 1.0)], "a", "itself"),
        ([("a", "b", 1.0)], "random", "anchor 'random' played no game"),
    ],
)
def test_bad_input_is_a_user_error(games, anchor, message):
    with pytest.raises(UserError, match=message):
        fit(games, anchor=anchor)
