#!/usr/bin/env bash
# Builds the flash attention test and benchmark with nvcc alone (no CMake, no
# MPI/HDF5): for GPU machines where the full configure cannot run.
#   scripts/build_attention_standalone.sh [OUTDIR]   (default build-attn)
# Env: NVCC (default nvcc on PATH, else /usr/local/cuda/bin/nvcc), ARCH (90a),
# EXTRA (more nvcc flags, e.g. -DGPT2_ATTN_TUNING to build the tuning
# variants, src/kernels/cuda/tuning/attention*.cu, with the kernels, and
# their API into the test and the benchmark, as CMake's
# -DGPT2_ATTN_TUNING=ON does). Writes OUTDIR/ptxas.txt, the
# register/spill/shared-memory report of the attention kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-build-attn}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
ARCH=${ARCH:-90a}
mkdir -p "$OUT"
FLAGS=(-std=c++17 -O3 "-gencode=arch=compute_${ARCH},code=sm_${ARCH}" -Isrc
       --expt-relaxed-constexpr -Werror=all-warnings -DGPT2_ATTN_STANDALONE ${EXTRA:-})
[ "$ARCH" = 90a ] && FLAGS+=(-DGPT2_HAVE_SM90A=1) # the wgmma kernels have bodies
# every attention translation unit (the dispatcher and one per kernel
# family), with -DGPT2_ATTN_TUNING the tuning variants' (tuning/), and the
# fixed-order sum of the backward's column-sum partials
tus=(src/kernels/cuda/attention*.cu src/kernels/cuda/column_sums.cu)
[[ " ${EXTRA:-} " == *" -DGPT2_ATTN_TUNING"* ]] && tus+=(src/kernels/cuda/tuning/attention*.cu)
objs=()
: > "$OUT/ptxas.txt"
for tu in "${tus[@]}"; do
  obj="$OUT/$(basename "$tu" .cu).o"
  "$NVCC" "${FLAGS[@]}" -Xptxas -v -c "$tu" -o "$obj" 2>> "$OUT/ptxas.txt" ||
    { cat "$OUT/ptxas.txt"; exit 1; }
  objs+=("$obj")
done
"$NVCC" "${FLAGS[@]}" tests/kernels/test_attention_cuda.cu "${objs[@]}" -o "$OUT/test_attention_cuda" &
pid_test=$!
"$NVCC" "${FLAGS[@]}" bench/bench_attention.cu "${objs[@]}" -o "$OUT/bench_attention" &
pid_bench=$!
wait "$pid_test"
wait "$pid_bench"
# the kernels that spill, by name
awk '/Function properties for/ { name = $NF }
     / bytes spill stores/ && $5 + 0 > 0 { print name ":" $0 }' "$OUT/ptxas.txt" |
  { command -v c++filt >/dev/null && c++filt || cat; } |
  sed -E 's/\(anonymous namespace\):://g; s/^void //; s/\([^()]*\):/:/' | sort -u
echo "built $OUT/test_attention_cuda $OUT/bench_attention"
