#!/usr/bin/env bash
# NCCL data parallelism against one GPU: the tiny config (1 head of 64, bf16)
# for 50 steps with the same global batch (2048 tokens: grad_accum 8 on one
# GPU, 4 on two, 2 on four) on 2 and 4 GPUs, ZeRO-1 and all-reduce, bf16 and
# fp32 reduction, NCCL's reduction and the copy engines'. Losses must follow
# the one-GPU curve within the tolerance nccl_compare.py states, and every
# rank must end with bit-identical parameters (the checksum each rank
# prints). On 2 GPUs, with the kernels' deterministic modes
# (attention_deterministic, matmul_autotune=false), the copy engines' run must
# equal NCCL's bit for bit: both round a + b once.
# usage: nccl_equivalence.sh GPT2_DDP WORK_DIR
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
  # NCCL's runs name their transport: auto picks the copy engines on 2 GPUs
  for z in 1 0; do one g${np}_z$z "$np" zero_stage=$z comm_transport=nccl; runs+=(g${np}_z$z); done
  one g${np}_fp32 "$np" grad_reduce_dtype=fp32 comm_transport=nccl; runs+=(g${np}_fp32)
  grep -q "reduced in bf16, ZeRO-1's data moved by NCCL," "$work/g${np}_z1.log" \
    || fail "g${np}_z1 does not say it runs on NCCL" "$work/g${np}_z1.log"
  one g${np}_ce "$np" comm_transport=copy_engines; runs+=(g${np}_ce)
  grep -q "reduced in fp32 (rounded once), ZeRO-1's data moved by copy engines" "$work/g${np}_ce.log" \
    || fail "g${np}_ce does not say it runs on the copy engines" "$work/g${np}_ce.log"
done
identical=()
det=(attention_deterministic=true matmul_autotune=false)
if gpu_run -np 2 "$bin" "${run[@]}" run_name=g2_det "${det[@]}" comm_transport=nccl \
    >"$work/g2_det.log" 2>&1; then
  one g2_det_ce 2 "${det[@]}" comm_transport=copy_engines
  identical=(--identical g2_det_ce=g2_det)
else
  grep -q "needs the Hopper attention kernels" "$work/g2_det.log" || fail "g2_det (2 GPUs)" "$work/g2_det.log"
  echo "no deterministic attention on this GPU: the bitwise comparison is skipped"
fi
grep -h "^GPU map" -A4 "$work/g2_z1.log" | head -5
python3 tests/dist/nccl_compare.py "$work" g1 "${runs[@]}" "${identical[@]}"
