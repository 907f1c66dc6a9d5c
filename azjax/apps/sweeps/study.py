"""A sweep's Optuna study: opened once per worker with its sampler and pruner, refused when
the workdir or database holds a study of another space or config; and the Elo anchors rated
once for the whole sweep."""

import contextlib
import warnings
from pathlib import Path

import optuna

from azjax.apps.sweeps import space as space_lib
from azjax.apps.sweeps import storage as storage_lib
from azjax.matches.ratings import anchors
from azjax.training.evaluation import calibrate
from azjax.types import UserError

ANCHOR_ATTR = "azjax_anchor_ratings"
ANCHOR_FILE = "anchor_ratings.csv"


def _sampler(space: space_lib.Space) -> optuna.samplers.BaseSampler:
    if space.sampler == "grid":
        return optuna.samplers.GridSampler(space.grid())
    if space.sampler == "random":
        return optuna.samplers.RandomSampler()
    # constant_liar: trials running elsewhere count as bad, so parallel workers spread out.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(constant_liar=True)


def _pruner(space: space_lib.Space, config) -> optuna.pruners.BasePruner:
    if space.pruner is None:
        return optuna.pruners.NopPruner()
    if space.pruner == "median":
        return optuna.pruners.MedianPruner()
    if space.pruner == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=max(1, config.eval.every), max_resource=config.train.num_iterations
        )
    return space.pruner


def open_study(config, space, workdir: Path, url, study_name, space_text):
    """Creates or loads the study, refusing one started with another space or config."""
    store = storage_lib.open_storage(workdir, url)
    name = study_name or storage_lib.default_study_name(workdir)
    given = storage_lib.identity(space.describe(), config)
    with storage_lib.locked(workdir):
        saved = storage_lib.read_sweep_file(workdir)
        if saved is not None:
            storage_lib.check_identity(saved, given, str(workdir))
            stored_url = None if url is None else storage_lib.hide_password(url)
            if saved.get("study") != name or saved.get("storage") != stored_url:
                raise UserError(
                    f"{workdir} holds the study {saved.get('study')!r} in "
                    f"{saved.get('storage') or 'its journal file'}; use another --workdir for "
                    f"{name!r} in {stored_url or 'the journal file'}"
                )
        with quiet_optuna():
            study = optuna.create_study(
                storage=store,
                study_name=name,
                direction=space.direction,
                sampler=_sampler(space),
                pruner=_pruner(space, config),
                load_if_exists=True,
            )
        recorded = study.user_attrs.get(storage_lib.STUDY_ATTR)
        if recorded is None:
            study.set_user_attr(storage_lib.STUDY_ATTR, given)
        else:
            storage_lib.check_identity(recorded, given, f"study {name!r}")
        if saved is None:
            storage_lib.write_sweep_file(
                workdir,
                {
                    "study": name,
                    "storage": None if url is None else storage_lib.hide_password(url),
                    "objective": space.objective,
                    "direction": space.direction,
                    **given,
                },
            )
            if space_text is not None:
                (workdir / storage_lib.SPACE_FILE).write_text(space_text, encoding="utf-8")
    return study, store


@contextlib.contextmanager
def quiet_optuna():
    """Optuna's INFO lines ("A new study created ...", one per trial) off while inside."""
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


def shared_anchor_ratings(config, space, workdir: Path, study, *, quiet: bool) -> Path | None:
    """The Elo anchors rated once for the whole sweep (so every trial's `eval/elo` is on one
    scale, and no trial plays the calibration games again): a ratings file for the trials'
    `eval.elo_ratings`, or None where the trials rate no anchors or the space varies them."""
    if config.eval.every <= 0 or not config.eval.elo or config.eval.elo_ratings:
        return None
    if any(k.startswith(("eval.", "game_kwargs.")) or k == "game" for k in space.params):
        return None  # the trials' anchors or their games differ
    specs = anchors.anchor_specs(config.eval.opponents)
    if len(specs) < 2:
        return None
    anchor = config.eval.elo_anchor or anchors.default_anchor(specs)
    if anchor not in specs:
        raise UserError(f"eval.elo_anchor {anchor!r} is not a fixed opponent ({specs})")
    path = workdir / ANCHOR_FILE
    with storage_lib.locked(workdir):
        ratings = study.user_attrs.get(ANCHOR_ATTR)
        if ratings is None:  # the first worker of the study rates them
            rated = calibrate(
                workdir,
                config.game,
                dict(config.game_kwargs),
                specs,
                anchor=anchor,
                games_per_pair=config.eval.num_games,
                seed=config.seed,
                quiet=quiet,
            )
            # Unlocked (a cloud sweep directory), another worker may have stored them since.
            if study.user_attrs.get(ANCHOR_ATTR) is None:
                study.set_user_attr(ANCHOR_ATTR, rated)
            ratings = study.user_attrs[ANCHOR_ATTR]
        lines = ["player,elo", *(f"{spec},{elo!r}" for spec, elo in ratings.items())]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
