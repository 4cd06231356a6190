#!/usr/bin/env bash
# On a machine with several GPUs, in one go: build with NCCL, the multi-GPU
# tests (ctest -L gpu -R nccl) and bench/bench_scaling.sh, most important
# first, each started only while DEADLINE_S allows; then a summary, last:
# test verdicts, the scaling table, the memory table.
#   scripts/run_nccl_checks.sh [build-dir]     (default: build-nccl)
#   env: DEADLINE_S (default 420), OUT (copies of the logs), MEMORY, bench_scaling.sh's
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-nccl}
out=${OUT:-$build.out}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export RESULTS=$out/results.txt REPORT=0
deadline=${DEADLINE_S:-420} t0=$(date +%s)
left() { echo $(( deadline - ($(date +%s) - t0) )); }
nvidia-smi -L
cmake -S "$root" -B "$build" -G Ninja -DGPT2_CUDA=ON -DGPT2_CUDA_ARCHS="${GPT2_CUDA_ARCHS:-90a}" \
  -DCMAKE_BUILD_TYPE=Release >"$out/configure.log" 2>&1 || { cat "$out/configure.log"; exit 2; }
grep -A9 "feature summary" "$out/configure.log"
ninja -C "$build" -j"$(nproc)" gpt2_ddp >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 2; }
echo "built in $(( $(date +%s) - t0 )) s"
verdicts=$out/tests.txt; : >"$verdicts"
gpu_test() {  # gpu_test NAME: one ctest, its verdict line kept for the summary
  [ "$(left)" -gt 60 ] || { echo "$1: not run (DEADLINE_S)" | tee -a "$verdicts"; return; }
  (cd "$build" && ctest -R "^$1\$" -V) 2>&1 | sed -E 's/^[0-9]+: //' >"$out/$1.log"
  cat "$out/$1.log"
  grep -E "Test +#" "$out/$1.log" | sed -E 's/^ *[0-9]+\/[0-9]+ //' >>"$verdicts"
}
bench() { DEADLINE_S=$(left) PARTS="$1" "$root/bench/bench_scaling.sh" "$build" 2>&1 | tee -a "$out/bench.log"; }
gpu_test nccl_equivalence
bench ours
gpu_test nccl_ckpt
gpu_test nccl_abort
bench torch
[ "$(left)" -gt 150 ] && GPUS="${MEM_GPUS:-4}" bench memory
echo
echo "================ summary ($(( $(date +%s) - t0 )) s) ================"
cat "$verdicts"
grep -h -A12 "^run  *steps" "$out/nccl_equivalence.log" 2>/dev/null | grep -v "^ *$" | head -12
python3 "$root/bench/scaling_report.py" report "$RESULTS"
