#!/usr/bin/env bash
# `sbatch launch/slurm.sbatch` on a real one-node Slurm (launch/slurm_cluster.sh):
# the tiny config on the CPU backend with 2 tasks (srun --mpi=pmix) runs to
# the end and finishes with a complete checkpoint; the job log, under the
# run directory, has rank 0's environment report. A job that asks for
# device=cuda from a CPU-only binary fails at once, exit 2, saying why.
# usage: slurm_sbatch.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source launch/slurm_cluster.sh
rm -rf "$work"; mkdir -p "$work"
slurm_start

steps=30
submit() { # job name, then sbatch options... -- trainer args...
  local name=$1; shift
  OUT_DIR="$work/out" BUILD_DIR="$(dirname "$bin")" OMP_NUM_THREADS=1 \
    sbatch --parsable --job-name="$name" --ntasks-per-node=2 --gpus-per-node=0 --cpus-per-task=1 \
    --output="$work/slurm-%x-%j.out" "$@"
}
start=$SECONDS
job=$(submit tiny_sbatch launch/slurm.sbatch configs/tiny.ini max_steps=$steps warmup_steps=2 \
  eval_every=15 eval_batches=2 log_every=5 checkpoint_every=15)
state=$(slurm_wait_job "$job" 180)
log="$work/slurm-tiny_sbatch-$job.out"
echo "job $job: $state, exit $(slurm_job_field "$job" ExitCode) after $((SECONDS - start))s"
[ "$state" = COMPLETED ] || { cat "$log"; echo "FAIL: job did not complete"; exit 1; }

fail() { echo "FAIL: $*"; echo "---- $log"; cat "$log"; exit 1; }
run="$work/out/tiny_sbatch"
for pattern in "environment: 2 rank(s) on 1 node(s) ($(hostname)), 2 rank(s) per node" \
               "launcher: srun (Slurm job $job, step 0, restart 0)" \
               "GPUs visible per rank: " "MPI 3" "HDF5 1." "NCCL" \
               "| 2 rank(s) | device cpu |" \
               "step    $steps/$steps" "trainer exited with code 0"; do
  grep -qF "$pattern" "$log" || fail "the job log lacks '$pattern'"
done
grep -A4 "^environment:" "$log"
# Finished with a checkpoint: latest -> the last step, complete, one shard per rank.
last=$(printf 'step_%08d' $steps)
[ "$(readlink "$run/latest")" = "$last" ] || fail "latest is '$(readlink "$run/latest" || true)', expected $last"
for f in COMPLETE model.h5 shard_00000.h5 shard_00001.h5; do
  [ -s "$run/$last/$f" ] || fail "checkpoint $run/$last lacks $f"
done
[ -s "$run/model.h5" ] && [ -s "$run/metrics.jsonl" ] || fail "no model.h5 / metrics.jsonl in $run"
[ "$(readlink -f "$run/slurm-$job.out")" = "$(readlink -f "$log")" ] || fail "no link to the job log in $run"
echo "checkpoint: $run/latest -> $last ($(ls "$run/$last" | tr '\n' ' '))"

# The binary lacks the backend the job asks for: a clear error, not a hang.
if [[ "$("$bin" --version)" != *"cuda ("* ]]; then
  job=$(DEVICE=cuda submit no_cuda launch/slurm.sbatch configs/tiny.ini)
  state=$(slurm_wait_job "$job" 60)
  log="$work/slurm-no_cuda-$job.out"
  code=$(slurm_job_field "$job" ExitCode)
  [ "$state" = FAILED ] && [ "$code" = 2:0 ] || fail "DEVICE=cuda with a CPU-only binary: $state, exit $code"
  grep -q "built without the CUDA backend" "$log" || fail "no message naming the missing CUDA backend"
  echo "DEVICE=cuda, CPU-only binary: $state, exit $code: $(grep -o 'error: .*' "$log" | cut -c1-100)..."
fi
echo "slurm sbatch: OK ($((SECONDS - start))s)"
