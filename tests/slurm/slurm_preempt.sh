#!/usr/bin/env bash
# Pre-emption on a real one-node Slurm (launch/slurm_cluster.sh): a run of
# launch/slurm.sbatch gets SIGUSR1 mid-run in its batch shell (what
# --signal=B:USR1@N sends before the time limit) -> the trainer saves a
# checkpoint and exits 3 -> the script requeues the job -> the requeued job
# resumes from `latest` and ends identical (every loss, every final weight)
# to an uninterrupted run of the same script.
# usage: slurm_preempt.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source launch/slurm_cluster.sh
rm -rf "$work"; mkdir -p "$work"
slurm_start

steps=30 signal_after=12
submit() { # job name
  OUT_DIR="$work/out" BUILD_DIR="$(dirname "$bin")" OMP_NUM_THREADS=1 \
    sbatch --parsable --job-name="$1" --ntasks-per-node=2 --gpus-per-node=0 --cpus-per-task=1 \
    --output="$work/slurm-%x-%j.out" launch/slurm.sbatch configs/tiny.ini max_steps=$steps \
    warmup_steps=2 eval_every=15 eval_batches=2 log_every=1 checkpoint_every=10
}
fail() { echo "FAIL: $*"; for l in "$work"/slurm-*.out; do echo "---- $l"; cat "$l"; done; exit 1; }

start=$SECONDS
ref=$(submit uninterrupted)
state=$(slurm_wait_job "$ref" 180)
echo "uninterrupted job $ref: $state after $((SECONDS - start))s"
[ "$state" = COMPLETED ] || fail "the uninterrupted job did not complete"

start=$SECONDS
job=$(submit preempted)
metrics="$work/out/preempted/metrics.jsonl"
for _ in $(seq 600); do
  grep -q "\"step\":$signal_after," "$metrics" 2>/dev/null && break
  sleep 0.2
done
grep -q "\"step\":$signal_after," "$metrics" || fail "job $job did not reach step $signal_after"
scancel --signal=USR1 --batch "$job"
echo "sent SIGUSR1 to the batch shell of job $job after step $signal_after ($((SECONDS - start))s)"
state=$(slurm_wait_job "$job" 240)
log="$work/slurm-preempted-$job.out"
restarts=$(slurm_job_field "$job" Restarts) code=$(slurm_job_field "$job" ExitCode)
echo "pre-empted job $job: $state, exit $code, $restarts restart(s) after $((SECONDS - start))s"
[ "$state" = COMPLETED ] && [ "$code" = 0:0 ] && [ "$restarts" = 1 ] ||
  fail "expected COMPLETED, exit 0:0 after 1 restart"

# The script both forwards the signal and creates the STOP file; whichever
# reaches the trainer first names the stop (srun's forwarding can lose the race).
stopped=$(sed -En 's/^stopped by (a pre-emption signal|the STOP file) .* after step ([0-9]+):.*exit code 3$/\2/p' "$log")
[ -n "$stopped" ] && [ "$stopped" -ge "$signal_after" ] && [ "$stopped" -lt "$steps" ] ||
  fail "no 'stopped by a pre-emption signal or the STOP file after step N' with $signal_after <= N < $steps"
for pattern in "[job $job restart 0 " "got SIGUSR1: passing it on to the trainer" \
               "checkpoint: step $stopped saved" "exit 3, after SIGUSR1): requeueing" \
               "[job $job restart 1 " "launcher: srun (Slurm job $job, step 0, restart 1)" \
               "resumed from $work/out/preempted/step_$(printf %08d "$stopped"): step $stopped" \
               "trainer exited with code 0"; do
  grep -qF "$pattern" "$log" || fail "the job log lacks '$pattern'"
done
grep -E "got SIGUSR1|^stopped by|requeueing|^resumed from|DUE TO JOB REQUEUE" "$log"
/usr/bin/python3 tests/slurm/compare_runs.py "$work/out/uninterrupted" "$work/out/preempted" ||
  fail "the resumed run differs from the uninterrupted one"
echo "slurm pre-emption: OK"
