"""A sweep worker spanning several processes (a pod slice), where every host must run the
same program: process 0 is the worker (it alone talks to Optuna, writes the sweep's files and
judges the trials), and the other processes follow it, training each batch of trials with it
as one run or population over the devices of all of them (`train`, `population`: their
host loop agrees on stops, so a pruned trial or a signal stops every process at once).

Process 0 sends each batch with `share` before training it and `release` when the sweep
ends; a follower (`follow`) trains what it is sent until then.
"""

import dataclasses
import json

from azjax import compile_cache
from azjax import config as config_lib
from azjax.apps import api
from azjax.runs import distributed
from azjax.training import pbt as pbt_lib


def share(configs, workdirs, pbt: pbt_lib.PBT | None) -> None:
    """Process 0: sends the followers the batch it trains next."""
    if distributed.process_count() == 1:
        return
    distributed.broadcast_json(
        {
            "configs": [json.loads(config_lib.to_json(c)) for c in configs],
            "workdirs": [str(w) for w in workdirs],
            "pbt": None if pbt is None else dataclasses.asdict(pbt),
        }
    )


def release(*, interrupted: bool) -> None:
    """Process 0: the sweep ends (`interrupted`: stopped by a signal); the followers stop."""
    if distributed.process_count() > 1:
        distributed.broadcast_json({"interrupted": True} if interrupted else None)


def follow(*, progress: str = "none") -> None:
    """A process other than 0: trains each batch process 0 shares, with it, until released.

    Raises:
      KeyboardInterrupt: the sweep was stopped (a signal to any process).
    """
    while True:
        message = distributed.broadcast_json()
        if message is None:
            return
        if message.get("interrupted"):
            raise KeyboardInterrupt
        configs = [config_lib.from_dict(c, source="process 0") for c in message["configs"]]
        pbt = None
        if message["pbt"] is not None:
            pbt = pbt_lib.PBT(
                **{k: tuple(v) if isinstance(v, list) else v for k, v in message["pbt"].items()}
            )
        compile_cache.release(above=compile_cache.RELEASE_ABOVE)  # the last trials' programs
        try:
            if len(configs) == 1:
                api.train(configs[0], message["workdirs"][0], progress=progress)
            else:
                api.train_population(configs, message["workdirs"], progress=progress, pbt=pbt)
        except KeyboardInterrupt:
            raise
        except Exception:  # noqa: BLE001  (process 0 fails the trials; go on as it does)
            continue
