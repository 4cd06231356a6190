#!/usr/bin/env bash
# Stopping without a signal (2 CPU ranks, tiny config), and the launch
# script's pre-emption:
#  (1) a STOP file in the run directory once step 5 is logged: every rank
#      stops after the same step k, saves, exit 3, the STOP file is gone;
#      resume=auto continues, and steps k+1..30 give the losses of an
#      uninterrupted run bit for bit;
#  (2) time_limit_min = 0.2 (12 s) on a run far longer: exit 3 with the time
#      left at the stop >= 0 s and the whole run within the budget plus
#      start-up; the checkpoint is complete and resumes (exit 0);
#  (3) launch/local.sh: SIGUSR1 to the script (not to mpirun) -> exit 3 and
#      a complete checkpoint; with STOP_BY_FILE=1 the script stops the run
#      through the STOP file instead -> exit 3, and no STOP file is left.
# usage: safety_stop.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
run=(configs/tiny.ini max_steps=30 warmup_steps=5 eval_every=0 log_every=1 checkpoint_every=100
     out_dir="$work")
complete_latest() { # run dir: latest points at a complete checkpoint
  local l
  l=$(readlink "$1/latest") && [ -f "$1/$l/COMPLETE" ] || fail "$1/latest -> ${l:-nothing}: not complete"
  echo "$l"
}

mpi_run -np 2 "$bin" "${run[@]}" run_name=full >"$work/full.log" 2>&1 || fail "uninterrupted run" "$work/full.log"
mkdir -p "$work/cut"
mpirun --bind-to none -np 2 "$bin" "${run[@]}" run_name=cut >"$work/cut.log" 2>&1 &
launcher=$!
wait_for 'grep -q "^step     5/" "$work/cut.log"'
touch "$work/cut/STOP"
set +e; wait $launcher; rc=$?; set -e
[ $rc -eq 3 ] || fail "STOP file: exit code $rc, expected 3" "$work/cut.log"
k=$(complete_latest "$work/cut" | sed 's/step_0*//')
grep -q "^stopped by the STOP file ($work/cut/STOP, now removed) after step $k: checkpoint saved, exit code 3" "$work/cut.log" \
  || fail "no stop message for step $k" "$work/cut.log"
[ ! -e "$work/cut/STOP" ] || fail "the STOP file is still there"
echo "STOP file after step 5 was logged: stopped after step $k, exit 3, STOP removed"
mpi_run -np 2 "$bin" "${run[@]}" run_name=cut >"$work/resume.log" 2>&1 || fail "resume" "$work/resume.log"
grep "^resumed from" "$work/resume.log"
/usr/bin/python3 tests/lib/ckpt_check.py losses "$work/full" "$work/cut" $((k + 1)) 30 0

start=$SECONDS
set +e
mpi_run -np 2 "$bin" "${run[@]}" max_steps=100000 time_limit_min=0.2 run_name=timed >"$work/timed.log" 2>&1
rc=$?
set -e
took=$((SECONDS - start))
[ $rc -eq 3 ] || fail "time_limit_min: exit code $rc, expected 3" "$work/timed.log"
grep "^time limit: time_limit_min = 0.2" "$work/timed.log" || fail "no time limit line" "$work/timed.log"
line=$(grep "^stopped by the time limit (time_limit_min = 0.2: " "$work/timed.log") || fail "no stop message" "$work/timed.log"
echo "$line"
left=$(sed 's/.*: \(-\?[0-9]*\) s left.*/\1/' <<<"$line")
[ "$left" -ge 0 ] || fail "stopped with $left s left: too late"
[ $took -le 22 ] || fail "the 12 s run took $took s (start-up included)"
l=$(complete_latest "$work/timed")
echo "time_limit_min = 0.2: stopped at $l with $left s left, $took s in all"
# Two more steps, and at least warmup_steps + 1 (a slow machine may stop at
# step 2: max_steps below warmup_steps is a config error).
resume_to=$(( $(sed 's/step_0*//' <<<"$l") + 2 )); [ "$resume_to" -gt 6 ] || resume_to=6
mpi_run -np 2 "$bin" "${run[@]}" max_steps=$resume_to allow_changed=max_steps run_name=timed \
  >"$work/timed_resume.log" 2>&1 || fail "resume after the time limit" "$work/timed_resume.log"
grep "^resumed from" "$work/timed_resume.log"

for mode in signal file; do
  launch=(env RANKS=2 OMP_NUM_THREADS=1 BUILD_DIR="$(dirname "$bin")")
  [ $mode = signal ] || launch+=(STOP_BY_FILE=1)
  "${launch[@]}" launch/local.sh "${run[@]}" max_steps=100000 run_name=launch_$mode >"$work/launch_$mode.log" 2>&1 &
  script=$!
  wait_for "grep -q '^step     3/' '$work/launch_$mode.log'"
  kill -USR1 $script
  set +e; wait $script; rc=$?; set -e
  [ $rc -eq 3 ] || fail "launch/local.sh, SIGUSR1 ($mode): exit code $rc, expected 3" "$work/launch_$mode.log"
  l=$(complete_latest "$work/launch_$mode")
  [ ! -e "$work/launch_$mode/STOP" ] || fail "a STOP file was left behind" "$work/launch_$mode.log"
  grep -E "^launch: got SIGUSR1|^stopped by" "$work/launch_$mode.log"
  echo "launch/local.sh, SIGUSR1 to the script ($mode): exit 3, latest -> $l (complete)"
done
echo "stop without signals: OK"
