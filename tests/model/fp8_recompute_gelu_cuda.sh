#!/usr/bin/env bash
# recompute_gelu with fp8=1 on the GPU: no block keeps mlp.c_proj's
# transposed FP8 input (the backward casts it again from the GELU's input),
# and the run trains bit for bit as the one that keeps them: tiny.ini, 60
# steps with deterministic attention and the heuristic's GEMMs, every
# step's loss the same double. Exit 77 (skipped) without a GPU with FP8
# tensor cores.
# usage: fp8_recompute_gelu_cuda.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$(realpath "$1") work=$2
cd "$(dirname "$0")/../.."
source tests/lib/nccl_lib.sh
fail() { echo "FAIL: $*"; [ -z "${2:-}" ] || tail -40 "$2"; exit 1; }
need_gpus 1
[[ "$("$bin" --version)" == *"cuda ("* ]] || { echo "SKIP: $bin has no CUDA backend"; exit 77; }
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
[ "${cc:-0}" -ge 89 ] || { echo "SKIP: compute capability ${cc:-unknown} has no FP8"; exit 77; }
rm -rf "$work"; mkdir -p "$work"
args=(configs/tiny.ini device=cuda fp8=1 attention_deterministic=true matmul_autotune=false
      max_steps=60 warmup_steps=2 eval_every=0 log_every=1 checkpoint_every=0 resume=none
      out_dir="$work")
"$bin" "${args[@]}" run_name=keep >"$work/keep.log" 2>&1 || fail "fp8=1" "$work/keep.log"
"$bin" "${args[@]}" recompute_gelu=1 run_name=recompute >"$work/recompute.log" 2>&1 \
  || fail "fp8=1 recompute_gelu=1" "$work/recompute.log"
python3 tests/lib/ckpt_check.py losses "$work/keep" "$work/recompute" 1 60 0 \
  || fail "recompute_gelu changed the FP8 run's losses"
echo "fp8 with recompute_gelu: 60 steps' losses bit for bit those of the run that keeps the GELU"
