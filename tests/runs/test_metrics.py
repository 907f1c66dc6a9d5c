"""The progress line and summaries print counts as integers with thousands separators."""

import pytest

from azjax.matches.arena import summarize
from azjax.runs.metrics import format_duration, parse_lines, progress_line

RECORD = {
    "iteration": 20,
    "wall_time": 125.0,
    "loss": 2.5,
    "value_loss": 0.8,
    "policy_loss": 1.7,
    "policy_entropy": 1.9,
    "positions_per_second": 1234.6,
    "average_game_length": 19.5,
    "buffer_size": 60000.0,
    "eval/mcts:200/win_rate": 0.75,
}


def test_progress_line_counts_iterations_and_eta():
    line = progress_line(RECORD, num_iterations=400, eta=3725)
    assert line.startswith("it   20/400 |")
    assert "buffer 60,000" in line and "60000.0" not in line
    assert "1,235 pos/s" in line
    assert "ETA 1h02m" in line
    assert line.endswith("win rate vs mcts:200 0.75")
    assert "ETA" not in progress_line(RECORD)


@pytest.mark.parametrize("seconds, text", [(42, "42s"), (425, "7m05s"), (11520, "3h12m")])
def test_durations(seconds, text):
    assert format_duration(seconds) == text


def test_summaries_use_thousands_separators():
    text = summarize([1.0] * 1200 + [0.0] * 5 + [-1.0] * 3).format()
    assert text.startswith("1,200 wins, 5 draws, 3 losses in 1,208 games; score 0.995")


def test_partial_lines_are_dropped_and_counted():
    text = '{"iteration": 1}\n{"iteration": 2, "lo\n\x00\x00\x00\n{"iteration": 3}\n[1]\n'
    records, dropped = parse_lines(text)
    assert [r["iteration"] for r in records] == [1, 3]
    assert dropped == 3
