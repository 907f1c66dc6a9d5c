"""The frontier study's schedule and training (`azjax frontier`, see `apps/frontier`): the
sizes `CxB`, the study's settings kept in `DIR/frontier.json` (and grown in place), each
size's checkpoints on one geometric compute schedule, and each size trained to its points,
resuming."""

import json
import math
import re
from pathlib import Path

from azjax import compile_cache
from azjax.apps import api
from azjax.config import apply_overrides, build, load_config, pipeline_key
from azjax.paths import write_atomically
from azjax.runs import directory as runs
from azjax.training import compute
from azjax.types import UserError

__all__ = [
    "RATINGS",
    "SETTINGS",
    "checkpoints",
    "open_study",
    "parse_sizes",
    "plan",
    "read_rows",
    "size_config",
    "train_sizes",
]

_SIZE = re.compile(r"([1-9][0-9]{0,3})x([1-9][0-9]?)")
SETTINGS = "frontier.json"
RATINGS = "ratings.jsonl"


def parse_sizes(text: str) -> list[str]:
    """The sizes of `--sizes`: `CxB` (channels x residual blocks), comma-separated."""
    sizes = [s.strip() for s in text.split(",") if s.strip()]
    for size in sizes:
        if not _SIZE.fullmatch(size):
            raise UserError(f"bad size {size!r}: use CHANNELSxBLOCKS, such as 32x3")
    if len(set(sizes)) != len(sizes) or not sizes:
        raise UserError(f"--sizes needs distinct sizes, got {text!r}")
    return sizes


def size_config(settings: dict, size: str):
    """The run config of one size: the experiment, the study's overrides, the size."""
    channels, blocks = _SIZE.fullmatch(size).groups()
    config = apply_overrides(load_config(settings["config"]), dict(settings["overrides"]))
    return apply_overrides(
        config,
        {
            "network.channels": channels,
            "network.num_blocks": blocks,
            "train.max_minutes": "0",
            "eval.every": "0",
            "seed": str(settings["seed"]),
        },
    )


def _iteration_flops(config) -> tuple[float, int]:
    """Training FLOPs of one iteration of `config` (a playout cap at its expected share of
    full searches) and the network's parameters."""
    pipeline = build.make_pipeline(config)
    costs = compute.measure(pipeline, pipeline_key(config))
    full = {"playout_cap/full_fraction": float(config.selfplay.full_search_fraction)}
    selfplay = compute.selfplay_evaluations(pipeline, full) * costs.forward_flops
    learn = pipeline.updates_per_iteration * costs.update_flops
    return selfplay + learn, costs.parameters


def plan(settings: dict) -> dict[str, dict]:
    """Each size's schedule: {"parameters", "iteration_flops", "points": {point: iteration}}.

    Point k of n = per_decade * decades + 1 is the budget times 10^((k - n + 1) /
    per_decade); its iteration is the first whose cumulated FLOPs reach it. A size has no
    checkpoint at a point its first iteration overshoots by more than half a step (a large
    network's single iteration is not a small budget), and points that fall on the same
    iteration keep the first."""
    count = settings["per_decade"] * settings["decades"] + 1
    lowest = _lowest(settings)  # counted from the lowest point, which a grown study keeps
    budgets = [lowest * 10 ** (k / settings["per_decade"]) for k in range(count)]
    schedule = {}
    for size in settings["sizes"]:
        per_iteration, parameters = _iteration_flops(size_config(settings, size))
        points, seen = {}, set()
        for point, budget in enumerate(budgets):
            iteration = max(1, math.ceil(budget / per_iteration))
            if iteration * per_iteration > budget * 10 ** (0.5 / settings["per_decade"]):
                continue  # one iteration overshoots the point by more than half a step
            if iteration not in seen:
                points[point] = iteration
                seen.add(iteration)
        schedule[size] = {
            "parameters": parameters,
            "iteration_flops": per_iteration,
            "points": points,
        }
    return schedule


def _lowest(settings: dict) -> float:
    return settings["budget"] / 10 ** settings["decades"]


def _grows(saved: dict, settings: dict) -> bool:
    """Whether `settings` extend the study `saved` to a larger budget over the same points:
    more decades, the same lowest point, everything else equal."""
    same = {k: v for k, v in saved.items() if k not in ("budget", "decades")}
    return (
        same == {k: v for k, v in settings.items() if k not in ("budget", "decades")}
        and settings["decades"] > saved["decades"]
        and math.isclose(_lowest(settings), _lowest(saved), rel_tol=1e-9)
    )


def open_study(directory: Path, settings: dict) -> dict:
    """The study's settings, written the first time; a rerun must give the same ones, or
    grow the study (a larger budget over more decades, the lowest point kept)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SETTINGS
    settings = json.loads(json.dumps(settings))
    if path.exists():
        saved = json.loads(path.read_text())
        if saved == settings:
            return settings
        if not _grows(saved, settings):
            changed = sorted(k for k in settings if saved.get(k) != settings[k])
            raise UserError(
                f"{directory} holds a study with other settings ({', '.join(changed)}); "
                "use a new --dir, or grow it: a larger --budget and as many more --decades"
            )
        print(
            f"growing the study from {saved['budget']:.2g} to {settings['budget']:.2g} FLOPs; "
            "its trained points and ratings stay",
            flush=True,
        )
    write_atomically(path, (json.dumps(settings, indent=1) + "\n").encode())
    return settings


def train_sizes(
    directory: Path,
    settings: dict,
    schedule: dict,
    *,
    only: str | None = None,
    up_to: int | None = None,
):
    """Trains each size (or `only`) to each point of its schedule (those up to point
    `up_to`), resuming."""
    for size in [only] if only else settings["sizes"]:
        workdir = directory / "runs" / size
        points = schedule[size]["points"]
        last = max(points.values())
        for point, iteration in points.items():
            if up_to is not None and point > up_to:
                break
            saved = checkpoints(workdir) if workdir.exists() else []
            if iteration in saved or (saved and max(saved) > iteration):
                continue  # trained (a study grown since keeps its points' ratings)
            config = size_config(settings, size)
            config.train.num_iterations = iteration
            # Every point kept, beside about 20 periodic saves for crash safety (and the
            # saves of a study that has grown since).
            config.train.checkpoint_every = every = max(1, last // 20)
            config.train.keep_checkpoints = len(points) + last // every + 1 + len(saved)
            print(f"[{size}] point {point}: training to iteration {iteration}", flush=True)
            api.train(config, workdir, progress="none", quiet=True)
        compile_cache.release()  # the next size compiles programs of its own


def checkpoints(workdir: Path) -> list[int]:
    try:
        return runs.list_checkpoints(workdir)
    except UserError:
        return []


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
