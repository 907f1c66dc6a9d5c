"""The frontier study end to end at toy size: sizes trained to one FLOP budget with
checkpoints on the geometric schedule, every checkpoint rated on one scale, the report; a
rerun resumes and does nothing twice, and a study grows in place."""

import json

import pytest
from conftest import assert_user_error

from azjax.apps import frontier, frontier_plan
from azjax.apps.cli import main
from azjax.runs import directory
from azjax.types import UserError

pytestmark = pytest.mark.slow

TINY = {
    "network.value_hidden": "8",
    "search.num_simulations": "4",
    "selfplay.batch_size": "8",
    "selfplay.num_steps": "4",
    "replay.capacity": "512",
    "replay.min_size": "16",
    "learner.batch_size": "16",
    "learner.updates_per_iteration": "2",
    "eval.num_simulations": "4",
}
SIZES = ["2x1", "16x3"]  # 37x in parameters
BUDGET = 3e7  # 2x1: 6 and 53 iterations; 16x3: 1 (its first point overshot); grown: 521, 8
STUDY = dict(
    sizes=SIZES,
    budget=BUDGET,
    per_decade=1,
    decades=1,
    anchors=["random", "mcts:8"],
    games=4,
    simulations=[2, 8],
    base_overrides=TINY,
)


def test_the_study_trains_rates_reports_and_resumes(tmp_path, capsys):
    """One test of the one study (its time is the study's): every size trains to the budget
    on the geometric schedule; every checkpoint is rated at each simulation count; the
    report; a rerun does nothing twice; the command line reports it."""
    folder = tmp_path
    rows = frontier.run_frontier("tic_tac_toe", folder, **STUDY)
    settings = json.loads((folder / frontier_plan.SETTINGS).read_text())
    schedule = frontier_plan.plan(settings)
    parameters = [schedule[size]["parameters"] for size in SIZES]
    assert parameters == sorted(parameters) and parameters[-1] >= 30 * parameters[0]
    for size in SIZES:
        points = schedule[size]["points"]
        assert points and set(points) <= {0, 1}  # BUDGET / 10, BUDGET
        for point, iteration in points.items():  # no point overshot by half a step or more
            flops = iteration * schedule[size]["iteration_flops"]
            assert flops <= BUDGET * 10 ** (point - 1 + 0.5)
        run = folder / "runs" / size
        assert set(points.values()) <= set(directory.list_checkpoints(run))
        metrics = directory.load_metrics(run)
        last = metrics["total_train_flops"].iloc[-1]
        # The first iteration at or past the budget: within one iteration's FLOPs of it.
        per_iteration = schedule[size]["iteration_flops"]
        assert BUDGET <= last < BUDGET + per_iteration + 1
        assert last == pytest.approx(per_iteration * len(metrics), rel=1e-6)

    expected = {
        (size, point, sims)
        for size in SIZES
        for point in schedule[size]["points"]
        for sims in (2, 8)
    }
    assert {(r["size"], r["point"], r["simulations"]) for r in rows} == expected
    for row in rows:
        assert row["elo_low"] <= row["elo"] <= row["elo_high"]
        assert set(row["scores"]) == {"random", "mcts:8"}
        assert row["flops"] > 0 and row["parameters"] > 0
    # The anchors' calibration is an ordinary tournament.
    assert (folder / "eval_anchors" / "ratings.csv").exists()
    text = (folder / "report.md").read_text()
    assert "| 16x3 |" in text and "Neumann" in text and "Jones" in text
    assert (folder / "frontier.png").stat().st_size > 0

    # A rerun resumes: nothing trained or rated twice; other settings are refused.
    before = {size: (folder / "runs" / size / "metrics.jsonl").read_text() for size in SIZES}
    again = frontier.run_frontier("tic_tac_toe", folder, **STUDY)
    assert again == rows
    for size in SIZES:
        assert (folder / "runs" / size / "metrics.jsonl").read_text() == before[size]
    with pytest.raises(UserError, match="other settings \\(budget\\)"):
        frontier.run_frontier("tic_tac_toe", folder, **{**STUDY, "budget": 10 * BUDGET})

    # The command line reports the study in its folder.
    argv = ["frontier", "--config", "tic_tac_toe", "--dir", str(folder), "--stage", "report"]
    argv += ["--sizes", ",".join(SIZES), "--budget", str(BUDGET), "--per-decade", "1"]
    argv += ["--decades", "1", "--anchors", "random,mcts:8", "--games", "4"]
    argv += ["--simulations", "2,8"] + [f"--config.{k}={v}" for k, v in TINY.items()]
    assert main(argv + ["--target", "0.75@mcts:8"]) == 0
    out = capsys.readouterr().out
    assert "Compute frontier" in out and "- 0.75 against mcts:8 (Elo 191): " in out


