#!/usr/bin/env bash
# The environment check at start: rank 0's report (ranks, nodes, ranks per
# node, GPUs, launcher, MPI / HDF5 / NCCL versions), and the launches that
# must stop with exit 2 and a clear message instead of running wrong:
# a launcher that started N processes which each see an MPI world of 1
# (real: mpirun whose ranks cannot reach it, as with a binary built against
# another MPI; and the variables of MPICH's mpiexec and of srun), device=cuda
# from a CPU-only binary, more ranks on a node than GPUs (CUDA builds).
# usage: ddp_environment.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source tests/lib/mpi_env.sh
rm -rf "$work"; mkdir -p "$work"
args=(configs/tiny.ini max_steps=2 warmup_steps=1 eval_every=0 out_dir="$work/out")
fail() { echo "FAIL: $*"; exit 1; }
expect_exit() { # code log-file command...
  local want=$1 log=$2 rc=0; shift 2
  timeout 60 "$@" >"$log" 2>&1 || rc=$?
  [ "$rc" -eq "$want" ] || { cat "$log"; fail "exit $rc, expected $want: $*"; }
}

# 1. The report, from rank 0 only.
expect_exit 0 "$work/report.log" mpirun --bind-to none -np 2 "$bin" "${args[@]}" dry_run=1
for pattern in "environment: 2 rank(s) on 1 node(s) ($(hostname)), 2 rank(s) per node" \
               "| launcher: Open MPI's mpirun |" "| GPUs visible per rank: " "  MPI 3." "| HDF5 1." "NCCL"; do
  grep -qF "$pattern" "$work/report.log" || { cat "$work/report.log"; fail "report lacks '$pattern'"; }
done
[ "$(grep -c '^environment:' "$work/report.log")" -eq 1 ] || fail "the report is printed more than once"
grep -A4 "^environment:" "$work/report.log"
expect_exit 0 "$work/single.log" "$bin" "${args[@]}" dry_run=1
grep -qF "launcher: none (a single process)" "$work/single.log" || fail "a plain run is not reported as one process"

# 2. mpirun starts 2 processes that cannot reach it (its PMIx/ORTE variables
# removed): each sees a world of 1, which is what a binary linked against
# another MPI than mpirun's does. One message, every process exits 2.
cat >"$work/lost_launcher.sh" <<'SH'
#!/usr/bin/env bash
for v in $(compgen -e); do case $v in PMIX_*|OMPI_MCA_*|OPAL_*|ORTE_*) unset "$v" ;; esac; done
export OMPI_MCA_plm=isolated # the singleton's own daemon then needs no ssh/rsh
exec "$@"
SH
chmod +x "$work/lost_launcher.sh"
expect_exit 2 "$work/mismatch.log" mpirun --bind-to none -np 2 "$work/lost_launcher.sh" "$bin" "${args[@]}"
msg="started as 2 processes (OMPI_COMM_WORLD_SIZE=2, from Open MPI's mpirun), but MPI sees a world of 1"
grep -qF "$msg" "$work/mismatch.log" || { cat "$work/mismatch.log"; fail "no message '$msg'"; }
[ "$(grep -c "MPI sees a world of 1" "$work/mismatch.log")" -eq 1 ] || fail "the message is not printed once"
! grep -q "^step" "$work/mismatch.log" || fail "a copy trained anyway"
grep -o "error: .*" "$work/mismatch.log" | cut -c1-160
# The variables of MPICH's / Intel MPI's mpiexec (PMI) and of an srun step.
expect_exit 2 "$work/pmi.log" env PMI_SIZE=4 PMI_RANK=0 "$bin" "${args[@]}"
grep -qF "started as 4 processes (PMI_SIZE=4" "$work/pmi.log" || { cat "$work/pmi.log"; fail "PMI_SIZE"; }
expect_exit 2 "$work/srun.log" env SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=0 "$bin" "${args[@]}"
grep -qF "started as 2 processes (SLURM_STEP_NUM_TASKS=2, from srun)" "$work/srun.log" || { cat "$work/srun.log"; fail "srun"; }
expect_exit 2 "$work/srun1.log" env SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=1 "$bin" "${args[@]}"
[ ! -s "$work/srun1.log" ] || { cat "$work/srun1.log"; fail "only the launcher's first process should print"; }
# A batch script (SLURM_NTASKS but no step) may run one process: no error.
expect_exit 0 "$work/batch.log" env SLURM_NTASKS=4 SLURM_JOB_ID=1 "$bin" "${args[@]}" dry_run=1

# 3. The backend the run asks for is missing, or there are fewer GPUs than ranks.
if [[ "$("$bin" --version)" != *"cuda ("* ]]; then
  expect_exit 2 "$work/nocuda.log" "$bin" "${args[@]}" device=cuda
  grep -q "built without the CUDA backend" "$work/nocuda.log" || { cat "$work/nocuda.log"; fail "device=cuda"; }
  grep -o "error: .*" "$work/nocuda.log" | cut -c1-160
else
  expect_exit 2 "$work/gpus.log" env CUDA_VISIBLE_DEVICES=0 OMPI_MCA_rmaps_base_oversubscribe=1 \
    mpirun --bind-to none -np 2 -x CUDA_VISIBLE_DEVICES "$bin" "${args[@]}" device=cuda
  grep -qE "2 ranks on .* but rank 0 sees only 1 GPU|no GPU is visible" "$work/gpus.log" ||
    { cat "$work/gpus.log"; fail "2 ranks on one visible GPU"; }
  grep -o "error: .*" "$work/gpus.log" | cut -c1-160
fi
echo "environment check: OK"
