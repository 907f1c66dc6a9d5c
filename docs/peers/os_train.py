"""Runs OpenSpiel's AlphaZero (`open_spiel.python.algorithms.alpha_zero`, the pip package
`open-spiel` at a named version) on Connect Four for a wall-clock budget, with the settings of
its example (`open_spiel/python/examples/alpha_zero.py`'s flag defaults: Flax linen ResNet
256 wide x 2 blocks, 40 simulations, UCT c 1.41, Adam at 1e-3, batches of 128, a replay of
8,192 states each learned from 4 times, 2 actor processes).

What differs from `python -m open_spiel.python.examples.alpha_zero --game=connect_four`,
none of it in learning: its evaluator processes (monitoring games against MCTS) are off, as
azjax's and the other peers' in-run evaluations are here; each learner step's network is
kept (`checkpoint_freq=1`) so `docs/peers/rate.py` can place it on the minutes axis by its
file time; `start.json` records the wall-clock start; the budget stops the learner the way
Ctrl-C does (its actors are told to stop and joined). `key=value` arguments change
fields of its `Config` (`nn_width=32 nn_depth=3`).

usage: python os_train.py OUT MINUTES [key=value ...]
"""

import json
import os
import signal
import sys
import time

from open_spiel.python.algorithms.alpha_zero import alpha_zero
from open_spiel.python.utils import spawn


def main():
    out, minutes = os.path.abspath(sys.argv[1]), float(sys.argv[2])
    overrides = dict(arg.split("=", 1) for arg in sys.argv[3:])
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "start.json"), "w") as f:
        json.dump({"start": time.time(), "minutes": minutes, "overrides": overrides}, f)
    config = alpha_zero.Config(
        game="connect_four",
        path=out,
        learning_rate=1e-3,
        weight_decay=1e-4,
        decouple_weight_decay=False,
        train_batch_size=2**7,
        replay_buffer_size=2**13,
        replay_buffer_reuse=4,
        max_steps=0,
        checkpoint_freq=1,
        actors=2,
        evaluators=0,
        evaluation_window=50,
        eval_levels=7,
        uct_c=1.41,
        max_simulations=40,
        policy_alpha=1.0,
        policy_epsilon=0.25,
        temperature=1.0,
        temperature_drop=2,
        nn_model="resnet",
        nn_width=2**8,
        nn_depth=2,
        observation_shape=None,
        output_size=None,
        verbose=False,
        quiet=True,
        nn_api_version="linen",
    )
    fields = {name: type(getattr(config, name)) for name in overrides}
    config = config.replace(**{name: fields[name](value) for name, value in overrides.items()})

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGALRM, stop)
    signal.alarm(max(1, round(minutes * 60)))
    alpha_zero.alpha_zero(config)


if __name__ == "__main__":
    with spawn.main_handler():
        main()
