"""Run metrics: one JSON object per iteration in `metrics.jsonl`, TensorBoard, a progress line."""

import json
import math
import sys
from pathlib import Path


class MetricsWriter:
    """Appends iteration records to `workdir/metrics.jsonl` and TensorBoard event files."""

    def __init__(self, workdir: str | Path, *, resume_iteration: int = 0, tensorboard: bool = True):
        self.path = Path(workdir) / "metrics.jsonl"
        # On resume, records written after the restored checkpoint are replayed: drop them.
        if self.path.exists():
            kept = [
                line
                for line in self.path.read_text().splitlines()
                if line.strip() and json.loads(line).get("iteration", 0) <= resume_iteration
            ]
            self.path.write_text("".join(line + "\n" for line in kept))
        self.last_iteration = resume_iteration  # newest iteration in the file
        self._tensorboard = None
        if tensorboard:
            from tensorboardX import SummaryWriter  # noqa: PLC0415  (slow import)

            self._tensorboard = SummaryWriter(str(Path(workdir) / "tensorboard"))

    def write(self, record: dict) -> None:
        """Writes one record (flat dict of numbers and strings, with an 'iteration' key)."""
        record = {k: _plain(v) for k, v in record.items()}
        with self.path.open("a") as stream:
            stream.write(json.dumps(record) + "\n")
        self.last_iteration = record["iteration"]
        if self._tensorboard is not None:
            for key, value in record.items():
                if key != "iteration" and isinstance(value, int | float) and math.isfinite(value):
                    self._tensorboard.add_scalar(key, value, record["iteration"])
            self._tensorboard.flush()

    def close(self) -> None:
        if self._tensorboard is not None:
            self._tensorboard.close()


def _plain(value):
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float):
        return round(value, 6)
    return value


def read_metrics(workdir: str | Path) -> list[dict]:
    """Reads all records of a run's `metrics.jsonl`."""
    path = Path(workdir) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def progress_line(record: dict) -> str:
    """A one-line human summary of an iteration record."""
    parts = [
        f"it {record['iteration']:4d}",
        f"{record['wall_time'] / 60:6.1f} min",
        f"loss {record.get('loss', float('nan')):.3f}",
        f"(v {record.get('value_loss', float('nan')):.3f} "
        f"p {record.get('policy_loss', float('nan')):.3f})",
        f"H {record.get('policy_entropy', float('nan')):.2f}",
        f"{record['positions_per_second']:6.0f} pos/s",
        f"len {record['average_game_length']:4.1f}",
        f"buffer {record['buffer_size']}",
    ]
    evals = [
        f"{key[5:-9]} {value:.2f}"
        for key, value in record.items()
        if key.startswith("eval/") and key.endswith("/win_rate")
    ]
    if evals:
        parts.append("win rate vs " + ", ".join(evals))
    return " | ".join(parts)


def print_progress(record: dict, stream=None) -> None:
    """Prints the progress line of a record (to stdout by default)."""
    print(progress_line(record), file=stream or sys.stdout, flush=True)
