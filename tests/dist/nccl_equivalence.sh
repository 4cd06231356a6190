#!/usr/bin/env bash
# NCCL data parallelism against one GPU: the tiny config (1 head of 64, bf16)
# for 50 steps with the same global batch (2048 tokens: grad_accum 8 on one
# GPU, 4 on two, 2 on four) on 2 and 4 GPUs, ZeRO-1 and all-reduce, bf16 and
# fp32 reduction. Losses must follow the one-GPU curve within the tolerance
# nccl_compare.py states, and every rank must end with bit-identical
# parameters (the checksum each rank prints). usage: nccl_equivalence.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source tests/lib/nccl_lib.sh
need_gpus 2
gpus=$(gpus_visible)
rm -rf "$work"; mkdir -p "$work"
# bucket_mb 0.25: ~26 buckets over the 3.3M parameters, many across shard edges
run=(configs/tiny.ini device=cuda micro_batch=4 total_batch=2048 max_steps=50 warmup_steps=10
     eval_every=0 log_every=1 bucket_mb=0.25 nccl_timeout_s=120 out_dir="$work")
one() {
  local name=$1 np=$2; shift 2
  gpu_run -np "$np" "$bin" "${run[@]}" run_name="$name" "$@" >"$work/$name.log" 2>&1 \
    || fail "$name ($np GPUs)" "$work/$name.log"
}
one g1 1
# Same batch, other accumulation on one GPU: how far bf16 rounding alone
# moves the curve (printed beside the multi-GPU runs, not checked).
one g1_micro8 1 micro_batch=8
runs=(g1_micro8)
for np in 2 4; do
  [ "$np" -le "$gpus" ] || { echo "only $gpus GPUs: no $np-GPU runs"; continue; }
  for z in 1 0; do one g${np}_z$z "$np" zero_stage=$z; runs+=(g${np}_z$z); done
  one g${np}_fp32 "$np" grad_reduce_dtype=fp32; runs+=(g${np}_fp32)
done
grep -h "^GPU map" -A4 "$work/g2_z1.log" | head -5
python3 tests/dist/nccl_compare.py "$work" g1 "${runs[@]}"
