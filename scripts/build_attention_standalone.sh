#!/usr/bin/env bash
# Builds the flash attention test and benchmark with nvcc alone (no CMake, no
# MPI/HDF5): for GPU machines where the full configure cannot run.
#   scripts/build_attention_standalone.sh [OUTDIR]   (default build-attn)
# Env: NVCC (default nvcc on PATH, else /usr/local/cuda/bin/nvcc), ARCH (90a),
# EXTRA (more nvcc flags, e.g. -DGPT2_ATTN_TUNING to build the tile-shape
# variants into the test and the benchmark). Writes OUTDIR/ptxas.txt, the
# register/spill/shared-memory report of attention.cu.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-build-attn}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
ARCH=${ARCH:-90a}
mkdir -p "$OUT"
FLAGS=(-std=c++17 -O3 "-gencode=arch=compute_${ARCH},code=sm_${ARCH}" -Isrc
       --expt-relaxed-constexpr -Werror=all-warnings -DGPT2_ATTN_STANDALONE ${EXTRA:-})
[ "$ARCH" = 90a ] && FLAGS+=(-DGPT2_HAVE_SM90A=1) # the wgmma kernels have bodies
"$NVCC" "${FLAGS[@]}" -Xptxas -v -c src/kernels/cuda/attention.cu -o "$OUT/attention.o" \
    2> "$OUT/ptxas.txt" || { cat "$OUT/ptxas.txt"; exit 1; }
"$NVCC" "${FLAGS[@]}" -Xptxas -v -c src/kernels/cuda/attention_sm90.cu -o "$OUT/attention_sm90.o" \
    2>> "$OUT/ptxas.txt" || { cat "$OUT/ptxas.txt"; exit 1; }
objs=("$OUT/attention.o" "$OUT/attention_sm90.o")
"$NVCC" "${FLAGS[@]}" tests/kernels/test_attention_cuda.cu "${objs[@]}" -o "$OUT/test_attention_cuda" &
pid_test=$!
"$NVCC" "${FLAGS[@]}" bench/bench_attention.cu "${objs[@]}" -o "$OUT/bench_attention" &
pid_bench=$!
wait "$pid_test"
wait "$pid_bench"
grep -E "spill|registers" "$OUT/ptxas.txt" | paste - - | grep -v " 0 bytes spill stores" || true
echo "built $OUT/test_attention_cuda $OUT/bench_attention"
