#!/usr/bin/env bash
# A STOP the run cannot remove is an error, not a stop (2 CPU ranks, tiny
# config): exit 3 would have a scheduler requeue the run into the same stop
# after one step, forever.
#  (1) a non-empty directory named STOP before the run starts: every rank
#      exits 2 before step 1, naming the path and the fix; again on a retry;
#  (2) one that appears mid-run: the run saves a complete checkpoint after
#      the step, then exits 2 naming it (not 3); once it is removed the
#      same command resumes from that checkpoint;
#  (3) the same through launch/local.sh: exit 2.
# usage: safety_stop_unremovable.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
run=(configs/tiny.ini max_steps=100000 warmup_steps=5 eval_every=0 log_every=1
     checkpoint_every=100000 out_dir="$work")
expect_2() { # log, what
  grep -q "^gpt2_ddp: error: .*/STOP.* cannot be removed.*it is a directory: remove it (rm -r .*/STOP; a STOP must be a file)" "$1" ||
    fail "$2: no error naming the STOP directory and the fix" "$1"
}

mkdir -p "$work/pre/STOP"; touch "$work/pre/STOP/note"
for attempt in 1 2; do
  set +e; mpi_run -np 2 "$bin" "${run[@]}" run_name=pre >"$work/pre$attempt.log" 2>&1; rc=$?; set -e
  [ $rc -eq 2 ] || fail "STOP directory at start (attempt $attempt): exit $rc, expected 2" "$work/pre$attempt.log"
  expect_2 "$work/pre$attempt.log" "at start"
  ! grep -q "^step " "$work/pre$attempt.log" || fail "a step ran" "$work/pre$attempt.log"
done
grep "error" "$work/pre1.log"
echo "STOP directory at start: exit 2 before step 1, twice"

mpirun --bind-to none -np 2 "$bin" "${run[@]}" run_name=mid >"$work/mid.log" 2>&1 &
launcher=$!
wait_for 'grep -q "^step     3/" "$work/mid.log"'
mkdir "$work/mid/STOP"
set +e; wait $launcher; rc=$?; set -e
[ $rc -eq 2 ] || fail "STOP directory mid-run: exit $rc, expected 2" "$work/mid.log"
expect_2 "$work/mid.log" "mid-run"
l=$(readlink "$work/mid/latest") && [ -f "$work/mid/$l/COMPLETE" ] || fail "no complete checkpoint" "$work/mid.log"
grep -q "stopped the run after step $(sed 's/step_0*//' <<<"$l") (checkpoint saved)" "$work/mid.log" ||
  fail "the error does not name the saved step" "$work/mid.log"
echo "STOP directory mid-run: exit 2 after saving $l"
rmdir "$work/mid/STOP"
mpi_run -np 2 "$bin" "${run[@]}" max_steps=6 allow_changed=max_steps run_name=mid >"$work/mid_resume.log" 2>&1 ||
  fail "resume once STOP is removed" "$work/mid_resume.log"
grep "^resumed from" "$work/mid_resume.log"

mkdir -p "$work/launch/STOP"
set +e
RANKS=2 DEVICE=cpu OMP_NUM_THREADS=1 BUILD_DIR="$(dirname "$bin")" launch/local.sh "${run[@]}" \
  run_name=launch >"$work/launch.log" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || fail "launch/local.sh with a STOP directory: exit $rc, expected 2" "$work/launch.log"
expect_2 "$work/launch.log" "launch/local.sh"
echo "launch/local.sh with a STOP directory: exit 2"
echo "unremovable STOP: OK"
