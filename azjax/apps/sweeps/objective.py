"""A sweep's objective: the metric a trial is judged by, its default, and the check that
every run of the config logs it (evaluation metrics from the config, training metrics by
tracing the real step functions abstractly)."""

import dataclasses
import difflib
import functools
import types

import jax

from azjax import config as config_lib
from azjax.config import build
from azjax.config.schema import parse_opponent_spec
from azjax.core import steps
from azjax.matches.ratings import anchors
from azjax.runs.metrics import iteration_record
from azjax.training.pbt import default_objective as pbt_objective
from azjax.types import UserError

OUTCOMES = ("score", "win_rate", "draw_rate", "loss_rate", "games")


def default_objective(config) -> str:
    """The metric a trial is judged by unless the space names one: `eval/elo` when the runs
    rate themselves against at least two fixed opponents, else the score against the last
    fixed opponent of `eval.opponents` (as population-based training ranks members)."""
    if config.eval.every <= 0:
        raise UserError(
            "space: no default objective: eval.every = 0, so the runs never evaluate (set "
            "eval.every, or name a training metric as the objective)"
        )
    return pbt_objective(build.make_eval_settings(config))


def logged_metrics(config, *, training: bool = True) -> list[str]:
    """The metrics every run of `config` logs: its evaluation's (`eval/OPP/score`, ...,
    `eval/elo`) when it evaluates, and, with `training`, the keys of every iteration's record.
    """
    names = []
    if config.eval.every > 0:
        for spec in config.eval.opponents:
            names += [f"eval/{spec}/{outcome}" for outcome in OUTCOMES]
            if parse_opponent_spec(spec)[0] == "ladder":
                names.append(f"eval/{spec}/simulations")
        if config.eval.elo and anchors.anchor_specs(config.eval.opponents):
            names += ["eval/elo", "eval/elo_low", "eval/elo_high"]
    if training:
        key = config_lib.pipeline_key(config)
        if key not in _TRAINING_METRICS:
            _TRAINING_METRICS[key] = _training_metrics(config)
        names += _TRAINING_METRICS[key]
    return names


_TRAINING_METRICS: dict[str, list[str]] = {}  # pipeline key -> record keys


def _training_metrics(config) -> list[str]:
    """The keys of an iteration's record (`metrics.iteration_record`), found by tracing the
    step functions abstractly (`jax.eval_shape`, one learner update: about a second)."""
    pipeline = dataclasses.replace(build.make_pipeline(config), chunk=1)
    hyper = build.make_hyperparams(config)
    state = jax.eval_shape(functools.partial(steps.init_state, pipeline), jax.random.PRNGKey(0))
    state, play_metrics, keys = jax.eval_shape(
        functools.partial(steps.play_step, pipeline), state, hyper
    )
    chunk_keys = jax.ShapeDtypeStruct(keys.shape[1:], keys.dtype)
    _, learn_metrics = jax.eval_shape(
        functools.partial(steps.learn_step, pipeline), state, chunk_keys, hyper
    )
    metrics = dict.fromkeys([*play_metrics, *learn_metrics], 1.0)
    counters = types.SimpleNamespace(iteration=1, num_games=0, num_positions=0)
    settings = build.make_run_settings(config)
    return list(iteration_record(settings, counters, metrics, 1.0, 1.0))


def check_objective(config, objective: str) -> None:
    """Raises UserError unless every run of `config` logs `objective`."""
    if not isinstance(objective, str) or not objective:
        raise UserError(f"space: objective must be a metric name, not {objective!r}")
    if objective.startswith("eval/"):
        if config.eval.every <= 0:
            raise UserError(
                f"space: objective {objective} is an evaluation metric, but eval.every = 0 (the "
                "runs never evaluate)"
            )
        if config.eval.every > config.train.num_iterations:
            raise UserError(
                f"space: objective {objective}: eval.every = {config.eval.every} exceeds "
                f"train.num_iterations = {config.train.num_iterations} (never evaluated)"
            )
        known = logged_metrics(config, training=False)
    else:
        known = logged_metrics(config)
    if objective not in known:
        close = difflib.get_close_matches(objective, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UserError(f"space: the runs do not log the objective {objective!r}{hint}")
