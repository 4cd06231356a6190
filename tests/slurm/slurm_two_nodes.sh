#!/usr/bin/env bash
# Two nodes: a Slurm cluster of two network namespaces on this machine
# (launch/slurm_cluster.sh: each node its own address, hostname and /tmp, so
# MPI between them goes over TCP). `sbatch --nodes=2 --ntasks-per-node=1
# launch/slurm.sbatch`, pre-empted mid-run (SIGUSR1 -> checkpoint on both
# nodes -> requeue -> resume), and the script's mpirun variant across the two
# nodes, both end identical (every loss, every final weight) to a 2-rank
# mpirun run on one node. usage: slurm_two_nodes.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source launch/slurm_cluster.sh
rm -rf "$work"; mkdir -p "$work"
slurm_start 2

args=(configs/tiny.ini device=cpu max_steps=30 warmup_steps=2 eval_every=15 eval_batches=2 log_every=1
      checkpoint_every=10 out_dir="$work/out")
fail() { echo "FAIL: $*"; tail -n 40 "$work"/*.log "$work"/slurm-*.out 2>/dev/null; exit 1; }
export OMP_NUM_THREADS=1
submit() { # run name, launcher
  RUN_NAME=$1 LAUNCHER=$2 OUT_DIR="$work/out" BUILD_DIR="$(dirname "$bin")" \
    sbatch --parsable --job-name="$1" --nodes=2 --ntasks-per-node=1 --gpus-per-node=0 --cpus-per-task=1 \
    --output="$work/slurm-%x-%j.out" launch/slurm.sbatch "${args[@]}"
}

start=$SECONDS
mpirun --allow-run-as-root --bind-to none -np 2 "$bin" "${args[@]}" run_name=one_node \
  >"$work/one_node.log" 2>&1 || fail "the one-node mpirun run failed"
echo "reference, mpirun -np 2 on one node: $((SECONDS - start))s"

start=$SECONDS
job=$(submit two_nodes srun)
for _ in $(seq 600); do
  grep -q '"step":12,' "$work/out/two_nodes/metrics.jsonl" 2>/dev/null && break
  sleep 0.2
done
scancel --signal=USR1 --batch "$job"
state=$(slurm_wait_job "$job" 240)
log="$work/slurm-two_nodes-$job.out"
echo "sbatch --nodes=2 (srun) job $job, SIGUSR1 after step 12: $state, exit $(slurm_job_field "$job" ExitCode)," \
  "$(slurm_job_field "$job" Restarts) restart(s), $((SECONDS - start))s"
[ "$state" = COMPLETED ] && [ "$(slurm_job_field "$job" Restarts)" = 1 ] || fail "expected COMPLETED after 1 restart"
for pattern in "environment: 2 rank(s) on 2 node(s) (node-1, node-2), 1 rank(s) per node" \
               "launcher: srun (Slurm job $job, step 0, restart 1)" "requeueing" "resumed from"; do
  grep -qF "$pattern" "$log" || fail "the job log lacks '$pattern'"
done
grep -E "^environment|^stopped by|^resumed from" "$log"

start=$SECONDS
job=$(submit two_nodes_mpirun mpirun)
state=$(slurm_wait_job "$job" 180)
log="$work/slurm-two_nodes_mpirun-$job.out"
echo "sbatch --nodes=2 (LAUNCHER=mpirun) job $job: $state, exit $(slurm_job_field "$job" ExitCode), $((SECONDS - start))s"
[ "$state" = COMPLETED ] || fail "the mpirun job did not complete"
grep -qF "environment: 2 rank(s) on 2 node(s) (node-1, node-2), 1 rank(s) per node" "$log" ||
  fail "the mpirun job did not run on two nodes"

/usr/bin/python3 tests/slurm/compare_runs.py "$work/out/one_node" "$work/out/two_nodes" "$work/out/two_nodes_mpirun" ||
  fail "the two-node runs differ from the one-node run"
echo "slurm two nodes: OK"
