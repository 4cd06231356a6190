#!/usr/bin/env bash
# The non-finite guard (2 CPU ranks, ZeRO-1, tiny config). GPT2_TEST_NAN_STEP
# poisons rank 0's gradients (NaN loss gradient) at the steps it names.
#  (1) NaN at step 3 of 6 (not a logged step): exit 0; step 3 logged as
#      skipped; its checkpoint holds the tensors of step 2 bit for bit
#      (weights, master, m, v; optimizer step 2): nothing was updated;
#  (2) the final weights and step-6 checkpoint equal, bit for bit, those of
#      a reference that skipped step 3's update: step 2's checkpoint with
#      the step counter and data position moved on by one step, resumed
#      (so the skip also advanced the data and the schedule but not AdamW's
#      t); a clean run ends elsewhere (the comparison can tell);
#  (3) NaN from step 5 on, max_bad_steps=3, checkpoints every 2 steps,
#      keep_last=2: exit 4 after step 7 with the message; nothing saved after
#      (no step 7/8, no partial directory, no model.h5); the newest
#      checkpoint (step 6, written at a skipped step) holds step 4's
#      tensors, is complete, and resumes to the end (exit 0).
# usage: safety_nonfinite.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
check=(/usr/bin/python3 tests/safety/safety_check.py)
run=(configs/tiny.ini max_steps=6 warmup_steps=1 eval_every=0 log_every=2 checkpoint_every=1
     keep_last=0 out_dir="$work")
nan_run() { # STEPS ARGS...: a 2-rank run with the hook
  local steps=$1; shift
  GPT2_TEST_NAN_STEP=$steps mpi_run -x GPT2_TEST_NAN_STEP -np 2 "$bin" "$@"
}

nan_run 3 "${run[@]}" run_name=nan >"$work/nan.log" 2>&1 || fail "NaN at step 3: exit $?" "$work/nan.log"
grep "skipped" "$work/nan.log"
"${check[@]}" skip_logged "$work/nan" 3
"${check[@]}" same_tensors "$work/nan/step_00000002" "$work/nan/step_00000003"

"${check[@]}" skip_reference "$work/nan/step_00000002" "$work/ref" 3
mpi_run -np 2 "$bin" "${run[@]}" run_name=ref >"$work/ref.log" 2>&1 || fail "reference resume" "$work/ref.log"
grep "^resumed from" "$work/ref.log"
/usr/bin/python3 tests/lib/ckpt_check.py same_weights "$work/ref/model.h5" "$work/nan/model.h5"
/usr/bin/python3 tests/lib/ckpt_check.py state "$work/ref/step_00000006" "$work/nan/step_00000006"
mpi_run -np 2 "$bin" "${run[@]}" checkpoint_every=0 run_name=clean >"$work/clean.log" 2>&1 || fail "clean run" "$work/clean.log"
if /usr/bin/python3 tests/lib/ckpt_check.py same_weights "$work/clean/model.h5" "$work/nan/model.h5" >/dev/null; then
  fail "the clean run ends with the same weights: the comparison cannot tell"
fi
echo "a clean run ends with other weights than the run that skipped step 3"

set +e
nan_run 5-100 "${run[@]}" max_steps=20 checkpoint_every=2 keep_last=2 max_bad_steps=3 run_name=giveup \
  >"$work/giveup.log" 2>&1
rc=$?
set -e
[ $rc -eq 4 ] || fail "5 bad steps with max_bad_steps=3: exit $rc, expected 4" "$work/giveup.log"
grep -q "error: steps 5-7 all had a NaN/Inf loss or gradient norm (max_bad_steps = 3): the run stops, nothing saved (exit code 4); the newest checkpoint, $work/giveup/step_00000006, holds the last finite state" \
  "$work/giveup.log" || fail "no give-up message naming step_00000006" "$work/giveup.log"
grep "error:" "$work/giveup.log"
for p in step_00000007 step_00000008 step_00000008.tmp model.h5; do
  [ ! -e "$work/giveup/$p" ] || fail "$p written after giving up" "$work/giveup.log"
done
ls "$work/giveup"
[ "$(readlink "$work/giveup/latest")" = step_00000006 ] || fail "latest -> $(readlink "$work/giveup/latest")"
"${check[@]}" same_tensors "$work/giveup/step_00000004" "$work/giveup/step_00000006"
# A shorter run than the one that gave up (max_steps changes its schedule: allowed).
mpi_run -np 2 "$bin" "${run[@]}" max_steps=8 allow_changed=max_steps checkpoint_every=2 keep_last=2 \
  run_name=giveup >"$work/resume.log" 2>&1 \
  || fail "resume after giving up" "$work/resume.log"
grep "^resumed from .*step_00000006" "$work/resume.log"
[ -f "$work/giveup/model.h5" ] || fail "the resumed run saved no weights"
echo "non-finite guard: OK"
