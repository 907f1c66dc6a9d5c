"""`azjax bench --memory`: the memory plan of one experiment or of every one, printed (the
plan: `bench.memory`; its text: `MemoryPlan.table`)."""

import sys

from azjax import config as config_lib
from azjax.apps.bench import memory
from azjax.types import UserError


def main(args, overrides: dict[str, str]) -> int:
    """`azjax bench --memory`: prints the plan of `--config` or of every experiment."""
    named = args.config or args.game  # an experiment file, or a name in experiments/
    if args.all and named:
        raise UserError("--all plans every experiment: leave out --config and --game")
    sources = [named] if named else memory.experiment_names()
    if not sources:
        raise UserError(f"no experiment in {config_lib.EXPERIMENTS_DIR}")
    configs = []
    for source in sources:  # every config checked before the first compile
        config = config_lib.load_config(source)
        config_lib.apply_overrides(config, overrides)
        memory.check_devices(config, args.devices)
        configs.append(config)

    def log(message: str) -> None:
        print(f"  {message}", file=sys.stderr, flush=True)

    memory.use_cpu_devices(args.devices)
    for index, config in enumerate(configs):
        log(f"planning {config.name} for {args.devices} device(s)")
        result = memory.plan(config, args.devices, log=log)  # via the module: tests patch it
        print(("\n\n" if index else "") + result.table(), flush=True)
    return 0
