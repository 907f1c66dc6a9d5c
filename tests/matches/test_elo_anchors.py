"""Training's Elo estimate against fixed anchors (`eval/elo`, azjax.matches.ratings.anchors):
the fit with fixed ratings recovers a known rating at the stated rate, and a run calibrates its
anchors once (resumed, not replayed) and logs the estimate at every evaluation."""

import json

import numpy as np
import pytest
from conftest import tiny_config
from test_ratings import synthetic_games

from azjax.apps import api
from azjax.config import build, validate
from azjax.matches.ratings import anchors, fit
from azjax.runs.directory import load_metrics
from azjax.training import evaluation
from azjax.types import UserError

ANCHORS = {"mcts:100": 0.0, "mcts:400": 180.0, "mcts:1600": 380.0}


def test_fixed_ratings_stay_and_the_free_one_is_recovered_at_the_stated_rate():
    # An agent 250 Elo above mcts:100 plays 60 games against each anchor (ratings given, not
    # fitted); over 400 repetitions its 95% interval holds 250 about 95% of the time (the
    # binomial 95% range of the share at 400 trials is about 0.93-0.97; draws make the
    # intervals conservative, see ratings.elo).
    rng = np.random.default_rng(3)
    true = {"agent": 250.0, **ANCHORS}
    pairs = [("agent", spec) for spec in ANCHORS]
    covered = 0
    for _ in range(400):
        games = synthetic_games(true, 60, rng, draw_rate=0.0, pairs=pairs)
        ratings = fit(games, anchor="mcts:100", fixed=ANCHORS)
        for spec, elo in ANCHORS.items():
            assert ratings.elo[ratings.players.index(spec)] == elo
            assert ratings.interval(spec) == (elo, elo)
        low, high = ratings.interval("agent")
        covered += low <= 250.0 <= high
    assert 0.92 <= covered / 400 <= 0.98


def test_estimate_between_far_apart_anchors_converges_in_any_order():
    # The numbers of a Gomoku 6x6 k4 run: MCTS-1000 won all 64 calibration games against
    # random (-1231 Elo); the agent then won 64 of 64 against random and 46 of 64 against
    # MCTS-1000. With random first, Newton's full steps once flew off to +2,531,612.
    outcomes = {"random": [1.0] * 64, "mcts:1000": [1.0] * 46 + [-1.0] * 18}
    first = anchors.estimate(outcomes, {"random": -1231.1, "mcts:1000": 0.0})
    second = anchors.estimate(outcomes, {"mcts:1000": 0.0, "random": -1231.1})
    # Equal up to the weak prior (sd 2000 Elo), centred on the first anchor: 0.7 Elo here.
    assert first == pytest.approx(second, abs=2.0)
    # 46 of 64 against MCTS-1000 alone is +164 Elo; beating random far below adds ~nothing.
    assert 100 < first["eval/elo"] < 230
    assert first["eval/elo_low"] < first["eval/elo"] < first["eval/elo_high"]


def test_estimate_is_on_the_anchors_scale_wherever_it_is_anchored():
    # The same games rated with the anchors shifted by 1000: the estimate shifts by 1000.
    outcomes = {"mcts:100": [1.0] * 30 + [-1.0] * 10, "mcts:400": [1.0, -1.0] * 20}
    first = anchors.estimate(outcomes, ANCHORS)
    shifted = anchors.estimate(outcomes, {k: v + 1000 for k, v in ANCHORS.items()})
    assert shifted["eval/elo"] == pytest.approx(first["eval/elo"] + 1000)
    assert first["eval/elo_low"] < first["eval/elo"] < first["eval/elo_high"]
    # Only the anchors count: games against others (previous, a ladder) are left out.
    assert anchors.estimate({"previous": [1.0] * 10}, ANCHORS) == {}


def test_anchor_specs_and_default_anchor():
    specs = anchors.anchor_specs(("random", "previous", "ladder:50", "mcts:200", "mcts:800"))
    assert specs == ["random", "mcts:200", "mcts:800"]
    assert anchors.default_anchor(specs) == "mcts:200"
    assert anchors.default_anchor(["random", "minimax"]) == "random"


