"""A run's compact resume state: what `azjax export-state WORKDIR OUT` writes and
`azjax train --workdir NEW --resume-from OUT` starts from.

A checkpoint holds the whole trainer state, the replay buffer and the self-play games in
progress included, so a run moves between machines only with its directory. An export is
what resumes it without them, small enough to commit: a folder OUT of

- `state.msgpack`: the network variables, the optimizer state, the learner step, the RNG key,
  the counters (iteration, games, positions), the run's seconds and the KL-adaptive rate's
  multiplier: every field of `TrainerState` but `EXCLUDED` (the replay and the games), as
  flax's msgpack of host arrays (`compact`);
- `config.json`: the resolved config the checkpoint was written with;
- `metrics.jsonl`: the records of iterations 1..n (the checkpoint's `history`);
- `gating/best_B.msgpack`: a gated run's best network, the one its last record names;
- `export.json`: the format and its version, the source run's name and iteration, azjax's
  version, each file's size in bytes (and the checkpoint's) and state.msgpack's SHA-256.

`export` writes it whole or not at all (a temporary folder renamed into place), reading the
checkpoint through `Checkpointer.restore` as host arrays (whatever devices wrote it).
`Export.open` reads one back, anything else refused in one line; `Export.seed` puts its
arrays into a run's fresh state (`steps.init_state`: an empty replay, self-play games at
their start), their shapes checked against it; `Export.continued_in` tells whether a run
directory's records begin with the export's (a run seeded from it).
"""

import dataclasses
import functools
import hashlib
import json
import os
import shutil
from pathlib import Path

import flax.serialization
import jax
import numpy as np

from azjax import __version__
from azjax.config import saved
from azjax.config.keys import config_text
from azjax.core.steps import TrainerState, init_state
from azjax.faults import is_disk_full
from azjax.paths import is_local, read_json, read_regular, read_text, workdir_path
from azjax.runs.checkpoint import read_checkpoint
from azjax.runs.metrics import parse_lines
from azjax.runs.state_layout import join_state, split_state
from azjax.types import RunError, UserError

FORMAT = "azjax-state"
VERSION = 1
EXCLUDED = ("buffer", "selfplay")  # the fields of `TrainerState` an export leaves out
STATE, CONFIG, METRICS, INFO = "state.msgpack", "config.json", "metrics.jsonl", "export.json"


def compact(state: TrainerState) -> dict:
    """The arrays of `state` an export holds: {"variables": ..., "opt_state": ..., "step":
    ..., "key": ..., "iteration": ..., ...}, every field but `EXCLUDED`."""
    variables, rest = split_state(state)
    return {"variables": variables, **{k: v for k, v in rest.items() if k not in EXCLUDED}}


def _local(out, what: str) -> Path:
    if "://" in str(out):
        raise UserError(f"{what} {out}: an export is a local folder (to commit); name a local path")
    return Path(out)


def _host_example(shape: jax.ShapeDtypeStruct) -> np.ndarray:
    """A host array of `shape`'s shape and dtype that holds no memory: restored as host."""
    return np.broadcast_to(np.zeros((), shape.dtype), shape.shape)


def _examples(workdir: Path, run_config: dict | None):
    """The example trees (params, trainer) of a checkpoint of `workdir` as a function of its
    config item (None: `run_config`, the run's config.json), host arrays of the shapes that
    config's state has."""

    @functools.cache
    def examples(text: str):
        settings = saved.from_saved(json.loads(text), source=f"a checkpoint of {workdir}",
                                    pipeline=True)  # fmt: skip
        key = jax.random.PRNGKey(0)
        shapes = jax.eval_shape(functools.partial(init_state, settings.pipeline), key)
        return jax.tree.map(_host_example, split_state(shapes))

    def like(config: dict | None):
        data = config if config is not None else run_config
        if data is None:
            raise UserError(f"{workdir} has no config.json")
        return examples(json.dumps(data, sort_keys=True))

    return lambda config: like(config)[0], lambda config: like(config)[1]


