#!/usr/bin/env bash
# GPUs per node of a Slurm job (launch/gpus.sh), without starting Slurm:
# each variable Slurm may set, alone and against the ones it outranks,
# gives the count and names itself; then launch/slurm.sbatch itself, run
# with a fake srun and scontrol, picks device=cuda from a --gres-only job
# (refused by a CPU-only build, naming the variable) and CPU ranks when no
# GPU variable is set; with LAUNCHER=mpirun (a fake mpirun) it passes
# LD_LIBRARY_PATH and NCCL_* to the ranks.
# usage: slurm_gpus.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
rm -rf "$work"; mkdir -p "$work/bin"
failures=0 cases=0

gpu_vars=(SLURM_GPUS_ON_NODE SLURM_GPUS_PER_NODE SLURM_JOB_GRES SLURM_GRES SLURM_JOB_GPUS
  CUDA_VISIBLE_DEVICES SLURM_JOB_ID FAKE_TRES DEVICE LAUNCHER)
unset_all=() # env arguments: none of these from the test's own environment
for v in "${gpu_vars[@]}"; do unset_all+=(-u "$v"); done
# expect COUNT SOURCE [VAR=VALUE ...]: launch/gpus.sh with only these set.
expect() {
  local want=$1 from=$2 got; shift 2
  cases=$((cases + 1))
  got=$(env "${unset_all[@]}" PATH="$work/bin:$PATH" "$@" bash launch/gpus.sh)
  if [ "$got" = "$want GPU(s) per node, from $from" ]; then
    echo "ok: ${*:-(nothing set)} -> $got"
  else
    echo "FAIL: ${*:-(nothing set)}: got '$got', want '$want GPU(s) per node, from $from'"
    failures=$((failures + 1))
  fi
}

echo "== each variable alone"
expect 8 "SLURM_GPUS_ON_NODE=8" SLURM_GPUS_ON_NODE=8
expect 8 "SLURM_GPUS_PER_NODE=8" SLURM_GPUS_PER_NODE=8
expect 8 "SLURM_GPUS_PER_NODE=h100:8" SLURM_GPUS_PER_NODE=h100:8
expect 6 "SLURM_GPUS_PER_NODE=a100:2,h100:4" SLURM_GPUS_PER_NODE=a100:2,h100:4
expect 8 "SLURM_JOB_GRES=gpu:8" SLURM_JOB_GRES=gpu:8
expect 8 "SLURM_JOB_GRES=gpu:h100:8" SLURM_JOB_GRES=gpu:h100:8
expect 4 "SLURM_GRES=gres/gpu:4(S:0-1),shard:2" "SLURM_GRES=gres/gpu:4(S:0-1),shard:2"
expect 1 "SLURM_GRES=gpu" SLURM_GRES=gpu
expect 4 "SLURM_JOB_GPUS=0,1,2,3" SLURM_JOB_GPUS=0,1,2,3
expect 2 "CUDA_VISIBLE_DEVICES=GPU-8f2a,GPU-11c0" CUDA_VISIBLE_DEVICES=GPU-8f2a,GPU-11c0
none="no GPU in SLURM_GPUS_ON_NODE, SLURM_GPUS_PER_NODE, the --gres request, SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES"
expect 0 "$none"

echo "== values that hold no GPU"
expect 0 "SLURM_GPUS_PER_NODE=0" SLURM_GPUS_PER_NODE=0 CUDA_VISIBLE_DEVICES=0,1 # --gpus-per-node=0: CPU ranks
expect 0 "$none" SLURM_JOB_GRES=shard:2 CUDA_VISIBLE_DEVICES=NoDevFiles
expect 0 "$none" SLURM_GRES=gpu:0 SLURM_JOB_GPUS= CUDA_VISIBLE_DEVICES=-1
expect 2 "CUDA_VISIBLE_DEVICES=0,1" SLURM_JOB_GRES=mps:100 CUDA_VISIBLE_DEVICES=0,1

echo "== order of trust"
expect 4 "SLURM_GPUS_ON_NODE=4" SLURM_GPUS_ON_NODE=4 SLURM_GPUS_PER_NODE=8 SLURM_JOB_GRES=gpu:2 \
  SLURM_JOB_GPUS=0 CUDA_VISIBLE_DEVICES=0,1,2
expect 8 "SLURM_GPUS_PER_NODE=h100:8" SLURM_GPUS_PER_NODE=h100:8 SLURM_JOB_GRES=gpu:2 SLURM_JOB_GPUS=0
expect 2 "SLURM_JOB_GRES=gpu:2" SLURM_JOB_GRES=gpu:2 SLURM_GRES=gpu:3 SLURM_JOB_GPUS=0
expect 3 "SLURM_GRES=gpu:3" SLURM_GRES=gpu:3 SLURM_JOB_GPUS=0 CUDA_VISIBLE_DEVICES=0,1
expect 1 "SLURM_JOB_GPUS=5" SLURM_JOB_GPUS=5 CUDA_VISIBLE_DEVICES=0,1

