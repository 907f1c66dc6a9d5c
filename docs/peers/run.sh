#!/usr/bin/env bash
# Peers side by side (docs/peers.md): azjax and a peer codebase, each for the same wall-clock
# minutes on the same machine, one after the other on an idle machine, then every checkpoint
# rated on one ladder and head to head (and, in Connect Four, against perfect play).
#   connect_four: pgx's AlphaZero example (JAX, mctx)
#   gomoku:       AlphaZero_Gomoku (PyTorch, Python tree search) on 6x6, four in a row
#   openspiel:    OpenSpiel's AlphaZero (JAX/Flax, Python tree search) on Connect Four, rated
#                 beside the azjax run of `connect_four` in the same OUT
#
# usage: bash docs/peers/run.sh OUT [MINUTES] [connect_four|gomoku|openspiel]   (from the repository,
# its venv active). The peer's code is fetched at a named commit into OUT and run from there;
# none of it enters this repository.
set -euo pipefail
OUT=$(realpath -m "$1"); MINUTES=${2:-30}; GAME=${3:-connect_four}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PGX_COMMIT=079b2d730e3845c25d49d99e0ccf9a374dd04cb9  # sotetsuk/pgx, 2025-02-16
AGZ_COMMIT=0b4917ccd84ea2771706701015eb26182c1159f4  # junxiaosong/AlphaZero_Gomoku, 2024-04-24
OPEN_SPIEL=open-spiel==2.0.2  # google-deepmind/open_spiel's wheel on PyPI
mkdir -p "$OUT" && cd "$OUT"
RATE="rate-venv/bin/python $REPO/docs/peers/rate.py"

if [ "$GAME" = gomoku ]; then
  if [ ! -d agz ]; then
    git init -q agz && git -C agz fetch -q --depth 1 \
      https://github.com/junxiaosong/AlphaZero_Gomoku "$AGZ_COMMIT"
    git -C agz checkout -q FETCH_HEAD
  fi
  # Its PyTorch network on PyTorch's CPU build (its Theano default no longer installs).
  [ -d agz-venv ] || { python3 -m venv agz-venv && agz-venv/bin/pip install -q torch==2.13.0; }
  if [ ! -d rate-venv ]; then
    python3 -m venv rate-venv && rate-venv/bin/pip install -q -e "$REPO" torch==2.13.0
  fi
  # azjax: gomoku_6x6_k4 as shipped, without its in-run evaluation (AlphaZero_Gomoku's is
  # skipped too), a checkpoint every 10 iterations, all kept.
  [ -d azjax_g6 ] || azjax train --config gomoku_6x6_k4 --workdir azjax_g6 \
    --config.eval.every=0 --config.train.keep_checkpoints=1000 \
    --config.train.checkpoint_every=10 --config.train.max_minutes="$MINUTES" > azjax_g6.log 2>&1
  # AlphaZero_Gomoku: train.py's own settings (6x6, four in a row, 400 playouts, batches of
  # 512, 5 epochs, KL-adaptive rate), its network saved each minute.
  [ -d agz_g6 ] || agz-venv/bin/python "$REPO/docs/peers/agz_train.py" agz agz_g6 "$MINUTES" \
    > agz_g6.log 2>&1
  $RATE timeline azjax_g6 agz_g6 --minutes 5,10,15,20,30 | tee timeline.tsv
  mapfile -t AZJAX < <(awk '$3 ~ /^azjax:/ {print $3}' timeline.tsv)
  mapfile -t AGZ < <(awk '$3 ~ /^agz:/ {print $3}' timeline.tsv)
  COMMON=(--game gomoku_6x6_k4 --agz-dir agz)
  $RATE ladder "${AZJAX[@]}" "${AGZ[@]}" "${COMMON[@]}" --simulations 32 \
    --opponents mcts:200,mcts:1000 --games 100 --out ladder.jsonl
  $RATE ladder "${AZJAX[@]}" "${AGZ[@]}" "${COMMON[@]}" --simulations 0 \
    --opponents mcts:200 --games 100 --out ladder.jsonl
  for SIMS in 0 32 400; do
    $RATE h2h "${AZJAX[-1]}" "${AGZ[-1]}" "${COMMON[@]}" --simulations $SIMS --games 200 \
      --out h2h.jsonl
  done
  exit
fi

