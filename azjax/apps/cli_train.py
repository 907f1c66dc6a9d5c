"""`azjax train` (and `export-state`) on the command line: the run's config from the flags,
overrides, the run itself or its export, `--print-config` and `--memory-plan`, and joining
the other processes of a multi-host run (`joined`, which `azjax sweep` uses too). An entry
point like `cli`: a command imports only what it runs, so `azjax --help` loads no jax."""

import json
import sys


def train(args, overrides) -> int:
    if args.print_config or args.memory_plan:
        return _print_config(args, overrides)
    return joined(args, lambda: _train_run(args, overrides))


def export_state(args) -> int:
    from azjax.runs import export_state as export_lib  # noqa: PLC0415

    print(export_lib.summary(export_lib.export(args.workdir, args.out, step=args.step)))
    return 0


def joined(args, command) -> int:
    """Runs `command()` in this process joined to the others the flags name (one process
    without them)."""
    from azjax import compile_cache  # noqa: PLC0415
    from azjax.apps import console  # noqa: PLC0415
    from azjax.runs import distributed  # noqa: PLC0415

    def lost(message: str, status: int = 1) -> None:
        # JAX's runtime waits for (or aborts on) the missing processes: exit without it.
        sys.stdout.flush()
        print(f"azjax: error: {message}", file=sys.stderr, flush=True)
        console.abandon(status)

    watch = None
    try:
        # Before anything compiles; a multi-process CPU run turns it off again (`initialize`).
        compile_cache.enable(not getattr(args, "no_compile_cache", False))
        # Before anything computes with JAX (loading a config builds its game).
        distributed.initialize(
            args.coordinator,
            args.num_processes,
            args.process_id,
            auto=args.distributed == "auto",
            timeout_s=args.distributed_timeout,
        )
        if args.coordinator and args.process_id:  # process 0 serves the coordination
            watch = distributed.CoordinatorWatch(args.coordinator, lost)
        return command()
    except distributed.JoinError as error:
        lost(str(error), error.exit_code)
    finally:
        if watch is not None:
            watch.stop()


def _train_run(args, overrides) -> int:
    from azjax import interrupt
    from azjax.apps import api  # noqa: PLC0415
    from azjax.training import compiled  # noqa: PLC0415

    config, workdir = _train_config(args, overrides)
    mesh = compiled.make_mesh(args.devices) if args.devices else None
    if interrupt.requested():
        print("azjax: interrupted before training started", file=sys.stderr)
        return 130
    try:
        api.train(
            config,
            workdir,
            allow_config_change=args.allow_config_change,
            mesh=mesh,
            progress="lines",
            resume_from=args.resume_from,
        )
    except KeyboardInterrupt:
        return 130
    return 0


def _train_config(args, overrides):
    """The config `azjax train` runs and its workdir: `--config` with the overrides, or with
    no `--config` the config a `--workdir` run saved (`RUN/config.json`), so that a run
    resumes from its directory alone, else the `--resume-from` export's (checked by `train`).

    Raises:
      UserError: a bad config or override, or, resuming, an override of a key that a run may
        not change (unless `--allow-config-change`).
    """
    from pathlib import Path  # noqa: PLC0415

    from azjax import config as config_lib  # noqa: PLC0415
    from azjax.paths import workdir_path  # noqa: PLC0415
    from azjax.types import UserError  # noqa: PLC0415

    if args.resume_from is not None and args.workdir is None:
        raise UserError("--resume-from OUT starts a new run: name its --workdir")
    workdir = args.workdir
    if workdir is None and args.config is not None:
        # `--config RUN/config.json` (or `--config RUN`) resumes RUN.
        source = Path(config_lib.split_variant(args.config)[0])
        if source.name == "config.json" and source.is_file():
            workdir = str(source.parent)
        elif source.is_dir() and (source / "config.json").is_file():
            workdir = str(source)
    saved_path = workdir_path(workdir) / "config.json" if workdir is not None else None
    if args.config is None and saved_path is not None and saved_path.is_file():
        config = config_lib.read_config_file(saved_path)
    elif args.config is None and args.resume_from is not None:
        from azjax.runs.export_state import Export  # noqa: PLC0415

        config = config_lib.load_config(str(Export.open(args.resume_from).path))
    else:
        config = config_lib.load_config(args.config)
    config_lib.apply_overrides(config, overrides)
    workdir = workdir or f"runs/{config.name}"
    saved_path = workdir_path(workdir) / "config.json"
    if saved_path.is_file() and not args.allow_config_change:
        saved = config_lib.read_config_file(saved_path)
        differences = config_lib.config_differences(
            saved.to_dict(), json.loads(config_lib.to_json(config))
        )
        if differences:
            changed = "; ".join(differences)
            raise UserError(
                f"{workdir} holds a run with a different config ({changed}); a resumed run "
                f"may change only {', '.join(config_lib.RESUMABLE_KEYS)}: use another "
                "--workdir, or pass --allow-config-change to resume anyway"
            )
    return config, workdir_path(workdir)  # gs:// stays a URI


def _print_config(args, overrides) -> int:
    """`azjax train --print-config`: the resolved config as JSON; with `--memory-plan`, then
    its memory plan on the run's devices (`bench.memory`, which compiles). Nothing trains,
    nothing is written."""
    from azjax import config as config_lib  # noqa: PLC0415

    config, workdir = _train_config(args, overrides)
    print(config_lib.to_json(config), flush=True)
    if not args.memory_plan:
        return 0
    from azjax.apps.bench import memory  # noqa: PLC0415  (loads jax)

    if args.devices:
        memory.check_devices(config, args.devices)
        memory.use_cpu_devices(args.devices)  # on a CPU-only machine: the real sharded programs
    import jax  # noqa: PLC0415

    devices = args.devices or jax.device_count()
    state = "resumes" if (workdir / "config.json").is_file() else "starts"
    print(
        f"\nazjax train {state} {workdir}; memory plan on {devices} device(s), compiling the "
        "step functions (a minute or more for a large config)",
        file=sys.stderr,
        flush=True,
    )
    memory.check_devices(config, devices)
    plan = memory.plan(config, devices, log=lambda m: print(f"  {m}", file=sys.stderr, flush=True))
    print()
    print(plan.table(), flush=True)
    return 0
