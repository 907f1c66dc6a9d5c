"""Run metrics: one JSON object per iteration in `metrics.jsonl`, TensorBoard, a progress line.

`metrics.jsonl` holds iterations 1..n exactly once. Each checkpoint carries the records up to
its iteration (see `checkpoint`), and a resumed run rewrites the file from them, so a torn
last line (a cut write, or the NUL-filled tail a power cut leaves) or records of iterations
after the checkpoint never survive a resume.
"""

import json
import logging
import math
import os
import sys
from pathlib import Path

from azjax.paths import is_local, read_text, workdir_path, write_atomically
from azjax.runs.trackers import TensorBoard, open_trackers

_log = logging.getLogger(__name__)


def parse_lines(text: str) -> tuple[list[dict], int]:
    """Records of a metrics file's text and the number of lines dropped as partial.

    A line that is not a JSON object with an integer `iteration` (a cut write, NUL bytes) is
    dropped.
    """
    records, dropped = [], 0
    for line in text.split("\n"):
        torn = "\x00" in line
        line = line.replace("\x00", "").strip()
        if not line:
            dropped += torn
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, an integer of 4300+ digits, deep
            dropped += 1
            continue
        if not isinstance(record, dict) or not isinstance(record.get("iteration"), int):
            dropped += 1
            continue
        records.append(record)
    return records, dropped


def read_metrics(workdir: str | Path) -> list[dict]:
    """Reads the records of a run's `metrics.jsonl`, skipping a partial line."""
    path = workdir_path(workdir) / "metrics.jsonl"
    records, _ = parse_lines(read_text(path))
    return records


def iteration_record(settings, state, metrics: dict, seconds: float, elapsed: float):
    """The `metrics.jsonl` record of an iteration (before evaluation) of the run `settings`
    (`RunSettings`): `metrics` with the counters of `state` (its `iteration`,
    `num_games`, `num_positions`) and the times."""
    record = {"iteration": int(state.iteration), **{k: float(v) for k, v in metrics.items()}}
    record.update(
        wall_time=elapsed,
        iteration_seconds=seconds,
        positions_per_second=settings.positions_per_iteration / seconds,
        games_per_second=record["games"] / seconds,
        total_games=int(state.num_games),
        total_positions=int(state.num_positions),
    )
    return record


class MetricsWriter:
    """Appends iteration records to `workdir/metrics.jsonl` and TensorBoard event files.

    Args:
      workdir: the run directory.
      history: the records of iterations 1..n saved with the checkpoint resumed from (None
        for a new run, or a checkpoint written before records were saved with it: then the
        file's own records up to `resume_iteration` are kept).
      resume_iteration: n, the iteration the run resumes after.
      tensorboard: also write TensorBoard event files (from iteration n + 1 on: events of
        iterations after n that an interrupted session wrote are purged).
      log: where warnings go.
      files: write files at all; False keeps the records in memory only (the processes of a
        multi-host run other than process 0).
      settings: the run's `Settings`: its `train.loggers` name the trackers (TensorBoard where
        `tensorboard`, W&B, MLflow; `azjax.runs.trackers`), which also get the config and the
        records from iteration n + 1 on; None: TensorBoard alone.
    """

    def __init__(
        self,
        workdir: str | Path,
        *,
        history: list[dict] | None = None,
        resume_iteration: int = 0,
        tensorboard: bool = True,
        log=None,
        files: bool = True,
        settings=None,
    ):
        log = log or _log.warning
        self.path = workdir_path(workdir) / "metrics.jsonl"
        self._files = files
        # Cloud storage has no append: there the whole file is written again each time.
        self._local = is_local(self.path)
        on_disk, dropped = [], 0
        if self.path.exists():
            on_disk, dropped = parse_lines(read_text(self.path))
        if dropped:
            log(f"azjax: warning: dropped {dropped} partial line(s) of {self.path}")
        if history is None:
            by_iteration = {
                r["iteration"]: r for r in on_disk if r["iteration"] <= resume_iteration
            }
            history = [by_iteration[i] for i in sorted(by_iteration)]
        self.records = [dict(r) for r in history if r["iteration"] <= resume_iteration]
        if files and (self.path.exists() or self.records):
            self._rewrite()
        # The trackers (TensorBoard, W&B, MLflow) get the records from iteration n + 1 on.
        self._trackers = []
        if files and settings is not None:
            self._trackers = open_trackers(
                settings, workdir, resume_iteration, tensorboard=tensorboard
            )
        elif files and tensorboard:
            self._trackers = [TensorBoard(workdir, resume_iteration)]

    @property
    def last_iteration(self) -> int:
        """The newest iteration written (0 before any)."""
        return self.records[-1]["iteration"] if self.records else 0

    def _rewrite(self) -> None:
        write_atomically(self.path, "".join(json.dumps(r) + "\n" for r in self.records).encode())

    def write(self, record: dict) -> dict:
        """Writes one record (flat dict of numbers and strings, with an 'iteration' key) and
        returns it as written (floats rounded to 6 decimals)."""
        record = {k: _plain(v) for k, v in record.items()}
        self.records.append(record)
        if self._files and self._local:
            with self.path.open("a") as stream:
                stream.write(json.dumps(record) + "\n")
        elif self._files:
            self._rewrite()
        for tracker in self._trackers:
            tracker.log(record)
        return dict(record)

    def sync(self) -> None:
        """Forces the file to disk (before a checkpoint names these records as saved)."""
        if self._files and self._local and self.path.exists():
            with self.path.open("rb+") as stream:
                os.fsync(stream.fileno())

    def close(self) -> None:
        for tracker in self._trackers:
            tracker.close()


