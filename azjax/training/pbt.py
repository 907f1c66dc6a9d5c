"""Population-based training: exploit and explore between a population's members.

Jaderberg et al. 2017, "Population Based Training of Neural Networks": every `every`
iterations the members are ranked by an objective they log (an evaluation score, an Elo
rating, or a training metric); each member of the worst `fraction` copies ("exploit") the
network, optimizer state and hyperparameters of a member drawn from the best `fraction`, then
multiplies each explored hyperparameter by a factor drawn from `factors` ("explore", the
paper's perturbation), kept within the config's valid range.

What is copied, and what is not: the network variables, the optimizer state and its update
count (the learner's whole `TrainState`) and the hyperparameters. Each member keeps its own
replay buffer, self-play games, random key and counters: its buffer holds the games its own
network played (a copied buffer would make the exploiting member's data a duplicate of its
source's, losing the population's diversity of experience, and would move the largest array
of the state); the copied network learns from it at once, as the paper's members go on with
their own data.

Every decision is appended to each member's `pbt.jsonl` (iteration, kept or exploited, the
source, the objective values, the hyperparameters after), and each metrics record carries the
member's hyperparameters as `hyper/KEY`, so a notebook draws each member's schedule.
"""

import dataclasses
import json
from pathlib import Path

import numpy as np

from azjax.config.keys import KEYS, TUNABLE_KEYS
from azjax.matches.ratings import anchors
from azjax.paths import parse_json
from azjax.types import UserError


@dataclasses.dataclass(frozen=True)
class PBT:
    """The settings of population-based training.

    Attributes:
      every: iterations between exploit/explore steps (a multiple of `eval.every` when the
        objective is an evaluation metric).
      objective: the metric ranked by (default: `default_objective` of the first member).
      direction: "maximize" or "minimize" the objective.
      fraction: the worst fraction copy from the best fraction (at least one member each).
      factors: explore multiplies each hyperparameter by one of these, drawn uniformly.
      keys: the hyperparameters explored (config keys from `config.TUNABLE_KEYS`); empty:
        those whose starting values differ between members, else the learning rate.
      seed: the decisions' random draws (fixed per iteration, so a resumed run decides alike).
    """

    every: int = 10
    objective: str | None = None
    direction: str = "maximize"
    fraction: float = 0.25
    factors: tuple[float, ...] = (0.8, 1.25)
    keys: tuple[str, ...] = ()
    seed: int = 0

    def check(self, members) -> "PBT":
        """These settings completed for the `members` (their `Settings`: objective, keys).

        Raises:
          UserError: fewer than 2 members, bad settings, or an objective that is not logged
            at the iterations PBT ranks at.
        """
        if len(members) < 2:
            raise UserError("population-based training needs at least 2 members")
        if (
            self.every < 1
            or not 0 < self.fraction <= 0.5
            or self.direction
            not in (
                "maximize",
                "minimize",
            )
        ):
            raise UserError(
                "pbt: every must be >= 1, fraction in (0, 0.5], direction maximize or minimize"
            )
        unknown = [key for key in self.keys if key not in TUNABLE_KEYS]
        if unknown:
            raise UserError(f"pbt explores {unknown}: not among {', '.join(TUNABLE_KEYS)}")
        objective = self.objective or default_objective(members[0].eval)
        if objective.startswith("eval/"):
            for settings in members:
                every = settings.run.eval_every
                if every <= 0 or self.every % every:
                    raise UserError(
                        f"pbt ranks by {objective} every {self.every} iterations: it needs "
                        f"eval.every > 0 dividing {self.every} (got {every})"
                    )
        keys = self.keys or varying_keys(members) or ("learner.learning_rate",)
        return dataclasses.replace(self, objective=objective, keys=tuple(keys))

    def due(self, iteration: int) -> bool:
        return iteration > 0 and iteration % self.every == 0


def default_objective(settings) -> str:
    """The metric a run is judged by unless told (`settings`: its `EvalSettings`): its Elo
    rating `eval/elo` when it rates itself against fixed opponents (`eval.elo` and at least
    two of them), else its score against the last fixed opponent of `eval.opponents`."""
    fixed = anchors.anchor_specs(settings.opponents)
    if settings.elo is not None and len(fixed) > 1:
        return "eval/elo"
    if not fixed:
        raise UserError(
            "no default objective: eval.opponents has no fixed opponent (name a metric)"
        )
    return f"eval/{fixed[-1]}/score"


def varying_keys(members) -> list[str]:
    """The tunable keys whose values differ between `members` (their `Settings`)."""
    return [key for key in TUNABLE_KEYS if len({s.tunable[key] for s in members}) > 1]


def latest(records: list[dict], objective: str) -> float:
    """The newest value of `objective` in a member's records (NaN if none yet)."""
    for record in reversed(records):
        if objective in record:
            return float(record[objective])
    return float("nan")


def decide(settings: PBT, values: list[float], iteration: int) -> list[int]:
    """The source of each member after ranking by `values`: itself (kept) or, for the worst
    `fraction`, a member of the best `fraction` drawn at random. Members without a value
    (NaN) rank last."""
    count = len(values)
    quarter = max(1, int(count * settings.fraction))
    sign = -1.0 if settings.direction == "maximize" else 1.0
    keys = [sign * v if np.isfinite(v) else np.inf for v in values]
    order = sorted(range(count), key=lambda k: (keys[k], k))  # best first
    best, worst = order[:quarter], order[count - quarter :]
    rng = _rng(settings, iteration, 0)
    sources = list(range(count))
    for member in worst:
        sources[member] = int(best[rng.integers(len(best))])
    return sources


def perturb(settings: PBT, values: dict[str, float], iteration: int, member: int) -> dict:
    """`values` (config key -> value) with each explored key multiplied by a factor drawn
    from `settings.factors`, kept within the key's valid range (integers rounded, moved by
    at least one)."""
    rng = _rng(settings, iteration, member + 1)
    result = dict(values)
    for key in settings.keys:
        spec = KEYS[key]
        kind, low, high, low_open = type(spec.default), spec.low, spec.high, spec.low_open
        factor = float(settings.factors[rng.integers(len(settings.factors))])
        value = values[key] * factor
        if kind is int:
            step = 1 if factor > 1 else -1
            value = int(round(value)) if round(value) != values[key] else values[key] + step
        if low is not None:
            floor = low if not low_open else np.nextafter(low, np.inf)
            value = max(value, kind(floor) if kind is int else floor)
        if high is not None:
            value = min(value, high)
        result[key] = kind(value)
    return result


def _rng(settings: PBT, iteration: int, stream: int) -> np.random.Generator:
    return np.random.default_rng([settings.seed, iteration, stream])


def log_decision(workdir: Path, decision: dict) -> None:
    """Appends one decision to the member's `pbt.jsonl`."""
    with (Path(workdir) / "pbt.jsonl").open("a") as stream:
        stream.write(json.dumps(decision) + "\n")


def read_decisions(workdir: str | Path, up_to: int | None = None) -> list[dict]:
    """A member's decisions (`pbt.jsonl`), those after iteration `up_to` dropped."""
    path = Path(workdir) / "pbt.jsonl"
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    decisions = [parse_json(line, str(path)) for line in lines if line.strip()]
    return [d for d in decisions if up_to is None or d["iteration"] <= up_to]


def truncate_log(workdir: str | Path, up_to: int) -> None:
    """Drops the decisions after iteration `up_to` (those of iterations a resume replays)."""
    path = Path(workdir) / "pbt.jsonl"
    if path.exists():
        kept = read_decisions(workdir, up_to)
        path.write_text("".join(json.dumps(d) + "\n" for d in kept))
