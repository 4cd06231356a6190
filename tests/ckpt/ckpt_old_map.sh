#!/usr/bin/env bash
# Checkpoints written before the optimizer seam: the tiny config runs 8
# steps at 3 ranks saving at step 4; that checkpoint is rewritten as the
# trainer wrote them before 2026-12 (tests/ckpt/rewrite_shard_map.py even:
# the state re-sliced by the old even shard map, no `optimizer` attribute).
# Resumed at 3 ranks it gives the uninterrupted run's losses bit for bit
# (its arrays are read by range from the old slices into the new map's);
# at 2 ranks within 1e-5 (another rank count sums in another order). A
# checkpoint whose model.h5 names another optimizer is refused with exit 2
# naming both, before its run directory is made. usage: ckpt_old_map.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
run=(configs/tiny.ini micro_batch=4 total_batch=3072 max_steps=8 warmup_steps=2 eval_every=0
     log_every=1 checkpoint_every=4 out_dir="$work")

mpi_run -np 3 "$bin" "${run[@]}" run_name=np3 >"$work/np3.log" 2>&1 || fail "3-rank run" "$work/np3.log"
mkdir -p "$work/old"
cp -r "$work/np3/step_00000004" "$work/old/"
/usr/bin/python3 tests/ckpt/rewrite_shard_map.py even "$work/old/step_00000004"
for np in 3 2; do
  mpi_run -np "$np" "$bin" "${run[@]}" resume="$work/old/step_00000004" run_name="old_np$np" \
    >"$work/old_np$np.log" 2>&1 || fail "resume of the old-format checkpoint at $np ranks" "$work/old_np$np.log"
  grep "^resumed from" "$work/old_np$np.log"
done
/usr/bin/python3 tests/lib/ckpt_check.py losses "$work/np3" "$work/old_np3" 5 8 0
/usr/bin/python3 tests/lib/ckpt_check.py losses "$work/np3" "$work/old_np2" 5 8 1e-5

mkdir -p "$work/foreign"
cp -r "$work/np3/step_00000004" "$work/foreign/"
/usr/bin/python3 tests/ckpt/rewrite_shard_map.py optimizer "$work/foreign/step_00000004" sgd
rc=0
mpi_run -np 2 "$bin" "${run[@]}" resume="$work/foreign/step_00000004" run_name=other \
  >"$work/other.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a checkpoint of optimizer sgd resumed with exit $rc (expected 2)" "$work/other.log"
grep -q "its optimizer state is sgd's, and this run uses adamw" "$work/other.log" ||
  fail "the refusal does not name both optimizers" "$work/other.log"
grep "error" "$work/other.log"
[ ! -e "$work/other" ] || fail "the refused resume made its run directory"
echo "old map: OK"