if [ "$GAME" = openspiel ]; then
  # Its own package in its own venv; the wheel declares none of the JAX stack its AlphaZero
  # imports, so the versions azjax's tests run it with come beside it.
  [ -d os-venv ] || { python3 -m venv os-venv && os-venv/bin/pip install -q "$OPEN_SPIEL" \
    jax==0.10.2 flax==0.12.8 chex==0.1.92 optax==0.2.8 orbax-checkpoint==0.12.8; }
  if [ ! -d rate-venv ]; then
    python3 -m venv rate-venv && rate-venv/bin/pip install -q -e "$REPO[solver]" "$OPEN_SPIEL"
  fi
  # Its example's settings (os_train.py) with the network scaled to azjax's (32 channels x 3
  # blocks, as for pgx): at its 256 x 2 its two actors played 12 games in the first 3.5
  # minutes here, a learner step (2,048 positions) about every half hour.
  [ -d os_c4 ] || os-venv/bin/python "$REPO/docs/peers/os_train.py" os_c4 "$MINUTES" \
    nn_width=32 nn_depth=3 > os_c4.log 2>&1
  [ -d azjax_c4 ] || { echo "run the connect_four protocol into $OUT first" >&2; exit 2; }
  $RATE timeline azjax_c4 os_c4 --minutes 5,10,15,20,30 | tee timeline_os.tsv
  mapfile -t AZJAX < <(awk '$3 ~ /^azjax:/ {print $3}' timeline_os.tsv)
  mapfile -t OS < <(awk '$3 ~ /^os:/ {print $3}' timeline_os.tsv | uniq)  # each rated once
  COMMON=(--game connect_four)
  $RATE ladder "${OS[@]}" "${COMMON[@]}" --simulations 32 --opponents mcts:200,mcts:800 \
    --games 100 --out ladder.jsonl
  $RATE ladder "${OS[@]}" "${COMMON[@]}" --simulations 0 --opponents mcts:200 --games 100 \
    --out ladder.jsonl
  for SIMS in 0 32 200; do
    $RATE mistakes "${OS[@]}" "${COMMON[@]}" --simulations $SIMS --positions 1000 \
      --out mistakes.jsonl
  done
  for SIMS in 32 200; do
    $RATE h2h "${AZJAX[-1]}" "${OS[-1]}" "${COMMON[@]}" --simulations $SIMS --games 200 \
      --out h2h.jsonl
  done
  exit
fi

# pgx's example and its requirements (examples/alphazero/requirements.txt) in their own venv.
if [ ! -d pgx ]; then
  git init -q pgx && git -C pgx fetch -q --depth 1 https://github.com/sotetsuk/pgx "$PGX_COMMIT"
  git -C pgx checkout -q FETCH_HEAD -- examples/alphazero
fi
if [ ! -d venv ]; then
  python3 -m venv venv
  # Training: the example's requirements as of its commit (jax 0.10 removed the
  # `jax.device_put_replicated` it calls).
  venv/bin/pip install -q "jax[cpu]==0.5.3" "pgx==2.6.0" "dm-haiku==0.0.14" "mctx==0.0.5" \
    "optax==0.2.4" omegaconf pydantic wandb
fi
if [ ! -d rate-venv ]; then  # rating: azjax with Haiku beside it, to run pgx's network
  python3 -m venv rate-venv && rate-venv/bin/pip install -q -e "$REPO[solver]" dm-haiku
fi

# azjax: the connect_four experiment as shipped, without its in-run evaluation (the peers'
# runs do not rate either), a checkpoint every 10 iterations, all kept.
[ -d azjax_c4 ] || azjax train --config connect_four --workdir azjax_c4 \
  --config.eval.every=0 --config.train.keep_checkpoints=1000 \
  --config.train.checkpoint_every=10 --config.train.max_minutes="$MINUTES" > azjax_c4.log 2>&1
# pgx: its recommended settings (Gumbel AlphaZero, 32 simulations, Adam 1e-3, batches of 4096,
# 256-ply self-play chunks), scaled to this CPU where it cannot run them (128 x 6 blocks and
# 1,024 games would not finish one iteration in 30 minutes on 2 cores): azjax's network size
# (32 channels x 3 blocks) and self-play batch (128 games); a checkpoint every iteration.
[ -d pgx_c4 ] || venv/bin/python "$REPO/docs/peers/pgx_train.py" pgx/examples/alphazero \
  pgx_c4 "$MINUTES" env_id=connect_four seed=0 num_channels=32 num_layers=3 \
  selfplay_batch_size=128 eval_interval=1 > pgx_c4.log 2>&1

# The checkpoints nearest below 5, 10, 15, 20 and 30 minutes of each run.
$RATE timeline azjax_c4 pgx_c4 --minutes 5,10,15,20,30 | tee timeline.tsv
mapfile -t AZJAX < <(awk '$3 ~ /^azjax:/ {print $3}' timeline.tsv)
mapfile -t PGX < <(awk '$3 ~ /^pgx:/ {print $3}' timeline.tsv)
COMMON=(--game connect_four --pgx-example pgx/examples/alphazero)
$RATE ladder "${AZJAX[@]}" "${PGX[@]}" "${COMMON[@]}" --simulations 32 \
  --opponents mcts:200,mcts:800 --games 100 --out ladder.jsonl
$RATE ladder "${AZJAX[@]}" "${PGX[@]}" "${COMMON[@]}" --simulations 0 \
  --opponents mcts:200 --games 100 --out ladder.jsonl
for SIMS in 0 32 200; do
  $RATE mistakes "${AZJAX[@]}" "${PGX[@]}" "${COMMON[@]}" --simulations $SIMS \
    --positions 1000 --out mistakes.jsonl
done
# Head to head (200 games, half as first player, 2 random plies): at the end of each run, and
# after 10 minutes.
for SIMS in 32 200; do
  $RATE h2h "${AZJAX[-1]}" "${PGX[-1]}" "${COMMON[@]}" --simulations $SIMS --games 200 --out h2h.jsonl
done
$RATE h2h "${AZJAX[1]}" "${PGX[1]}" "${COMMON[@]}" --simulations 32 --games 200 --out h2h.jsonl
