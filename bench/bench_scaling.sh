#!/usr/bin/env bash
# Multi-GPU scaling and memory of our trainer (NCCL, ZeRO-1, buckets
# overlapped with backward) against PyTorch DDP, in one run on one machine.
#   1. GPT-2 124M, micro-batch 32, T=1024, 1/2/4 GPUs: without gradient
#      accumulation (total_batch = 32768 x GPUs), ZeRO-1 and zero_stage 0; and
#      with accumulation to a 0.5M-token batch (524288). Median tokens/s,
#      scaling efficiency tok/s(N) / (N tok/s(1)), and the communication not
#      hidden behind compute (CUDA events: reduction still running after the
#      last backward kernel, the parameter all-gather, the scalar sums).
#      One GPU is measured on each GPU the runs use (GPU 0 heads the table):
#      synchronous data parallelism steps at the pace of its slowest GPU, so
#      the report also gives the scaling against N x the slowest of GPUs
#      0..N-1, beside the classic N x GPU 0.
#   2. PyTorch DDP (bench/torch_ddp_peer.py, torchrun) on the same GPUs.
#   3. Peak GPU memory per rank (cudaMemGetInfo) for the configs in MEMORY,
#      ZeRO-1 against zero_stage 0, beside the trainer's estimate.
# Prints the tables last (bench/scaling_report.py).
# usage: bench/bench_scaling.sh BUILD_DIR
#   env: PARTS="ours torch memory" GPUS="1 2 4" STEPS=30 ACCUM_STEPS=8 TORCH_STEPS=STEPS TORCH_ACCUM=1
#        ZERO_STAGES="1 0" ACCUM=1 (0: no accumulation runs) EACH_GPU=1 (0: one GPU on GPU 0 only)
#        TRANSPORTS="auto nccl" (comm_transport of the ZeRO-1 runs without accumulation)
#        MEMORY="350M 774M 1558M" DEADLINE_S=<stop starting runs after this many seconds>
#        RESULTS=<file> (appended to when it exists: parts may run in separate calls)
#        NCCL_*: passed to every rank (mpirun -x); BENCH_WORK=<dir for the runs' logs>
set -uo pipefail
build=$(realpath "${1:-build}")
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
gpus=${GPUS:-1 2 4} steps=${STEPS:-30} accum_steps=${ACCUM_STEPS:-8}
deadline=${DEADLINE_S:-100000} t_start=$(date +%s)
work=${BENCH_WORK:-$(mktemp -d /dev/shm/bench_scaling.XXXX 2>/dev/null || mktemp -d)}
mkdir -p "$work"
parts=${PARTS:-ours torch memory}
results=${RESULTS:-$work/results.txt}
if [ ! -s "$results" ]; then
  nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | sed 's/^/machine /' >>"$results"
  echo "gpus $(nvidia-smi -L | grep -c '^GPU')" >>"$results"
fi
has() { [[ " $parts " == *" $1 "* ]]; }
# Every NCCL_* setting of the caller reaches the ranks (NCCL_MAX_CTAS, ...).
nccl_env=(); for v in $(compgen -e | grep '^NCCL_'); do nccl_env+=(-x "$v"); done

time_left() { [ $(( $(date +%s) - t_start )) -lt "$deadline" ]; }

# ours KIND NAME NP CONFIG ARGS...: one run; appends its numbers to results.
ours() {
  local kind=$1 name=$2 np=$3 cfg=$4; shift 4
  time_left || { echo "skipped $name: past DEADLINE_S"; return; }
  mpirun --bind-to none "${nccl_env[@]}" ${CUDA_VISIBLE_DEVICES:+-x CUDA_VISIBLE_DEVICES} \
    -np "$np" "$build/gpt2_ddp" "configs/$cfg.ini" \
    device=cuda eval_every=0 log_every=1 checkpoint_every=0 warmup_steps=1 \
    out_dir="$work" run_name="$name" "$@" >"$work/$name.log" 2>&1 \
    || { echo "FAILED: $name"; tail -5 "$work/$name.log"; return; }
  python3 bench/scaling_report.py parse "$kind" "$work/$name" "$np" "$@" >>"$results"
  tail -1 "$results"
}

has ours && for n in $gpus; do
  for z in ${ZERO_STAGES:-1 0}; do
    [ "$n" = 1 ] && [ "$z" = 0 ] && continue  # one rank: nothing to shard
    for t in $([ "$n$z" = 11 ] || [ "$z" = 0 ] && echo auto || echo "${TRANSPORTS:-auto nccl}"); do
      ours noaccum "n${n}_z${z}_$t" "$n" 124M micro_batch=32 total_batch=$((32768 * n)) max_steps="$steps" \
        zero_stage="$z" comm_transport="$t"
    done
  done
done
# One GPU on each further GPU the runs use (the run above is GPU 0's).
visible=$(nvidia-smi -L | grep -c '^GPU')
most=$(printf '%s\n' $gpus | sort -n | tail -1); [ "$most" -le "$visible" ] || most=$visible
has ours && [ "${EACH_GPU:-1}" = 1 ] && for g in $(seq 1 $((most - 1))); do
  CUDA_VISIBLE_DEVICES=$g ours "single_gpu$g" "n1_gpu$g" 1 124M micro_batch=32 total_batch=32768 \
    max_steps="$steps"
done
has ours && [ "${ACCUM:-1}" = 1 ] && for n in $gpus; do
  ours accum "a${n}_z1" "$n" 124M micro_batch=32 total_batch=524288 max_steps="$accum_steps" zero_stage=1
done

if has torch && python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  export TORCHINDUCTOR_CACHE_DIR=$work/inductor  # compiled once, reused by the other runs
  for n in $gpus; do
    for accum in 1 $([ "${TORCH_ACCUM:-1}" = 1 ] && echo $((16 / n))); do
      time_left || break
      s=$([ "$accum" = 1 ] && echo "${TORCH_STEPS:-$steps}" || echo "$accum_steps")
      torchrun --standalone --nproc_per_node="$n" bench/torch_ddp_peer.py --batch 32 --accum "$accum" \
        --steps "$s" >"$work/torch_n${n}_a$accum.log" 2>&1 || { echo "FAILED: torch N=$n accum $accum"; tail -5 "$work/torch_n${n}_a$accum.log"; }
      grep '^torchddp' "$work/torch_n${n}_a$accum.log" | tee -a "$results"
    done
  done
fi

# Memory: each config's own micro-batch, no accumulation, two steps.
has memory && for cfg in ${MEMORY-350M 774M 1558M}; do
  for n in $gpus; do
    for z in 1 0; do
      [ "$n" = 1 ] && [ "$z" = 0 ] && continue  # one rank: nothing to shard
      mb=$(sed -nE 's/^micro_batch *= *([0-9]+).*/\1/p' "configs/$cfg.ini")
      ours "mem_$cfg" "m${cfg}_n${n}_z$z" "$n" "$cfg" micro_batch="$mb" total_batch=$((mb * 1024 * n)) \
        max_steps=2 zero_stage="$z"
    done
  done
done
grep -h -m1 -A4 "^GPU map" "$work/n4_z1_auto.log" "$work/n2_z1_auto.log" 2>/dev/null | head -5
[ "${REPORT:-1}" = 1 ] && python3 bench/scaling_report.py report "$results"