def _restore(workdir: Path, step: int | None):
    """The checkpoint `step` (None: the newest readable) of `workdir` as host arrays."""
    if not (workdir / "checkpoints").is_dir():
        raise UserError(f"{workdir} is not a run directory with checkpoints")
    try:
        run_config = read_json(workdir / CONFIG)
    except FileNotFoundError:
        run_config = None
    params_like, trainer_like = _examples(workdir, run_config)
    restored = read_checkpoint(workdir, step, params_like, trainer_like)
    config = restored.config if restored.config is not None else run_config
    history = restored.metrics
    if history is None and (workdir / METRICS).is_file():  # written before checkpoints held it
        history = parse_lines(read_text(workdir / METRICS))[0]
    history = [r for r in history or [] if r["iteration"] <= restored.step]
    if not history or history[-1]["iteration"] != restored.step:
        raise UserError(f"checkpoint {restored.step} of {workdir} has no metrics records up to it")
    return restored, config, history


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def export(workdir: str | Path, out: str | Path, *, step: int | None = None) -> dict:
    """Writes the export of `workdir`'s checkpoint `step` (None: its newest readable one) to
    the new folder `out`, whole or not at all; returns its `export.json` (with `workdir` and
    `out`).

    Raises:
      UserError: `out` exists and is not an empty folder, or is a cloud URI; `workdir` has
        no (readable) checkpoint, or no checkpoint `step`; a gated run's best network file
        is missing.
      RunError: the disk is full (nothing is left behind).
    """
    target = _local(out, "OUT")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UserError(f"{out} exists and is not an empty folder: name a new one")
    source = workdir_path(workdir)
    restored, config, history = _restore(source, step)
    state = {"variables": restored.params, **restored.trainer}
    state = {k: v for k, v in state.items() if k not in EXCLUDED}
    files = {
        STATE: flax.serialization.msgpack_serialize(flax.serialization.to_state_dict(state)),
        CONFIG: config_text(config).encode(),
        METRICS: "".join(json.dumps(r) + "\n" for r in history).encode(),
    }
    best = history[-1].get("gating/best_iteration")
    if best is not None:  # the network a gated run's self-play plays
        name = f"gating/best_{int(best)}.msgpack"
        try:
            files[name] = read_regular(source / name)
        except FileNotFoundError:
            raise UserError(
                f"{source / name} is missing: the best network of this gated run"
            ) from None
    info = {
        "format": FORMAT,
        "version": VERSION,
        "azjax": __version__,
        "source": source.name,  # no machine's path in a committed file
        "iteration": restored.step,
        "game": config.get("game"),
        "bytes": {name: len(data) for name, data in files.items()},
        "sha256": {STATE: hashlib.sha256(files[STATE]).hexdigest()},
    }
    if is_local(source):
        info["checkpoint_bytes"] = _size(source / "checkpoints" / str(restored.step))
    files[INFO] = (json.dumps(info, indent=2) + "\n").encode()
    _write_folder(target, files)
    return {**info, "workdir": str(workdir), "out": str(out)}


def summary(info: dict) -> str:
    """What `azjax export-state` prints of an export's `export.json`."""
    size, checkpoint = sum(info["bytes"].values()), info.get("checkpoint_bytes")
    against = f" (its checkpoint: {checkpoint / 1e3:,.0f} kB)" if checkpoint else ""
    return (
        f"wrote {info['out']}: iteration {info['iteration']} of {info['workdir']}, "
        f"{size / 1e3:,.0f} kB{against}; resume it with azjax train --workdir NEW "
        f"--resume-from {info['out']}"
    )


def _write_folder(target: Path, files: dict[str, bytes]) -> None:
    """Writes `files` into a temporary folder beside `target`, then renames it `target`."""
    temporary = target.parent / f".{target.name}.partial-{os.getpid()}"
    try:
        shutil.rmtree(temporary, ignore_errors=True)
        for name, data in files.items():
            path = temporary / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        os.rename(temporary, target)  # replaces an empty folder, refuses a full one
    except OSError as error:
        if is_disk_full(error):
            raise RunError(f"the disk is full: cannot write {target}") from None
        raise UserError(f"cannot write {target}: {error.strerror or error}") from None
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