@pytest.mark.slow  # 19 s
def test_a_run_calibrates_its_anchors_once_and_logs_its_elo(tmp_path):
    config = tiny_config("tic_tac_toe")
    config.eval.every = 2
    config.eval.opponents = ("random", "mcts:8", "previous")
    config.train.num_iterations = 2
    run = tmp_path / "run"
    api.train(config, run, quiet=True)
    calibration = run / evaluation.CALIBRATION_DIR
    log = (calibration / "games.jsonl").read_text().splitlines()
    # One pair of anchors (random, mcts:8) at eval.num_games games.
    assert len(log) == config.eval.num_games
    assert {json.loads(line)["a"] for line in log} | {json.loads(line)["b"] for line in log} == {
        "random",
        "mcts:8",
    }
    config.train.num_iterations = 4
    api.train(config, run, quiet=True)  # resumed: the calibration is not played again
    assert len((calibration / "games.jsonl").read_text().splitlines()) == len(log)
    metrics = load_metrics(run)
    evaluated = metrics[metrics["eval/elo"].notna()]
    assert list(evaluated["iteration"]) == [2, 4]
    assert (evaluated["eval/elo_low"] < evaluated["eval/elo"]).all()
    assert (evaluated["eval/elo"] < evaluated["eval/elo_high"]).all()


def test_a_preset_game_calibrates_its_anchors_on_its_own_board(tmp_path):
    # A preset is a game class with preset options: gomoku_6x6_k4 is `Gomoku` (named
    # "gomoku") on 6x6. The anchors once played 15x15 Gomoku for it, where the run's agent
    # never plays (and 1000-simulation MCTS took minutes a game). A run hands its config's
    # game name to the calibration (build.make_eval_settings; a run calibrating end to end:
    # test_a_run_calibrates_its_anchors_once_and_logs_its_elo).
    config = tiny_config("gomoku_6x6_k4")
    config.eval.opponents = ("random", "mcts:2")
    elo = build.make_eval_settings(config).elo
    assert (elo["game"], elo["game_kwargs"]) == ("gomoku_6x6_k4", {})
    run = tmp_path / "run"
    specs = anchors.anchor_specs(config.eval.opponents)
    evaluation.calibrate(
        run,
        elo["game"],
        elo["game_kwargs"],
        specs,
        anchor="random",
        games_per_pair=2,
        seed=0,
        quiet=True,
    )
    stored = json.loads((run / evaluation.CALIBRATION_DIR / "tournament.json").read_text())
    assert stored["game"] == {"name": "gomoku_6x6_k4", "kwargs": {}}
    for line in (run / evaluation.CALIBRATION_DIR / "games.jsonl").read_text().splitlines():
        assert json.loads(line)["plies"] <= 36  # a 6x6 board holds 36 stones


def test_anchor_ratings_from_a_tournament_file(tmp_path):
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("player,elo,elo_low,elo_high,games,score\nrandom,-500,-600,-400,9,0.1\n")
    config = tiny_config("tic_tac_toe")
    config.eval.every = 1
    config.train.num_iterations = 1
    config.eval.elo_ratings = str(ratings)
    api.train(config, tmp_path / "run", quiet=True)
    assert not (tmp_path / "run" / evaluation.CALIBRATION_DIR).exists()
    record = load_metrics(tmp_path / "run").iloc[-1]
    assert record["eval/elo_low"] < record["eval/elo"] < record["eval/elo_high"]
    assert record["eval/elo"] > -500 - 400  # it scores well against random rated -500
    with pytest.raises(UserError, match="do not rate the anchor 'mcts:8'"):
        evaluation.ratings_from_file(ratings, ["random", "mcts:8"])


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("elo_anchor", "mcts:9", "names 'mcts:9', not an eval opponent"),
        ("elo_ratings", "/nonexistent/ratings.csv", "no ratings file"),
    ],
)
def test_bad_elo_settings_are_config_errors(key, value, message):
    config = tiny_config("tic_tac_toe")
    config.eval[key] = value
    with pytest.raises(UserError, match=message):
        validate(config)
