"""The Python API for runs that notebooks drive: train with a progress bar and a callback,
metrics as a DataFrame with 95% intervals, checkpoints, config, plots and `azjax plot`."""

import json
import math

import pytest
from conftest import tiny_config
from scipy.stats import binomtest

from azjax import config as config_lib
from azjax import stats
from azjax.apps import api, cli
from azjax.runs import directory as runs
from azjax.runs import plots
from azjax.types import UserError


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """A tiny Tic-tac-toe run evaluated against minimax and random every 2 iterations, whose
    callback stopped it at iteration 3 of 6; returns (workdir, iterations the callback saw)."""
    workdir = tmp_path_factory.mktemp("run")
    config = tiny_config()
    config.train.num_iterations = 6
    config.eval.every = 2
    config.eval.opponents = ("minimax", "random")
    seen = []

    def callback(record):
        seen.append(record)
        return record["iteration"] == 3

    state = api.train(config, workdir, callback=callback, progress="bar")
    assert int(state.iteration) == 3
    return workdir, seen


def test_callback_sees_every_record_and_stops_the_run_saved(stopped_run):
    workdir, seen = stopped_run
    assert [r["iteration"] for r in seen] == [1, 2, 3]
    assert "eval/minimax/score" in seen[1] and "eval/minimax/score" not in seen[0]
    assert runs.list_checkpoints(workdir)[-1] == 3
    written = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert written == seen


def test_load_metrics_is_a_frame_indexed_by_iteration(stopped_run):
    workdir, seen = stopped_run
    metrics = runs.load_metrics(workdir)
    assert list(metrics.index) == [1, 2, 3]
    assert metrics.loc[2, "loss"] == pytest.approx(seen[1]["loss"])
    assert metrics["minutes"].tolist() == pytest.approx([r["wall_time"] / 60 for r in seen])
    # A metrics file loads the same as its run directory.
    assert runs.load_metrics(workdir / "metrics.jsonl").equals(metrics)
    assert runs.opponents(metrics) == ["minimax", "random"]


def test_evaluations_carry_game_counts_and_wilson_intervals(stopped_run):
    workdir, _ = stopped_run
    table = runs.evaluations(runs.load_metrics(workdir))
    assert table[["iteration", "opponent"]].values.tolist() == [[2, "minimax"], [2, "random"]]
    for row in table.itertuples():
        assert row.games == 4  # tiny_config's eval.num_games
        assert row.win_rate + row.draw_rate + row.loss_rate == pytest.approx(1.0)
        assert row.score_low <= row.score <= row.score_high
    # The untrained agent never beats exact play.
    assert table.set_index("opponent").loc["minimax", "win_rate"] == 0


@pytest.mark.parametrize("wins, games", [(0, 4), (32, 64), (61, 64), (200, 200)])
def test_wilson_interval_matches_scipy(wins, games):
    expected = binomtest(wins, games).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = stats.wilson_interval(wins / games, games)
    assert (low, high) == pytest.approx((expected.low, expected.high), abs=1e-9)


def test_metrics_without_game_counts_need_them_given(tmp_path):
    records = [
        {"iteration": 1, "wall_time": 6.0, "total_games": 10, "eval/random/win_rate": 0.5},
        {"iteration": 2, "wall_time": 12.0, "total_games": 20},
    ]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"iteration": 3, "lo')
    metrics = runs.load_metrics(path)
    assert list(metrics.index) == [1, 2]  # the torn last line is skipped
    with pytest.raises(UserError, match="eval.num_games"):
        runs.evaluations(metrics)
    table = runs.evaluations(metrics, num_games=16)
    assert table["games"].tolist() == [16] and math.isfinite(table["score_low"][0])


def test_missing_run_pieces_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="no metrics"):
        runs.load_metrics(tmp_path)
    with pytest.raises(UserError, match="no config.json"):
        config_lib.load_run_config(tmp_path)
    assert runs.list_checkpoints(tmp_path) == []
    with pytest.raises(UserError, match="not a run directory"):
        runs.list_checkpoints(tmp_path / "missing")


def test_run_config_round_trips(stopped_run):
    workdir, _ = stopped_run
    config = config_lib.load_run_config(workdir)
    assert config.eval.opponents == ("minimax", "random") and config.train.num_iterations == 6


def test_bad_progress_mode_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="progress"):
        api.train(tiny_config(), tmp_path, progress="fancy")


def test_plots_accept_runs_files_and_frames(stopped_run, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    workdir, _ = stopped_run
    figure = plots.plot_run(workdir, tmp_path / "run.png", x="games")
    assert (tmp_path / "run.png").stat().st_size > 0
    assert figure.axes[0].get_xlabel() == "self-play games"
    axes = plots.plot_runs(
        {"a": workdir, "b": runs.load_metrics(workdir)}, opponent="random", x="iteration"
    )
    assert [t.get_text() for t in axes.get_legend().get_texts()] == ["a vs random", "b vs random"]
    with pytest.raises(ValueError, match="not evaluated against"):
        plots.plot_runs({"a": workdir}, opponent="mcts:800")


def test_plot_command(stopped_run, tmp_path, capsys):
    workdir, _ = stopped_run
    out = tmp_path / "curve.png"
    assert cli.main(["plot", "--workdir", str(workdir), "--out", str(out), "--x", "games"]) == 0
    assert out.stat().st_size > 0 and f"wrote {out}" in capsys.readouterr().out
    assert cli.main(["plot", "--workdir", str(tmp_path / "none")]) == 2
    assert "no metrics" in capsys.readouterr().err


@pytest.mark.parametrize(
    "out, said",
    [
        ("curve.xyz", ".xyz is not an image format (name one of "),
        ("curve", "no extension is not an image format"),
        ("missing/curve.png", "No such file or directory"),
        ("a" * 300 + ".png", "File name too long"),
    ],
)
def test_plot_refuses_an_output_it_cannot_write_in_one_line(
    stopped_run, tmp_path, capsys, out, said
):
    workdir, _ = stopped_run
    argv = ["plot", "--workdir", str(workdir), "--out", str(tmp_path / out)]
    assert cli.main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"azjax: error: cannot write {tmp_path / out}: ") and said in line


def test_plot_of_metrics_without_times_names_the_axis_that_works(tmp_path, capsys):
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"iteration": 1, "loss": 1.0}) + "\n")
    assert cli.main(["plot", "--workdir", str(tmp_path), "--out", str(tmp_path / "a.png")]) == 2
    assert "use --x iteration" in capsys.readouterr().err
    assert cli.main(["plot", "--workdir", str(tmp_path), "--x", "iteration"]) == 0