echo "== the controller's --gres record (a fake scontrol), after the variables, before the GPU lists"
cat >"$work/bin/scontrol" <<'EOF'
#!/usr/bin/env bash
# fake scontrol: "show job ID" as Slurm prints a job, FAKE_TRES its --gres
[ "$1 $2" = "show job" ] || exit 1
echo "JobId=$3 JobName=gpt2"
[ -z "${FAKE_TRES:-}" ] || echo "   TresPerNode=$FAKE_TRES TRES=cpu=64,node=1"
echo "   StdOut=/dev/null"
EOF
chmod +x "$work/bin/scontrol"
tres=FAKE_TRES=gres/gpu:h100:8
expect 8 "scontrol show job: TresPerNode=gres/gpu:h100:8" $tres SLURM_JOB_ID=42 SLURM_JOB_GPUS=0,1
expect 2 "SLURM_GRES=gpu:2" $tres SLURM_JOB_ID=42 SLURM_GRES=gpu:2
expect 2 "SLURM_JOB_GPUS=0,1" $tres SLURM_JOB_GPUS=0,1 # no job id: scontrol is not asked
expect 2 "SLURM_JOB_GPUS=0,1" SLURM_JOB_ID=42 SLURM_JOB_GPUS=0,1 # no --gres on record

echo "== launch/slurm.sbatch with a fake srun (prints its command line)"
# The script runs gpt2_ddp --version; in the sanitizer build LeakSanitizer's
# tracer crashes at the exit of --version (a bogus dynamic-TLS range, not a
# leak; gpt2_ddp's own tests check its leaks), so no leak check here.
[ -z "${ASAN_OPTIONS:-}" ] || export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
cat >"$work/bin/srun" <<'EOF'
#!/usr/bin/env bash
echo "fake srun: $*"
EOF
chmod +x "$work/bin/srun"
# run_sbatch LOG VAR=VALUE...: the script as Slurm would start it, exit code out.
run_sbatch() {
  local log=$1; shift
  set +e
  env "${unset_all[@]}" PATH="$work/bin:$PATH" \
    SLURM_JOB_ID=42 SLURM_JOB_NAME=gpus SLURM_SUBMIT_DIR="$PWD" SLURM_NNODES=1 SLURM_NTASKS=2 \
    SLURM_NTASKS_PER_NODE=2 BUILD_DIR="$(dirname "$bin")" OUT_DIR="$work/out" "$@" \
    bash launch/slurm.sbatch configs/tiny.ini >"$log" 2>&1
  echo $?
  set -e
}
check_log() { # log, pattern: the log has the line, else FAIL
  cases=$((cases + 1))
  if grep -qF -- "$2" "$1"; then
    echo "ok: $(basename "$1") has '$2'"
  else
    echo "FAIL: $(basename "$1") lacks '$2'"; cat "$1"; failures=$((failures + 1))
  fi
}
rc=$(run_sbatch "$work/none.log")
echo "no GPU variable: exit $rc"
check_log "$work/none.log" "0 GPU(s) per node (from $none): device=cpu, CPU ranks"
check_log "$work/none.log" "fake srun: --mpi=pmix --kill-on-bad-exit=1 $bin configs/tiny.ini device=cpu"
[ "$rc" = 0 ] || { echo "FAIL: exit $rc, want 0"; failures=$((failures + 1)); }
rc=$(run_sbatch "$work/gres.log" SLURM_JOB_GRES=gpu:2)
echo "SLURM_JOB_GRES=gpu:2: exit $rc"
check_log "$work/gres.log" "2 GPU(s) per node (from SLURM_JOB_GRES=gpu:2): device=cuda"
if [[ "$("$bin" --version)" == *"cuda ("* ]]; then
  check_log "$work/gres.log" "fake srun: --mpi=pmix --kill-on-bad-exit=1 $bin configs/tiny.ini device=cuda"
else
  check_log "$work/gres.log" "was built without the CUDA backend but the job asks for device=cuda (2 GPU(s) per node)"
  [ "$rc" = 2 ] || { echo "FAIL: exit $rc, want 2"; failures=$((failures + 1)); }
fi
rc=$(run_sbatch "$work/forced.log" SLURM_JOB_GRES=gpu:2 DEVICE=cpu)
check_log "$work/forced.log" "2 GPU(s) per node (from SLURM_JOB_GRES=gpu:2), device=cpu (set by DEVICE)"
check_log "$work/forced.log" "configs/tiny.ini device=cpu"

echo "== LAUNCHER=mpirun (a fake mpirun): the libraries' path goes to every rank"
cat >"$work/bin/mpirun" <<'EOF'
#!/usr/bin/env bash
echo "fake mpirun: $*"
EOF
chmod +x "$work/bin/mpirun"
run_sbatch "$work/mpirun.log" LAUNCHER=mpirun LD_LIBRARY_PATH=/opt/prefix/lib NCCL_DEBUG=INFO >/dev/null
check_log "$work/mpirun.log" "fake mpirun: -np 2 --map-by ppr:2:node --bind-to none"
check_log "$work/mpirun.log" "-x LD_LIBRARY_PATH"
check_log "$work/mpirun.log" "-x NCCL_DEBUG"

echo "$cases cases, $failures failed"
[ "$failures" -eq 0 ]
