#!/usr/bin/env bash
# Every GPT-2 size on one GPU for a few steps: ms/step, tokens/s and MFU
# (medians after warm-up; T = 1024, no gradient accumulation) and the peak
# GPU memory nvidia-smi saw, next to the trainer's own estimate. A run is a
# config name with optional overrides after a colon, comma-separated.
# Prints one line per run as it ends, then a table last.
# usage: bench/bench_sizes_gpu.sh BUILD_DIR [RUN ...]
#   bench/bench_sizes_gpu.sh build 350M 774M 1558M 1558M:micro_batch=16,recompute_gelu=1
set -uo pipefail
build=${1:-build}; shift || true
runs=${*:-124M 350M 774M 1558M}
cd "$(dirname "$0")/.."
out=$(mktemp -d)
rows=()
for run in $runs; do
  name=${run%%:*}
  overrides=()
  [ "$run" != "$name" ] && IFS=, read -ra overrides <<<"${run#*:}"
  b=$("$build/gpt2_ddp" --print-config "configs/$name.ini" "${overrides[@]}" | sed -nE 's/^micro_batch = ([0-9]+).*/\1/p')
  tag=$(tr -c 'A-Za-z0-9_\n' _ <<<"$run")
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$out/$tag.mem" &
  smi=$!
  "$build/gpt2_ddp" "configs/$name.ini" device=cuda total_batch=$((b * 1024)) max_steps=8 \
    warmup_steps=2 eval_every=0 log_every=1 checkpoint_every=0 resume=none out_dir="$out" \
    run_name="$tag" "${overrides[@]}" >"$out/$tag.log" 2>&1
  rc=$?
  kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
  rm -f "$out/$tag/model.h5" # up to 6 GB for 1558M
  if [ "$rc" -ne 0 ]; then
    rows+=("$(printf '%-40s failed (exit %d): %s' "$run" "$rc" "$(grep -m1 -iE 'error|fail' "$out/$tag.log")")")
    echo "${rows[-1]}"
    continue
  fi
  # "memory: about 42.37 GiB per rank (estimate: ...)"
  est=$(sed -nE 's/^memory: about ([0-9.]+) GiB per rank.*/\1/p' "$out/$tag.log")
  peak=$(sort -n "$out/$tag.mem" | tail -1)
  line=$(python3 - "$out/$tag/metrics.jsonl" "$run" "$b" "$est" "${peak:-0}" <<'PY'
import json, statistics, sys
path, run, b, est, peak = sys.argv[1:]
rows = [r for r in map(json.loads, open(path)) if r["type"] == "step"][3:]  # after warm-up
med = lambda k: statistics.median(r.get(k, 0) for r in rows)
print(f"{run:<40} {b:>3} {med('ms'):9.1f} {med('tokens_per_s'):10.0f} {100 * med('mfu'):6.1f}% "
      f"{float(peak) / 1024:8.1f} {est:>8}")
PY
)
  rows+=("$line")
  echo "$line"
done
echo
printf "%-40s %3s %9s %10s %7s %8s %8s\n" run B "ms/step" "tok/s" MFU "peak GiB" "est GiB"
printf '%s\n' "${rows[@]}"