@dataclasses.dataclass(frozen=True)
class Export:
    """An export read back (`open`): its folder, `export.json`, config and records."""

    path: Path
    info: dict
    config: dict
    history: list[dict]

    @property
    def iteration(self) -> int:
        """The iteration it was exported at: a run seeded from it goes on with the next."""
        return int(self.info["iteration"])

    @classmethod
    def open(cls, out: str | Path) -> "Export":
        """The export in folder `out` (its state is read by `seed`).

        Raises:
          UserError: `out` is missing, not an export, of another format version, or
            incomplete; one line.
        """
        path = _local(out, "--resume-from")
        if not path.is_dir():
            raise UserError(f"{out} does not exist (an export of `azjax export-state`)")
        what = f"{out} is not an export of `azjax export-state`"
        try:
            info = read_json(path / INFO, what=str(path / INFO))
        except FileNotFoundError:
            raise UserError(f"{what} (no {INFO})") from None
        if not isinstance(info, dict) or info.get("format") != FORMAT:
            raise UserError(f"{what} ({INFO} is not one)")
        if info.get("version") != VERSION:
            raise UserError(
                f"{out} is an export of format version {info.get('version')!r}; azjax "
                f"{__version__} reads version {VERSION}"
            )
        if not isinstance(info.get("iteration"), int):
            raise UserError(f"{path / INFO} is corrupt: no iteration")
        try:
            config = read_json(path / CONFIG)
            history, dropped = parse_lines(read_text(path / METRICS))
        except FileNotFoundError as error:
            raise UserError(f"{out} is incomplete: no {Path(error.filename).name}") from None
        iterations = [r["iteration"] for r in history]
        if dropped or iterations != list(range(1, info["iteration"] + 1)):
            raise UserError(f"{path / METRICS} is damaged: not the records 1..{info['iteration']}")
        return cls(path, info, config, history)

    def state(self) -> dict:
        """The arrays of `state.msgpack` as nested dicts of host arrays.

        Raises:
          UserError: the file is missing or is not the one `export.json` describes.
        """
        path = self.path / STATE
        try:
            data = read_regular(path)
        except FileNotFoundError:
            raise UserError(f"{self.path} is incomplete: no {STATE}") from None
        if hashlib.sha256(data).hexdigest() != self.info.get("sha256", {}).get(STATE):
            raise UserError(
                f"{path} is damaged: not the bytes {INFO} records (a Git LFS pointer, or "
                "changed since it was exported)"
            )
        return flax.serialization.msgpack_restore(data)

    def seed(self, like: TrainerState) -> TrainerState:
        """`like`, a run's fresh state (or its shapes, `jax.eval_shape`), with the export's
        arrays (host arrays) in place of its own but for the replay and the games.

        Raises:
          UserError: the export holds arrays of other shapes (a run of another game or
            network), or the state is damaged.
        """
        template = compact(like)
        arrays = self.state()
        try:
            restored = flax.serialization.from_state_dict(template, arrays)
        except (ValueError, KeyError, TypeError):
            restored = None
        differs = [name for name in template if not _same_shapes(template[name], restored, name)]
        if differs:
            raise UserError(
                f"{self.path} holds a run of another shape ({', '.join(differs)} differs from "
                "this config's): resume it with the config it was exported with"
            )
        variables = restored.pop("variables")
        return join_state(like, variables, {**split_state(like)[1], **restored})

    def continued_in(self, workdir) -> bool:
        """Whether `workdir`'s records begin with this export's: a run seeded from it."""
        path = workdir_path(workdir) / METRICS
        if not path.is_file():
            return False
        records, _ = parse_lines(read_text(path))
        return records[: len(self.history)] == self.history

    def install(self, workdir) -> None:
        """Copies the files a run seeded from the export reads besides its state (a gated
        run's best network) into `workdir`."""
        for name in self.info.get("bytes", {}):
            if name.startswith("gating/"):
                target = workdir_path(workdir) / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(read_regular(self.path / name))


def _same_shapes(like, restored: dict | None, name: str) -> bool:
    """Whether `restored[name]` has the structure, shapes and dtypes of `like`."""
    if restored is None or name not in restored:
        return False

    def same(a, b) -> bool:
        b = np.asarray(b)
        return tuple(a.shape) == b.shape and np.dtype(a.dtype) == b.dtype

    try:
        return all(jax.tree.leaves(jax.tree.map(same, like, restored[name])))
    except (ValueError, TypeError, AttributeError):
        return False
