#!/usr/bin/env bash
# The fixed-seed runs of the redesign (issue "A core a researcher can change in an afternoon"):
# recorded at 96a7d05 (checksums_96a7d05.txt); the same numbers after each move.
# usage: run.sh OUTDIR   (from the repository root, venv active)
set -euo pipefail
OUT=$1; rm -rf "$OUT"; mkdir -p "$OUT"
SMALL="--config.network.channels=16 --config.network.num_blocks=2 --config.network.value_hidden=16 --config.search.num_simulations=8 --config.selfplay.batch_size=16 --config.selfplay.num_steps=8 --config.replay.capacity=8192 --config.replay.min_size=32 --config.learner.batch_size=32 --config.learner.updates_per_iteration=2 --config.train.checkpoint_every=2 --config.eval.every=2 --config.eval.num_games=4 --config.eval.num_simulations=4 --config.train.max_minutes=0 --config.seed=7"
export JAX_PLATFORMS=cpu
for game in tic_tac_toe connect_four go_9x9 xiangqi; do
  azjax train --config $game --workdir $OUT/$game $SMALL --config.train.num_iterations=4 --config.eval.opponents='("random",)' > $OUT/$game.log 2>&1
done
# A resumed run: 2 iterations, then 2 more (Connect Four).
azjax train --config connect_four --workdir $OUT/resumed $SMALL --config.train.num_iterations=2 --config.eval.opponents='("random",)' > $OUT/resumed.log 2>&1
azjax train --workdir $OUT/resumed --config.train.num_iterations=4 >> $OUT/resumed.log 2>&1
# A population of 2 (tic-tac-toe, two learning rates).
python docs/redesign/population.py $OUT/pop >> $OUT/pop.log 2>&1
python docs/redesign/checksums.py $OUT > $OUT/checksums.txt
