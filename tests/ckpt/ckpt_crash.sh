#!/usr/bin/env bash
# Crash safety: 2 ranks save every 4 steps, each save held open for 3 s by
# the test hook GPT2_TEST_SAVE_DELAY_MS (after the ranks wrote their files,
# before the barrier that completes the save). Once step 4 is complete and
# the save of step 8 has written its shards, every rank is killed with
# SIGKILL. Then `latest` must still point at step 4, step_00000008.tmp must
# be there unfinished and no step_00000008 exist; resume=auto must load step
# 4, remove the partial directory and train on. usage: ckpt_crash.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
run=(configs/tiny.ini warmup_steps=2 eval_every=0 log_every=1 checkpoint_every=4 out_dir="$work"
     run_name=crash)

mpirun --bind-to none -np 2 -x GPT2_TEST_SAVE_DELAY_MS=3000 "$bin" "${run[@]}" max_steps=1000 \
  >"$work/crash.log" 2>&1 &
launcher=$!
wait_for '[ -f "$work/crash/step_00000004/COMPLETE" ] && [ -f "$work/crash/step_00000008.tmp/shard_00001.h5" ] && [ -f "$work/crash/step_00000008.tmp/model.h5" ]'
pids=$(rank_pids $launcher)
kill -9 $pids
set +e; wait $launcher; rc=$?; set -e
echo "SIGKILL of ranks $(echo $pids) in the middle of saving step 8: launcher exit $rc"
[ "$(readlink "$work/crash/latest")" = step_00000004 ] || fail "latest -> $(readlink "$work/crash/latest")"
[ -d "$work/crash/step_00000008.tmp" ] && [ ! -e "$work/crash/step_00000008.tmp/COMPLETE" ] \
  && [ ! -e "$work/crash/step_00000008" ] || fail "expected an unfinished step_00000008.tmp only"
echo "after the crash: latest -> step_00000004, step_00000008.tmp unfinished: $(ls "$work/crash/step_00000008.tmp" | tr '\n' ' ')"

# A shorter run than the crashed one: max_steps defines the run (its lr
# schedule), so the resume says it may change.
mpi_run -np 2 "$bin" "${run[@]}" max_steps=6 allow_changed=max_steps >"$work/resume.log" 2>&1 || fail "resume" "$work/resume.log"
grep "^resumed from .*step_00000004: step 4" "$work/resume.log" || fail "did not resume from step 4" "$work/resume.log"
grep "^removed partial checkpoint" "$work/resume.log"
[ ! -e "$work/crash/step_00000008.tmp" ] || fail "partial directory not removed"
[ "$(readlink "$work/crash/latest")" = step_00000006 ] || fail "no checkpoint at the last step" "$work/resume.log"
echo "crash: OK"
