#!/usr/bin/env bash
# profile_ops=1's tables on a real run of tiny.ini (2 blocks, 2 micro-steps
# per step), checked by tests/train/profile_ops_check.py against the model's
# shape: each op's calls per step (attention once per block and micro-step,
# the LayerNorm backward 2 L + 1 times, each linear layer's product once per
# block and micro-step under its N x C -> OC label), the ops' times summing
# to "all ops" and fitting in the profiled step.
#   cpu   the CPU backend (no floors)
#         The CPU has no stream to time ops on: profile_ops_timing=stream
#         there exits 2 naming the key.
#   cuda  the CUDA backend (label gpu; exit 77 without a GPU): also the
#         floors line and an x floor on every matrix product; the same
#         table timed on the stream (profile_ops_timing=stream); then fp8=1
#         with fp8_amax_history=1 where the GPU has FP8 (compute capability
#         8.9+): the FP8 products' labels and counts, the floors line's FP8
#         rate above the BF16 one, and the clipping table (24 tensors; each
#         row's count within the scale updates, its overshoot past the
#         format's rounding limit, 464 / 448 at least) and the underflow
#         table (the nonzero values counted against the values the casts
#         saw; each row's counts within its tensor's size times the
#         forwards, ordered by share, adding up to the total), and the
#         lm head's FP8 classifier and dlogits transpose once a chunk, the
#         weights' batched cast once a block a step (held through the
#         second micro-step) and wte's amax pass once a step; then
#         the same with fp8_attn_proj=false and fp8_lm_head=false
#         (attn.c_proj's bf16 labels, 18 tensors, the bf16 classifier).
# usage: profile_ops.sh cpu|cuda GPT2_DDP WORK_DIR
set -euo pipefail
mode=$1 bin=$(realpath "$2") work=$3
cd "$(dirname "$0")/../.."
source tests/lib/nccl_lib.sh
fail() { echo "FAIL: $*"; [ -z "${2:-}" ] || tail -60 "$2"; exit 1; }
if [ "$mode" = cuda ]; then
  need_gpus 1
  [[ "$("$bin" --version)" == *"cuda ("* ]] || { echo "SKIP: $bin has no CUDA backend"; exit 77; }
fi
rm -rf "$work"; mkdir -p "$work"
args=(configs/tiny.ini device="$mode" max_steps=4 warmup_steps=1 eval_every=0 checkpoint_every=0
      resume=none out_dir="$work" profile_ops=1)
check() { python3 tests/train/profile_ops_check.py "$@"; }

"$bin" "${args[@]}" run_name=bf16 >"$work/bf16.log" 2>&1 || fail "profile_ops=1 run" "$work/bf16.log"
sed -n '/^per-op profile/,/^step (profiled)/p' "$work/bf16.log"
check "$work/bf16.log" --layers 2 --micro-steps 2 --embd 64 --tokens 512 --steps 4 \
  $([ "$mode" = cuda ] && echo --floors) || fail "the bf16 table" "$work/bf16.log"

if [ "$mode" = cpu ]; then
  rc=0; "$bin" "${args[@]}" profile_ops_timing=stream run_name=stream >"$work/stream.log" 2>&1 || rc=$?
  [ "$rc" = 2 ] && grep -q "profile_ops_timing = stream .*device=cpu" "$work/stream.log" \
    || fail "profile_ops_timing=stream on the CPU: exit $rc, want 2 and the key named" "$work/stream.log"
else
  "$bin" "${args[@]}" profile_ops_timing=stream run_name=stream >"$work/stream.log" 2>&1 \
    || fail "profile_ops_timing=stream run" "$work/stream.log"
  sed -n '/^per-op profile/,/^step (profiled)/p' "$work/stream.log"
  check "$work/stream.log" --layers 2 --micro-steps 2 --embd 64 --tokens 512 --steps 4 --floors \
    --stream || fail "the stream-timed table" "$work/stream.log"
fi

if [ "$mode" = cuda ]; then
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
  if [ "${cc:-0}" -ge 89 ]; then
    "$bin" "${args[@]}" fp8=1 fp8_attn_proj=true fp8_amax_history=1 run_name=fp8 >"$work/fp8.log" 2>&1 \
      || fail "profile_ops=1 fp8=1 run" "$work/fp8.log"
    sed -n '/^per-op profile/,$p' "$work/fp8.log" | grep -v "^peak GPU\|^saved\|^step "
    check "$work/fp8.log" --layers 2 --micro-steps 2 --embd 64 --tokens 512 --steps 4 --floors --fp8 \
      || fail "the fp8 tables" "$work/fp8.log"
    "$bin" "${args[@]}" fp8=1 fp8_attn_proj=false fp8_lm_head=false fp8_amax_history=1 run_name=fp8_proj_bf16 \
      >"$work/fp8_proj_bf16.log" 2>&1 || fail "profile_ops=1 fp8=1 fp8_attn_proj=false fp8_lm_head=false run" "$work/fp8_proj_bf16.log"
    check "$work/fp8_proj_bf16.log" --layers 2 --micro-steps 2 --embd 64 --tokens 512 --steps 4 --floors \
      --fp8 --attn-proj-bf16 --lm-head-bf16 || fail "the fp8 tables with attn.c_proj and the lm head in bf16" "$work/fp8_proj_bf16.log"
  else
    echo "(compute capability $cc: no FP8 run)"
  fi
fi
echo "profile_ops $mode: OK"