def _plain(value):
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float):
        return round(value, 6)
    return value


def format_count(value) -> str:
    """An integer count with thousands separators: 60000 -> '60,000'."""
    return f"{int(round(float(value))):,}"


def format_duration(seconds: float) -> str:
    """'42s', '7m05s' or '3h12m'."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def progress_line(record: dict, *, num_iterations: int | None = None, eta: float | None = None):
    """A one-line human summary of an iteration record.

    Args:
      record: the iteration's metrics.
      num_iterations: the run's last iteration, shown as `it 20/400` when given.
      eta: estimated seconds to the end of the run, when known.
    """
    iteration = f"{record['iteration']:4d}"
    if num_iterations:
        iteration += f"/{num_iterations}"
    losses = f"v {record.get('value_loss', float('nan')):.3f} "
    losses += f"p {record.get('policy_loss', float('nan')):.3f}"
    for key, letter in (("ownership_loss", "o"), ("score_loss", "s")):  # KataGo's targets
        if key in record:
            losses += f" {letter} {record[key]:.3f}"
    parts = [
        f"it {iteration}",
        f"{record['wall_time'] / 60:6.1f} min",
        f"loss {record.get('loss', float('nan')):.3f}",
        f"({losses})",
        f"H {record.get('policy_entropy', float('nan')):.2f}",
        f"{format_count(record['positions_per_second'])} pos/s",
        f"len {record['average_game_length']:4.1f}",
        f"buffer {format_count(record['buffer_size'])}",
    ]
    if eta is not None and math.isfinite(eta):
        parts.append(f"ETA {format_duration(eta)}")
    if evals := _win_rates(record):
        parts.append(evals)
    return " | ".join(parts)


def _win_rates(record: dict) -> str:
    evals = [
        f"{key[5:-9]} {value:.2f}"
        for key, value in record.items()
        if key.startswith("eval/") and key.endswith("/win_rate")
    ]
    return "win rate vs " + ", ".join(evals) if evals else ""


def progress_summary(record: dict) -> str:
    """The short form of `progress_line` that follows a progress bar: loss, speed, win rates."""
    parts = [
        f"loss {record.get('loss', float('nan')):.3f}",
        f"{format_count(record['positions_per_second'])} pos/s",
    ]
    if evals := _win_rates(record):
        parts.append(evals)
    return ", ".join(parts)


def print_progress(record: dict, stream=None, **kwargs) -> None:
    """Prints the progress line of a record (to stdout by default)."""
    print(progress_line(record, **kwargs), file=stream or sys.stdout, flush=True)


class Progress:
    """Per-iteration progress of a run (`RunSettings`): a tqdm.auto bar, the `azjax
    train` line, or nothing."""

    def __init__(self, settings, mode: str):
        self.settings, self.mode, self.bar = settings, mode, None

    def start(self, iteration: int) -> None:
        if self.mode == "bar":
            from tqdm.auto import tqdm  # noqa: PLC0415  (a widget in Jupyter, text elsewhere)

            self.bar = tqdm(
                total=self.settings.num_iterations,
                initial=iteration,
                desc=self.settings.name,
                unit="it",
                dynamic_ncols=True,
            )

    def update(self, record: dict, eta: float) -> None:
        if self.mode == "lines":
            print_progress(record, num_iterations=self.settings.num_iterations, eta=eta)
        elif self.bar is not None:
            self.bar.set_postfix_str(progress_summary(record), refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
