#!/usr/bin/env bash
# Exact resume and pre-emption (2 CPU ranks, ZeRO-1, tiny config):
#  (1) 30 steps uninterrupted;
#  (2) the same run sent SIGTERM on one rank (as Slurm signals tasks) once
#      step 15 is logged: every rank stops after the same step k, saves, and
#      the job exits 3; resume=auto then trains k+1..30. The losses of steps
#      k+1..30 and the final checkpoint (master, m, v of every shard, weights,
#      step, optimizer step, data position) must equal run (1) bit for bit;
#  (3) SIGUSR1 to mpirun (which forwards it to every rank): exit 3 and a
#      complete checkpoint that `latest` points at.
# usage: ckpt_resume.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
run=(configs/tiny.ini max_steps=30 warmup_steps=5 eval_every=0 log_every=1 checkpoint_every=100
     out_dir="$work")

mpi_run -np 2 "$bin" "${run[@]}" run_name=full >"$work/full.log" 2>&1 || fail "uninterrupted run" "$work/full.log"

mpirun --bind-to none -np 2 "$bin" "${run[@]}" run_name=cut >"$work/cut.log" 2>&1 &
launcher=$!
wait_for 'grep -q "^step    15/" "$work/cut.log"'
kill -TERM "$(rank_pids $launcher | tail -1)"
set +e; wait $launcher; rc=$?; set -e
[ $rc -eq 3 ] || fail "SIGTERM: exit code $rc, expected 3" "$work/cut.log"
k=$(readlink "$work/cut/latest" | sed 's/step_0*//')
grep -q "stopped by a pre-emption signal .* after step $k: checkpoint saved, exit code 3" "$work/cut.log" \
  || fail "no stop message for step $k" "$work/cut.log"
echo "SIGTERM to one rank after step 15 was logged: all ranks stopped after step $k, exit code 3"

mpi_run -np 2 "$bin" "${run[@]}" run_name=cut >"$work/resume.log" 2>&1 || fail "resume" "$work/resume.log"
grep "^resumed from" "$work/resume.log"
/usr/bin/python3 tests/lib/ckpt_check.py losses "$work/full" "$work/cut" $((k + 1)) 30 0
/usr/bin/python3 tests/lib/ckpt_check.py state "$work/full/step_00000030" "$work/cut/step_00000030"

mpirun --bind-to none -np 2 "$bin" "${run[@]}" max_steps=200 run_name=usr1 >"$work/usr1.log" 2>&1 &
launcher=$!
wait_for 'grep -q "^step     3/" "$work/usr1.log"'
kill -USR1 $launcher
set +e; wait $launcher; rc=$?; set -e
[ $rc -eq 3 ] || fail "SIGUSR1 to mpirun: exit code $rc, expected 3" "$work/usr1.log"
latest=$(readlink "$work/usr1/latest")
[ -f "$work/usr1/$latest/COMPLETE" ] || fail "latest -> $latest is not complete" "$work/usr1.log"
echo "SIGUSR1 to mpirun: exit code 3, latest -> $latest (complete)"
echo "resume: OK"
