"""The progress line and summaries print counts as integers with thousands separators; a
metrics write to storage that stops answering ends within the run's storage budget."""

import threading
import time

import pytest

from azjax.matches.arena import summarize
from azjax.runs import metrics
from azjax.runs.metrics import MetricsWriter, format_duration, parse_lines, progress_line
from azjax.types import StorageLost

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


def test_a_metrics_write_that_gets_no_answer_stops_within_the_storage_budget(tmp_path, monkeypatch):
    """On cloud storage (the metrics file rewritten whole each iteration, through gcsfs and
    its own retries), a write that never returns raises StorageLost once
    `storage_timeout_s` has passed, in one line that says how to resume."""
    hung = threading.Event()
    monkeypatch.setattr(metrics, "is_local", lambda path: False)
    writer = MetricsWriter(tmp_path, tensorboard=False, storage_timeout_s=0.5)
    monkeypatch.setattr(metrics, "write_atomically", lambda path, data: hung.wait())
    started = time.monotonic()
    with pytest.raises(StorageLost) as lost:
        writer.write({"iteration": 1, "loss": 1.0})
    assert time.monotonic() - started < 5
    said = str(lost.value)
    assert "no answer within 0.5 s (train.storage_timeout_s)" in said and "\n" not in said
    assert "iteration 1's metrics" in said and "run the same command again" in said
    hung.set()
    # Without a budget the write waits for the storage's own answer.
    unbounded = MetricsWriter(tmp_path, tensorboard=False)
    monkeypatch.setattr(metrics, "write_atomically", lambda path, data: time.sleep(0.2))
    assert unbounded.write({"iteration": 2})["iteration"] == 2
