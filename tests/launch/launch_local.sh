#!/usr/bin/env bash
# launch/local.sh runs the demo (tiny.ini) as it is on 1, 3, 4 and 8 CPU
# ranks (DEVICE=cpu, as on 1-8 GPUs): where tiny.ini's 1024-token step does
# not divide, it lowers micro_batch (4 and 8 ranks: the same global batch, so
# the same step-1 loss as one rank) or fits total_batch (3 ranks: 1536), and
# says so; a total_batch set on the command line is left to the trainer.
# usage: launch_local.sh GPT2_DDP WORK_DIR  (the launcher uses BUILD_DIR=dir of GPT2_DDP)
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
rm -rf "$work"; mkdir -p "$work"
export BUILD_DIR DEVICE=cpu
BUILD_DIR=$(dirname "$bin")
fail() { echo "FAIL: $*"; [ -z "${2:-}" ] || cat "$2"; exit 1; }
args=(configs/tiny.ini max_steps=2 warmup_steps=1 eval_every=0 log_every=1 out_dir="$work")
loss1() { sed -n 's/^step *1\/2 | loss \([0-9.]*\) .*/\1/p' "$1"; }
for r in 1 3 4 8; do
  RANKS=$r launch/local.sh "${args[@]}" run_name=np$r >"$work/np$r.log" 2>&1 || fail "RANKS=$r: exit $?" "$work/np$r.log"
  echo "RANKS=$r: $(grep '^launch: total_batch' "$work/np$r.log" | sed 's/.*running with //') | $(grep '^batch:' "$work/np$r.log") | step-1 loss $(loss1 "$work/np$r.log")"
done
grep -q "batch: 1024 tokens/step = 1 ranks x 2 micro-steps x 8 x 64" "$work/np1.log" || fail "1 rank: tiny.ini as it is" "$work/np1.log"
! grep -q "^launch: total_batch" "$work/np1.log" || fail "1 rank: nothing to fit" "$work/np1.log"
grep -q "batch: 1536 tokens/step = 3 ranks x 1 micro-steps x 8 x 64" "$work/np3.log" || fail "3 ranks: total_batch 1536" "$work/np3.log"
grep -q "batch: 1024 tokens/step = 4 ranks x 1 micro-steps x 4 x 64" "$work/np4.log" || fail "4 ranks: micro_batch 4" "$work/np4.log"
grep -q "batch: 1024 tokens/step = 8 ranks x 1 micro-steps x 2 x 64" "$work/np8.log" || fail "8 ranks: micro_batch 2" "$work/np8.log"
for r in 4 8; do
  /usr/bin/python3 -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a - b) > 1e-5 * a)" \
    "$(loss1 "$work/np1.log")" "$(loss1 "$work/np$r.log")" || fail "RANKS=$r: step-1 loss differs from one rank's"
done
set +e
RANKS=3 launch/local.sh "${args[@]}" run_name=explicit total_batch=1024 >"$work/explicit.log" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "total_batch = 1024 tokens is not a multiple" "$work/explicit.log" \
  || fail "an explicit total_batch=1024 on 3 ranks: exit $rc" "$work/explicit.log"
echo "launch_local: OK"
