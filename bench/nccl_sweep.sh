#!/usr/bin/env bash
# How NCCL's thread-block budget trades overlap against reduction speed: GPT-2
# 124M, micro-batch 32, ZeRO-1, no accumulation, on GPUS GPUs, once with
# NCCL's default and once per NCCL_MAX_CTAS value in CTAS, beside the one-GPU
# run. Fewer blocks leave more SMs to the backward GEMMs the bucket reductions
# overlap, but make the reduction tail and the all-gather slower. Prints one
# line per setting: tokens/s, scaling efficiency, step ms, exposed comm.
# usage: bench/nccl_sweep.sh BUILD_DIR    env: GPUS=4 CTAS="16 8 4" STEPS=30 WORK=<logs dir>
set -uo pipefail
build=$(realpath "${1:-build}")
root=$(cd "$(dirname "$0")/.." && pwd)
n=${GPUS:-4}
work=${WORK:-$(mktemp -d)}; mkdir -p "$work"
run() {  # run LABEL NP [NCCL_MAX_CTAS]: one bench_scaling run, its line labelled
  local label=$1 np=$2 ctas=${3:-}
  (if [ -n "$ctas" ]; then export NCCL_MAX_CTAS=$ctas; fi
   RESULTS=$work/$label.txt BENCH_WORK=$work/$label REPORT=0 PARTS=ours GPUS=$np ZERO_STAGES=1 ACCUM=0 \
     "$root/bench/bench_scaling.sh" "$build" >"$work/$label.log" 2>&1)
  grep '^ours' "$work/$label.txt" | sed "s/^ours/$label/"
}
lines=("$(run one_gpu 1)")
base=$(sed -nE 's/.* tps=([0-9]+).*/\1/p' <<<"${lines[0]}")
for c in default ${CTAS:-16 8 4}; do
  lines+=("$(run "ctas_$c" "$n" "$([ "$c" = default ] || echo "$c")")")
done
echo
grep -h "^communication not hidden" "$work"/ctas_*/*.log 2>/dev/null
printf '%-14s %5s %11s %8s %8s %9s\n' setting GPUs tok/s scaling step_ms exposed
for l in "${lines[@]}"; do
  python3 - "$l" "$base" <<'PY'
import sys
line, base = sys.argv[1], float(sys.argv[2] or 0)
kv = dict(x.split("=", 1) for x in line.split()[1:] if "=" in x)
n = int(kv["n"])
tps = float(kv["tps"])
print(f"{line.split()[0]:14} {n:5d} {tps:11.0f} {100 * tps / (n * base) if base else 0:7.1f}% "
      f"{float(kv['ms']):8.2f} {float(kv['exposed']):6.2f} ms")
PY
done
