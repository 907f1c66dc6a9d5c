"""The Python API's training entry points, which start from a config as the command line does:
each builds the config's records once (`build.make_settings`) and hands them to `training`,
which never sees a config.

    azjax.train(config, "runs/c4")
    azjax.train(azjax.load_config("exports/c4"), "runs/c4b", resume_from="exports/c4")
    azjax.train_population([config_a, config_b], ["runs/a", "runs/b"])
"""

from collections.abc import Callable, Sequence
from pathlib import Path

import ml_collections
from jax.sharding import Mesh

from azjax.config import build
from azjax.core.steps import TrainerState
from azjax.training import pbt as pbt_lib
from azjax.training import population
from azjax.training import train as train_lib


def train(
    config: ml_collections.ConfigDict,
    workdir: str | Path,
    *,
    allow_config_change: bool = False,
    mesh: Mesh | None = None,
    quiet: bool = False,
    progress: str = "bar",
    callback: Callable[[dict], bool | None] | None = None,
    resume_from: str | Path | None = None,
) -> TrainerState:
    """Runs (or resumes) the experiment `config` (`config.load_config`, or `base_config()`
    plus overrides) in `workdir` until its iteration budget; the options (`resume_from`: an
    export, `azjax export-state`) and what it raises are `azjax.training.train.train`'s,
    which trains the records built here."""
    return train_lib.train(
        build.make_settings(config),
        workdir,
        allow_config_change=allow_config_change,
        mesh=mesh,
        quiet=quiet,
        progress=progress,
        callback=callback,
        resume_from=resume_from,
    )


def train_population(
    configs: Sequence[ml_collections.ConfigDict],
    workdirs: Sequence[str | Path],
    *,
    mesh=None,
    quiet: bool = False,
    progress: str = "bar",
    callback: Callable[[int, dict], bool | None] | None = None,
    pbt: pbt_lib.PBT | None = None,
) -> list[dict]:
    """Trains (or resumes) the members `configs` (one per member, one pipeline) in `workdirs`
    as one population; the options, what it returns and raises are
    `azjax.training.population.train_population`'s, which trains the records built here."""
    return population.train_population(
        [build.make_settings(config) for config in configs],
        workdirs,
        mesh=mesh,
        quiet=quiet,
        progress=progress,
        callback=callback,
        pbt=pbt,
    )
