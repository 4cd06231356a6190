#!/usr/bin/env bash
# Resume on another rank count: the tiny config (global batch 3072 tokens,
# micro-batch 4: grad_accum 3 at 4 ranks, 6 at 2, 4 at 3, 12 at 1) runs 8
# steps at 4 ranks, saving at step 4. The step-4 checkpoint is resumed at 2
# and 3 ranks (ZeRO-1: each reads its new slice of master, m, v from the
# overlapping old shards) and at 1 rank with zero_stage 0 (the whole state
# from all four shards). Steps 5..8 must give the losses of the
# uninterrupted 4-rank run within 1e-5 relative (the sums of gradients run
# in another order at another rank count: tests/dist/ddp_compare.py says why
# they differ at all). usage: ckpt_reshard.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
run=(configs/tiny.ini micro_batch=4 total_batch=3072 max_steps=8 warmup_steps=2 eval_every=0
     log_every=1 checkpoint_every=4 out_dir="$work")

mpi_run -np 4 "$bin" "${run[@]}" run_name=np4 >"$work/np4.log" 2>&1 || fail "4-rank run" "$work/np4.log"
for spec in "2 1" "3 1" "1 0"; do
  read -r np z <<<"$spec"
  name=np${np}_z$z
  mpi_run -np "$np" "$bin" "${run[@]}" zero_stage="$z" resume="$work/np4/step_00000004" \
    run_name="$name" >"$work/$name.log" 2>&1 || fail "resume at $np ranks" "$work/$name.log"
  grep "^resumed from" "$work/$name.log"
  /usr/bin/python3 tests/lib/ckpt_check.py losses "$work/np4" "$work/$name" 5 8 1e-5
  grep -q "^world 4$" "$work/np4/step_00000004/COMPLETE" && grep -q "^world $np$" "$work/$name/step_00000008/COMPLETE" \
    || fail "expected a 4-rank checkpoint resumed into a $np-rank one"
done
echo "reshard: OK"
