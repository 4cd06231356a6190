#!/usr/bin/env bash
# Validation loss independent of the rank count (CPU ranks, tiny config):
# the same initial weights (same seed) evaluated at step 0 by 1, 2 and 3
# ranks over eval_batches = 7 micro-batches (split unevenly over 2 and 3
# ranks) must report the same val loss within 1e-6 relative (it is the same
# sum in the same order: measured bit for bit). Before eval_batches counted
# global micro-batches, 2 ranks evaluated twice the windows of 1.
# usage: safety_val_ranks.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
# total_batch 768 = 2 x 64 x 6: divisible by 1, 2 and 3 ranks.
run=(configs/tiny.ini micro_batch=2 total_batch=768 max_steps=1 warmup_steps=0 eval_every=1
     eval_batches=7 log_every=1 out_dir="$work")
for np in 1 2 3; do
  mpi_run -np $np "$bin" "${run[@]}" run_name=np$np >"$work/np$np.log" 2>&1 || fail "np=$np" "$work/np$np.log"
done
/usr/bin/python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def val(np_):
    evals = [json.loads(l) for l in open(f"{work}/np{np_}/metrics.jsonl") if '"eval"' in l]
    return [e["val_loss"] for e in evals if e["step"] == 0][0]
ref = val(1)
worst = 0.0
for n in (2, 3):
    v = val(n)
    rel = abs(v - ref) / ref
    worst = max(worst, rel)
    print(f"np={n}: step-0 val loss {v!r} (np=1: {ref!r}), relative difference {rel:.2e}")
assert worst <= 1e-6, f"val loss depends on the rank count: {worst:.2e} > 1e-6"
print("val loss independent of the rank count: OK")
PY
