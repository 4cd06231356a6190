#!/usr/bin/env bash
# The time limit under a real one-node Slurm (launch/slurm_cluster.sh): a job
# of launch/slurm.sbatch with --time=1 and a run far longer than a minute,
# with no warning signal before the end (--signal=B:USR1@1: none comes
# before the limit). The trainer reads the job's end time (time_limit_min =
# 0, the default), stops itself with a checkpoint before it, exit 3; the
# script requeues the job and the requeued job resumes from that checkpoint.
# usage: slurm_time_limit.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source launch/slurm_cluster.sh
rm -rf "$work"; mkdir -p "$work"
slurm_start

start=$SECONDS
job=$(OUT_DIR="$work/out" BUILD_DIR="$(dirname "$bin")" OMP_NUM_THREADS=1 \
  sbatch --parsable --job-name=timed --ntasks-per-node=2 --gpus-per-node=0 --cpus-per-task=1 \
  --time=1 --signal=B:USR1@1 --output="$work/slurm-%x-%j.out" launch/slurm.sbatch configs/tiny.ini \
  max_steps=100000 warmup_steps=2 eval_every=0 log_every=10)
log="$work/slurm-timed-$job.out"
fail() { echo "FAIL: $*"; echo "---- $log"; cat "$log" 2>/dev/null; exit 1; }
for _ in $(seq 900); do
  grep -q "^resumed from" "$log" 2>/dev/null && break
  sleep 0.2
done
grep -q "^resumed from" "$log" || fail "the job was not requeued and resumed within 180 s"
echo "job $job requeued and resumed after $((SECONDS - start))s"
scancel "$job"
slurm_wait_job "$job" 60 >/dev/null

line=$(grep "^stopped by the time limit (the end of Slurm job $job: " "$log") || fail "no time-limit stop"
echo "$line"
left=$(sed 's/.*: \(-\?[0-9]*\) s left.*/\1/' <<<"$line")
[ "$left" -ge 0 ] || fail "stopped with $left s left"
stopped=$(sed 's/.* after step \([0-9]*\):.*/\1/' <<<"$line")
for pattern in "time limit: the end of Slurm job $job" "checkpoint: step $stopped saved" \
               "trainer saved a checkpoint and stopped (exit 3): requeueing" "[job $job restart 1 " \
               "resumed from $work/out/timed/step_$(printf %08d "$stopped"): step $stopped"; do
  grep -qF "$pattern" "$log" || fail "the job log lacks '$pattern'"
done
# The first run, up to its requeue (the requeue itself cancels the batch
# step and signals the script; the test's scancel ends the second run).
if sed "/: requeueing$/q" "$log" | grep -qE "got SIG(USR1|TERM)|DUE TO TIME LIMIT"; then
  fail "Slurm's signal or limit came first"
fi
grep -E "^time limit:|^stopped by|requeueing|^resumed from" "$log"
echo "Slurm time limit: OK"
