#!/usr/bin/env bash
# Data-parallel equivalence: the tiny config for 20 steps with the same global
# batch (1536 tokens: micro-batch 2, 12 sequences, so 12, 6, 4 and 3
# micro-steps) at 1, 2, 3 and 4 ranks (the shards along whole tensors are
# uneven at every count), ZeRO-1 and plain all-reduce, must give the same
# loss at every step and the same final parameters as one rank. One rank
# runs once: at either zero_stage it owns the whole buffer and runs the same
# code. usage: ddp_equivalence.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source tests/lib/mpi_env.sh
rm -rf "$work"
for np in 1 2 3 4; do
  for z in 0 1; do
    [ "$np$z" = 11 ] && continue
    mpi_run -np $np "$bin" configs/tiny.ini micro_batch=2 total_batch=1536 max_steps=20 \
      warmup_steps=5 eval_every=0 log_every=1 zero_stage=$z bucket_mb=1 \
      out_dir="$work" run_name=np${np}_z$z >"$work.np${np}_z$z.log" 2>&1 \
      || { cat "$work.np${np}_z$z.log"; exit 1; }
  done
done
/usr/bin/python3 tests/dist/ddp_compare.py "$work" np1_z0 np2_z0 np2_z1 np3_z0 np3_z1 np4_z0 np4_z1
