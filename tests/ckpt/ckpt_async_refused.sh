#!/usr/bin/env bash
# Background checkpoint saves refused (tiny config, 2 CPU ranks): snapshot
# buffers that do not fit the node (GPT2_TEST_SNAPSHOT_MEM_MB=10) make
# checkpoint_async=true exit 2 naming both sizes, before the run directory
# exists; checkpoint_async=auto on the CPU backend saves and waits. Apart
# from ckpt_async so that the sanitizer run (bad_input) takes only this.
# usage: ckpt_async_refused.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
# one save, at the last step
run=(configs/tiny.ini max_steps=4 warmup_steps=1 checkpoint_every=4 eval_every=0 out_dir="$work")

set +e
GPT2_TEST_SNAPSHOT_MEM_MB=10 mpi_run -np 2 "$bin" "${run[@]}" checkpoint_async=true run_name=small \
  >"$work/small.log" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || fail "small: exit $rc, expected 2" "$work/small.log"
[ "$(grep -c "error: checkpoint_async = true needs 0.0[0-9] GiB of host memory per node .* but a node has 0.01 GiB available" "$work/small.log")" = 1 ] \
  || fail "small: no single message naming both sizes" "$work/small.log"
[ ! -e "$work/small" ] || fail "small: the refused start left $work/small"
echo "small: $(grep -o "error: .*available" "$work/small.log")"
GPT2_TEST_SNAPSHOT_MEM_MB=10 mpi_run -np 2 "$bin" "${run[@]}" run_name=auto >"$work/auto.log" 2>&1 \
  || fail "auto on the CPU backend" "$work/auto.log"
grep -q "^checkpoint: step 4 saved to .*, [0-9.]* s; written in" "$work/auto.log" && ! grep -q "background" "$work/auto.log" \
  || fail "auto: the CPU backend's save did not wait" "$work/auto.log"
echo "checkpoint_async refused: OK"