def _settings(**changed) -> dict:
    """The settings `run_frontier` keeps for STUDY (frontier.json), with `changed`."""
    study = {**STUDY, **changed}
    return {
        "config": "tic_tac_toe",
        "overrides": study["base_overrides"],
        **{k: study[k] for k in ("sizes", "budget", "per_decade", "decades", "anchors")},
        **{k: study[k] for k in ("games", "simulations")},
        "mistakes": 0,
        "seed": 0,
    }


def test_a_grown_study_keeps_its_points_and_plans_the_new_ones(tmp_path, capsys):
    """CI's sibling of the growth run below: a tenfold budget over one more decade is
    accepted as the same study, its schedule keeps every point (and iteration) of the first
    and adds the new one; a budget that moves the lowest point is refused."""
    first = frontier_plan.plan(frontier_plan.open_study(tmp_path, _settings()))
    grown = frontier_plan.open_study(tmp_path, _settings(budget=10 * BUDGET, decades=2))
    assert "growing the study from 3e+07 to 3e+08 FLOPs" in capsys.readouterr().out
    schedule = frontier_plan.plan(grown)
    for size in SIZES:
        points = schedule[size]["points"]
        assert {p: i for p, i in points.items() if p in first[size]["points"]} == first[size][
            "points"
        ]
        assert 2 in points and points[2] > max(first[size]["points"].values())
    with pytest.raises(UserError, match="other settings \\(budget\\)"):
        frontier_plan.open_study(tmp_path, _settings(budget=100 * BUDGET, decades=2))


@pytest.mark.deep  # CI: test_a_grown_study_keeps_its_points_and_plans_the_new_ones
def test_the_study_grows_in_place(tmp_path):
    folder = tmp_path
    rows = frontier.run_frontier("tic_tac_toe", folder, **STUDY)
    schedule = frontier_plan.plan(json.loads((folder / frontier_plan.SETTINGS).read_text()))
    before = {size: (folder / "runs" / size / "metrics.jsonl").read_text() for size in SIZES}
    # The study grows in place: a tenfold budget over one more decade keeps what was trained
    # and rated (metrics and rows unchanged) and trains and rates only the new point.
    grown = frontier.run_frontier(
        "tic_tac_toe", folder, **{**STUDY, "budget": 10 * BUDGET, "decades": 2}
    )
    assert grown[: len(rows)] == rows
    added = [(r["size"], r["point"]) for r in grown[len(rows) :]]
    assert sorted(set(added)) == sorted((size, 2) for size in SIZES), added
    for size in SIZES:
        metrics = (folder / "runs" / size / "metrics.jsonl").read_text()
        assert metrics.startswith(before[size]) and len(metrics) > len(before[size])
        assert set(schedule[size]["points"].values()) <= set(
            directory.list_checkpoints(folder / "runs" / size)
        )
    with pytest.raises(UserError, match="other settings \\(budget\\)"):
        frontier.run_frontier(
            "tic_tac_toe", folder, **{**STUDY, "budget": 100 * BUDGET, "decades": 2}
        )


def test_the_command_line_refuses_bad_input(tmp_path, capsys):
    folder = tmp_path
    for target in ("1.5@random", "0.8", "x@random", "0.8@"):
        assert_user_error(
            capsys,
            ["frontier", "--dir", str(folder), "--budget", "1e9", "--target", target],
            "expected SCORE@ANCHOR",
        )
    assert_user_error(
        capsys,
        ["frontier", "--dir", str(folder / "t"), "--budget", "1e9", "--target", "0.8@mcts:9"],
        "target 0.8@mcts:9: a score between 0 and 1 against one of the anchors",
    )
    assert_user_error(
        capsys,
        ["frontier", "--dir", str(folder), "--budget", "1e9", "--sizes", "8y1"],
        "bad size '8y1'",
    )
    assert_user_error(
        capsys,
        ["frontier", "--dir", str(folder / "new"), "--budget", "1e9", "--anchors", "previous"],
        "anchor 'previous' is not a fixed player",
    )
