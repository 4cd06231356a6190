#!/usr/bin/env bash
# Every GPT-2 size on one GPU for a few steps: ms/step, tokens/s and MFU
# (medians after warm-up; T = 1024, no gradient accumulation unless ACCUM=1) and the peak
# GPU memory nvidia-smi saw, next to the trainer's own estimate. A run is a
# config name with optional overrides after a colon, comma-separated.
# Prints one line per run as it ends, then a table last, then for each run
# with fp8=true (or 1) beside the same run without it, their ratio:
#   BENCH fp8_ratio <run> bf16_ms=<ms> fp8_ms=<ms> ratio=<bf16/fp8>
# ACCUM=1 keeps each config's total_batch (its gradient accumulation, as it
# trains), STEPS (default 8) the steps a run takes, SKIP (default 3, 1 with
# ACCUM) the first steps left out of the medians, DEVICE (default cuda),
# OUT the folder for the runs' logs and metrics (default a new temporary one).
# usage: [ACCUM=1] [STEPS=N] [OUT=DIR] bench/bench_sizes_gpu.sh BUILD_DIR [RUN ...]
#   bench/bench_sizes_gpu.sh build 350M 774M 1558M 1558M:micro_batch=16,recompute_gelu=1
#   ACCUM=1 STEPS=4 bench/bench_sizes_gpu.sh build 1558M 1558M:fp8=true
set -uo pipefail
build=${1:-build}; shift || true
runs=${*:-124M 350M 774M 1558M}
accum=${ACCUM:-0} steps=${STEPS:-8} device=${DEVICE:-cuda}
skip=${SKIP:-$([ "$accum" = 1 ] && echo 1 || echo 3)}
[ "$skip" -lt "$steps" ] || { echo "bench_sizes_gpu.sh: SKIP=$skip leaves none of STEPS=$steps" >&2; exit 2; }
declare -A step_ms
# failed RUN RC TEXT: the run's row, with the first error line of TEXT
failed() {
  rows+=("$(printf '%-40s failed (exit %d): %s' "$1" "$2" "$(grep -m1 -iE 'error|fail' <<<"$3")")")
  echo "${rows[-1]}"
}
cd "$(dirname "$0")/.." || exit
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
rows=()
for run in $runs; do
  name=${run%%:*}
  overrides=()
  [ "$run" != "$name" ] && IFS=, read -ra overrides <<<"${run#*:}"
  # the config as the trainer reads it: a run it refuses fails here, with its reason
  settings=$("$build/gpt2_ddp" --print-config "configs/$name.ini" device="$device" "${overrides[@]}" 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ]; then failed "$run" "$rc" "$settings"; continue; fi
  b=$(sed -nE 's/^micro_batch = ([0-9]+).*/\1/p' <<<"$settings")
  batch=(total_batch=$((b * 1024)))
  [ "$accum" = 1 ] && batch=()
  tag=$(tr -c 'A-Za-z0-9_\n' _ <<<"$run")
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$out/$tag.mem" 2>/dev/null &
  smi=$!
  "$build/gpt2_ddp" "configs/$name.ini" device="$device" "${batch[@]}" max_steps="$steps" \
    warmup_steps=2 eval_every=0 log_every=1 checkpoint_every=0 resume=none out_dir="$out" \
    run_name="$tag" "${overrides[@]}" >"$out/$tag.log" 2>&1
  rc=$?
  kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
  rm -f "$out/$tag/model.h5" # up to 6 GB for 1558M
  if [ "$rc" -ne 0 ]; then failed "$run" "$rc" "$(cat "$out/$tag.log")"; continue; fi
  # "memory: about 42.37 GiB per rank (estimate: ...)"
  est=$(sed -nE 's/^memory: about ([0-9.]+) GiB per rank.*/\1/p' "$out/$tag.log")
  peak=$(sort -n "$out/$tag.mem" | tail -1)
  line=$(python3 - "$out/$tag/metrics.jsonl" "$run" "$b" "$est" "${peak:-0}" "$skip" <<'PY'
import json, statistics, sys
path, run, b, est, peak, skip = sys.argv[1:]
rows = [r for r in map(json.loads, open(path)) if r["type"] == "step"][int(skip):]  # after warm-up
med = lambda k: statistics.median(r.get(k, 0) for r in rows)
print(f"{run:<40} {b:>3} {med('ms'):9.1f} {med('tokens_per_s'):10.0f} {100 * med('mfu'):6.1f}% "
      f"{float(peak) / 1024:8.1f} {est:>8}")
PY
)
  rows+=("$line")
  echo "$line"
  step_ms[$run]=$(awk '{print $3}' <<<"$line")
done
echo
printf "%-40s %3s %9s %10s %7s %8s %8s\n" run B "ms/step" "tok/s" MFU "peak GiB" "est GiB"
printf '%s\n' "${rows[@]}"
# the FP8 runs against the same runs in BF16: the run's overrides less fp8=true
for run in $(printf "%s\n" "${!step_ms[@]}" | sort); do
  name=${run%%:*}
  [ "$run" = "$name" ] && continue
  IFS=, read -ra overrides <<<"${run#*:}"
  rest=() fp8=0
  for o in "${overrides[@]}"; do
    case "$o" in fp8=true | fp8=1) fp8=1 ;; *) rest+=("$o") ;; esac
  done
  [ "$fp8" = 1 ] || continue
  base=$name
  [ ${#rest[@]} -gt 0 ] && base="$name:$(IFS=,; echo "${rest[*]}")"
  [ -n "${step_ms[$base]:-}" ] || continue
  awk -v run="$run" -v b="${step_ms[$base]}" -v f="${step_ms[$run]}" \
    'BEGIN { printf "BENCH fp8_ratio %s bf16_ms=%.1f fp8_ms=%.1f ratio=%.3f\n", run, b, f, b / f }'
done
