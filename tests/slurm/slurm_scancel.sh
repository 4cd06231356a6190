#!/usr/bin/env bash
# `scancel JOB` (no --signal: Slurm sends SIGCONT and SIGTERM to every
# process of the job, the batch shell included, and SIGKILL KillWait later)
# on a real one-node Slurm (launch/slurm_cluster.sh), mid-run of
# launch/slurm.sbatch with srun and with LAUNCHER=mpirun (whose mpirun,
# signalled itself, exits 1: the script reads the trainer's recorded 3):
# the trainer saves a complete checkpoint, the script exits 3 saying so and
# does not requeue, the job ends CANCELLED, ExitCode 3:0, 0 restarts
# (docs/slurm.md);
# no STOP or exit-status file is left in the run directory.
# usage: slurm_scancel.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source launch/slurm_cluster.sh
rm -rf "$work"; mkdir -p "$work"
slurm_start

fail() { echo "FAIL: $1"; [ -z "${2:-}" ] || { echo "---- $2"; cat "$2"; }; exit 1; }
for launcher in srun mpirun; do
  name=cancel_$launcher
  job=$(LAUNCHER=$launcher OUT_DIR="$work/out" BUILD_DIR="$(dirname "$bin")" OMP_NUM_THREADS=1 \
    sbatch --parsable --job-name="$name" --ntasks-per-node=2 --gpus-per-node=0 --cpus-per-task=1 \
    --output="$work/slurm-%x-%j.out" launch/slurm.sbatch configs/tiny.ini max_steps=100000 \
    warmup_steps=2 eval_every=0 log_every=1 checkpoint_every=100000)
  log="$work/slurm-$name-$job.out" metrics="$work/out/$name/metrics.jsonl"
  for _ in $(seq 600); do grep -q '"step":3,' "$metrics" 2>/dev/null && break; sleep 0.2; done
  grep -q '"step":3,' "$metrics" || fail "job $job ($launcher) did not reach step 3" "$log"
  start=$SECONDS
  scancel "$job"
  state=$(slurm_wait_job "$job" 120)
  code=$(slurm_job_field "$job" ExitCode) restarts=$(slurm_job_field "$job" Restarts)
  echo "$launcher: scancel $job after step 3 -> $state, ExitCode $code, $restarts restart(s), $((SECONDS - start)) s"
  [ "$state" = CANCELLED ] && [ "$code" = 3:0 ] && [ "$restarts" = 0 ] ||
    fail "expected CANCELLED, ExitCode 3:0, 0 restarts" "$log"
  l=$(readlink "$work/out/$name/latest") && [ -f "$work/out/$name/$l/COMPLETE" ] ||
    fail "$launcher: latest -> ${l:-nothing}: not a complete checkpoint" "$log"
  k=$(sed 's/step_0*//' <<<"$l")
  # mpirun, signalled, stops relaying its ranks' output: the script says it.
  grep -qE "^stopped by (a pre-emption signal|the STOP file) .*after step $k: checkpoint saved|mpirun exited 1, but the trainer saved a checkpoint" "$log" ||
    fail "$launcher: no 'stopped by ... after step $k' in the job log" "$log"
  for pattern in "trainer exited with code 3: checkpoint saved, stopped by SIGTERM (not requeued"; do
    grep -qF "$pattern" "$log" || fail "$launcher: the job log lacks '$pattern'" "$log"
  done
  ! grep -q "requeueing" "$log" || fail "$launcher: the script requeued a cancelled job" "$log"
  leftover=$(cd "$work/out/$name" && ls -A | grep -E '^STOP$|^\.exit_status' || true)
  [ -z "$leftover" ] || fail "$launcher: left in the run directory: $leftover" "$log"
  grep -E "got SIGTERM|exited .*but the trainer|^stopped by|trainer exited" "$log"
done
echo "slurm scancel: OK"
