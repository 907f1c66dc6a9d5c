"""A saved config's records: a run's config.json, a checkpoint's config item or a zoo agent's
config, read and built once (`build.make_settings`), for the wings that load saved runs
(agents, tournament players, a resumed run or population) and never hold a config.

Each function takes a path or the config's JSON form and returns records or plain data. The
records are an agent's: no self-play `Pipeline` (`Settings.pipeline` is None), so a run
whose config no longer builds one (an older or changed config) still loads and plays;
`from_saved(..., pipeline=True)` builds it, for the shapes of a run's whole state.
"""

import json
from pathlib import Path

from azjax import config as config_lib
from azjax.config import build
from azjax.config.settings import Settings
from azjax.paths import workdir_path
from azjax.types import UserError


def read(path: str | Path, *, overrides: dict[str, str] | None = None) -> Settings:
    """The records of a saved config file, with `overrides` (`config.apply_overrides`).

    Raises:
      UserError: the file is missing or not a valid config, or a bad override.
    """
    return _built(config_lib.read_config_file(path), overrides)


def read_run(
    workdir: str | Path, *, overrides: dict[str, str] | None = None, what: str = "a run directory"
) -> Settings:
    """The records of the config a run saved (`RUN/config.json`); `what` names a run in the
    error.

    Raises:
      UserError: no config.json in `workdir`, or as `read`.
    """
    path = workdir_path(workdir) / "config.json"
    if not path.is_file():
        raise UserError(f"{workdir} is not {what} (no config.json)")
    return read(path, overrides=overrides)


def from_saved(
    data: dict,
    *,
    source: str,
    overrides: dict[str, str] | None = None,
    pipeline: bool = False,
) -> Settings:
    """The records of a config's JSON form (a checkpoint's config item); `source` names it in
    the errors. `pipeline`: with the self-play `Pipeline` (the shapes of a run's whole
    state), which a config that no longer builds one refuses.

    Raises:
      UserError: as `read`, or as `build.make_pipeline` with `pipeline`.
    """
    return _built(config_lib.from_dict(data, source=source), overrides, pipeline=pipeline)


def tunable(data: dict, *, source: str) -> dict:
    """The tunable keys' values (`build.tunable_values`) of a config's JSON form."""
    return build.tunable_values(config_lib.from_dict(data, source=source))


def differences(path: str | Path, given_json: str) -> list[str]:
    """The computing keys whose values differ between the config saved at `path` and the
    JSON form `given_json` (`config.config_differences`).

    Raises:
      UserError: the saved config is not a valid config.
    """
    saved = config_lib.read_config_file(path)
    return config_lib.config_differences(saved.to_dict(), json.loads(given_json))


def _built(config, overrides: dict[str, str] | None, *, pipeline: bool = False) -> Settings:
    if overrides:
        config = config_lib.apply_overrides(config, overrides)
    return build.make_settings(config, pipeline=pipeline)
