#!/usr/bin/env bash
# How NCCL's thread-block budget trades overlap against reduction speed: GPT-2
# 124M, micro-batch 32, ZeRO-1 through NCCL (comm_transport nccl), no
# accumulation, on GPUS GPUs, once with NCCL's default and once per
# NCCL_MAX_CTAS value in CTAS, beside the one-GPU run. Fewer blocks leave
# more SMs to the backward GEMMs the bucket reductions overlap, but make the
# reduction tail and the all-gather slower. Prints one
# line per setting: tokens/s, scaling efficiency, step ms, exposed comm; and
# (SOLO=1) the one-GPU run on each GPU alone and on all of them at once.
# usage: bench/nccl_sweep.sh BUILD_DIR    env: GPUS=4 CTAS="16 8 4" STEPS=30 SOLO=1 WORK=<logs dir>
set -uo pipefail
build=$(realpath "${1:-build}")
root=$(cd "$(dirname "$0")/.." && pwd)
n=${GPUS:-4}
work=${WORK:-$(mktemp -d)}; mkdir -p "$work"
run() {  # run LABEL NP [NCCL_MAX_CTAS]: one bench_scaling run, its line labelled
  local label=$1 np=$2 ctas=${3:-}
  (if [ -n "$ctas" ]; then export NCCL_MAX_CTAS=$ctas; fi
   RESULTS=$work/$label.txt BENCH_WORK=$work/$label REPORT=0 PARTS=ours GPUS=$np ZERO_STAGES=1 ACCUM=0 TRANSPORTS=nccl \
     "$root/bench/bench_scaling.sh" "$build" >"$work/$label.log" 2>&1)
  grep '^ours' "$work/$label.txt" | sed "s/^ours/$label/"
}
lines=("$(run one_gpu 1)")
base=$(sed -nE 's/.* tps=([0-9]+).*/\1/p' <<<"${lines[0]}")
for c in default ${CTAS:-16 8 4}; do
  lines+=("$(run "ctas_$c" "$n" "$([ "$c" = default ] || echo "$c")")")
done
# The node without communication: the one-GPU run on each GPU alone, then
# on all of them at once (independent jobs). A data-parallel step waits for
# its slowest GPU, and GPUs busy together may run slower than alone (power,
# clocks, host): the together-sum is what the node gives with no communication.
mkdir -p "$work/solo"
solo() {  # solo NAME GPU: a one-GPU run on that GPU
  CUDA_VISIBLE_DEVICES=$2 mpirun --bind-to none -np 1 "$build/gpt2_ddp" "$root/configs/124M.ini" \
    device=cuda eval_every=0 log_every=1 checkpoint_every=0 warmup_steps=1 micro_batch=32 \
    total_batch=32768 max_steps="${STEPS:-30}" out_dir="$work/solo" run_name="$1" >"$work/solo/$1.log" 2>&1
}
tps_of() { python3 "$root/bench/scaling_report.py" parse noaccum "$work/solo/$1" 1 | sed -nE 's/.* tps=([0-9]+).*/\1/p'; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
alone=() together=()
if [ "${SOLO:-1}" = 1 ]; then
  for g in $(seq 0 $((n - 1))); do solo "alone$g" "$g"; alone+=("$(tps_of "alone$g")"); done
  for g in $(seq 0 $((n - 1))); do solo "together$g" "$g" & done; wait
  for g in $(seq 0 $((n - 1))); do together+=("$(tps_of "together$g")"); done
fi

echo
grep -h "^communication not hidden" "$work"/ctas_*/*.log 2>/dev/null
[ ${#alone[@]} -gt 0 ] && python3 - "${alone[*]}" "${together[*]}" "${lines[@]}" <<'PY'
import sys
alone = [float(x) for x in sys.argv[1].split()]
together = [float(x) for x in sys.argv[2].split()]
print("one-GPU runs, tok/s per GPU: alone " + " ".join(f"{x:.0f}" for x in alone)
      + " | all at once " + " ".join(f"{x:.0f}" for x in together))
print(f"sum of the runs at once: {sum(together):.0f} tok/s ({100 * sum(together) / (len(alone) * alone[0]):.1f}% of {len(alone)} x GPU 0 alone)")
for line in sys.argv[3:]:
    kv = dict(x.split("=", 1) for x in line.split()[1:] if "=" in x)
    if kv.get("n") == str(len(together)):
        print(f"{line.split()[0]}: {100 * float(kv['tps']) / sum(together):.1f}% of the runs at once")
PY
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
