#!/usr/bin/env bash
# The same 2-rank run started three ways gives identical results (every
# loss, every final weight): `srun --mpi=pmix -n 2` on a real one-node Slurm
# (launch/slurm_cluster.sh), `mpirun -np 2` outside Slurm, and the sbatch
# script's mpirun variant (LAUNCHER=mpirun). Each run's environment report
# names its launcher. usage: slurm_launchers.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source launch/slurm_cluster.sh
rm -rf "$work"; mkdir -p "$work"
slurm_start

args=(configs/tiny.ini device=cpu max_steps=25 warmup_steps=2 eval_every=10 eval_batches=2
      log_every=1 out_dir="$work/out")
fail() { echo "FAIL: $*"; tail -30 "$work"/*.log "$work"/slurm-*.out 2>/dev/null; exit 1; }
export OMP_NUM_THREADS=1

start=$SECONDS
srun --mpi=pmix -n 2 --cpus-per-task=1 --kill-on-bad-exit=1 "$bin" "${args[@]}" run_name=srun \
  >"$work/srun.log" 2>&1 || fail "srun run failed"
echo "srun --mpi=pmix -n 2: $((SECONDS - start))s"

start=$SECONDS
mpirun --allow-run-as-root --bind-to none -np 2 "$bin" "${args[@]}" run_name=mpirun \
  >"$work/mpirun.log" 2>&1 || fail "mpirun run failed"
echo "mpirun -np 2: $((SECONDS - start))s"

start=$SECONDS
job=$(LAUNCHER=mpirun OUT_DIR="$work/out" RUN_NAME=sbatch_mpirun BUILD_DIR="$(dirname "$bin")" \
  sbatch --parsable --job-name=launchers --ntasks-per-node=2 --gpus-per-node=0 --cpus-per-task=1 \
  --output="$work/slurm-%x-%j.out" launch/slurm.sbatch "${args[@]}")
state=$(slurm_wait_job "$job" 180)
echo "sbatch (LAUNCHER=mpirun) job $job: $state, exit $(slurm_job_field "$job" ExitCode), $((SECONDS - start))s"
[ "$state" = COMPLETED ] || fail "the sbatch mpirun job did not complete"

grep -qF "launcher: srun (Slurm job" "$work/srun.log" || fail "srun run: launcher not reported"
grep -qF "| launcher: Open MPI's mpirun |" "$work/mpirun.log" || fail "mpirun run: launcher not reported"
grep -qF "launcher: Open MPI's mpirun (Slurm job $job" "$work/slurm-launchers-$job.out" ||
  fail "sbatch mpirun run: launcher not reported"
grep -h "launcher:" "$work/srun.log" "$work/mpirun.log" "$work/slurm-launchers-$job.out"
/usr/bin/python3 tests/slurm/compare_runs.py "$work/out/srun" "$work/out/mpirun" "$work/out/sbatch_mpirun" ||
  fail "the launchers gave different runs"
echo "slurm launchers: OK"
