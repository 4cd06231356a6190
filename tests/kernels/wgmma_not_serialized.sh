#!/usr/bin/env bash
# The production wgmma kernels keep their products asynchronous: each
# Hopper source (src/kernels/cuda/*_wgmma.cu) compiled for sm_90a as the
# build does (GPT2_HAVE_SM90A), with ptxas's verbose notes, must get none
# of ptxas's C751x notes. These say it serialized wgmma (register
# pressure, C7511/C7512; a product of another shape on another path,
# C7515) or injected warpgroup.arrive around registers still in flight
# (C7519). They are notes, not warnings, so
# -Werror never stops them, and they cost a kernel far more than a spill:
# a half-diagonal forward with an accumulator in flight where two paths
# met took 46% longer with all its wgmma serialized.
# No GPU needed: ptxas runs on the build machine.
# The attention kernels live in headers (attention_wgmma_*.cuh); their
# production instances are attention_wgmma.cu's, so the one source covers
# them, and matmul_wgmma.cu the GEMM's.
# usage: wgmma_not_serialized.sh NVCC SOURCE_DIR [nvcc option ...]
#   (options check other builds by hand; with -DGPT2_ATTN_TUNING=1 the
#   tuning variants' sources, src/kernels/cuda/tuning/*_wgmma_*.cu, are
#   checked too: some of those shapes were kept for the record of how they
#   lose, and ptxas may serialize them)
set -euo pipefail
nvcc=$1 src=$2; shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
sources=("$src"/src/kernels/cuda/*_wgmma.cu)
[ -e "${sources[0]}" ] || { echo "FAIL: no *_wgmma.cu under $src/src/kernels/cuda"; exit 1; }
for opt in "$@"; do
  [[ $opt == -DGPT2_ATTN_TUNING* ]] && sources+=("$src"/src/kernels/cuda/tuning/*_wgmma_*.cu)
done
for path in "${sources[@]}"; do
  f=$(basename "$path" .cu)
  "$nvcc" -cubin -O3 -DNDEBUG -DGPT2_HAVE_CUDA=1 -DGPT2_HAVE_SM90A=1 -arch=sm_90a \
    --expt-relaxed-constexpr -I"$src/src" -Xptxas -v "$@" \
    "$path" -o "$work/$f.cubin" >"$work/$f.log" 2>&1 \
    || { cat "$work/$f.log"; echo "FAIL: $f.cu did not compile"; exit 1; }
  notes=$(grep -E '\(C751[0-9]\)' "$work/$f.log" || true)
  if [ -n "$notes" ]; then
    echo "FAIL: ptxas serialized wgmma in $f.cu ($(grep -c . <<<"$notes") notes):"
    # ptxas info : (C7511) WHY in the function 'MANGLED' -> C7511 kernel<Shape>: WHY
    echo "$notes" | sed -E "s/.*\((C751[0-9])\) ([^']*) (in|for) (the )?function '.*[0-9]+([a-z][a-z0-9_]*_kernel)I(NS_)?[0-9]+([A-Za-z0-9_]+)EEEv.*/  \1 \5<\7>: \2/"
    status=1
  else
    echo "$f.cu: no C751x note from ptxas ($(grep -c 'Compiling entry function' "$work/$f.log") kernels)"
  fi
done
exit $status
