#!/usr/bin/env bash
# Validation loss of training variants against a reference run: the same
# config, seed and batches, each run named NAME:key=value,key=value (the
# first is the reference), compared by tools/plot_run.py at every
# evaluation. The check behind docs/fp8.md's loss tables: BF16, BF16 with
# two accumulation steps (the same mathematics in another rounding order:
# the noise floor) and FP8 by default. Prints per run the largest relative
# difference from the reference (and its step) and the last, then one
# comparable line
#   BENCH loss config=<name> steps=<N> ref=<name> <run>=<max %>@<step>/<last %> ... gpu=<name>
# and writes loss.png (where matplotlib is importable) next to the runs.
# usage: [CONFIG=configs/124M.ini] [DEVICE=cuda] [STEPS=300] [EVAL_EVERY=25]
#        [COMMON="key=value ..."] [OUT=DIR] bench/bench_loss.sh BUILD_DIR [RUN ...]
#   bench/bench_loss.sh build bf16:fp8=0 fp8:fp8=1 fp8_all:fp8=1,fp8_fast_accum=all
#   CONFIG=configs/350M.ini STEPS=200 COMMON="micro_batch=16 total_batch=16384 eval_batches=2 warmup_steps=40" bench/bench_loss.sh build
set -uo pipefail
build=${1:-build}; shift || true
runs=${*:-bf16:fp8=0 bf16_acc2:fp8=0,micro_batch=16 fp8:fp8=1}
config=${CONFIG:-configs/124M.ini}
device=${DEVICE:-cuda}
steps=${STEPS:-300}
eval_every=${EVAL_EVERY:-25}
# 124M's defaults: micro-batch 32 without accumulation, the bundled
# corpus's 64 validation windows, and a warm-up long enough that the
# first steps do not spike (with 11 the early curve is chaotic: docs/fp8.md)
common=${COMMON-micro_batch=32 total_batch=32768 eval_batches=2 warmup_steps=60}
cd "$(dirname "$0")/.."
bin=$(realpath "$build/gpt2_ddp")
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' ' '_')

dirs=() labels=()
for run in $runs; do
  name=${run%%:*}
  overrides=()
  [ "$run" != "$name" ] && IFS=, read -ra overrides <<<"${run#*:}"
  # shellcheck disable=SC2086
  "$bin" "$config" device="$device" max_steps="$steps" eval_every="$eval_every" log_every=1 \
    checkpoint_every=0 resume=none out_dir="$out" run_name="$name" $common "${overrides[@]}" \
    >"$out/$name.log" 2>&1 || { echo "bench_loss: $name failed:"; tail -5 "$out/$name.log"; exit 1; }
  rm -f "$out/$name"/*.h5
  echo "$name: done ($(grep -c '"type":"eval"' "$out/$name/metrics.jsonl") evaluations)"
  dirs+=("$out/$name") labels+=(--label "$name")
done

# plot_run.py exits 1 where it cannot draw (no matplotlib): the
# comparison is in its dump either way.
python3 tools/plot_run.py "${dirs[@]}" "${labels[@]}" -o "$out/loss.png" --dump "$out/loss.json" \
  2>"$out/plot.err" | grep '^val loss of'
[ -s "$out/loss.json" ] || { echo "bench_loss: plot_run.py wrote no comparison:"; cat "$out/plot.err"; exit 1; }
[ -s "$out/loss.png" ] || echo "loss.png not drawn: $(head -c 200 "$out/plot.err")"
python3 - "$out/loss.json" "$(basename "$config" .ini)" "$steps" "${gpu:-none}" <<'PY'
import json, sys
dump, config, steps, gpu = sys.argv[1:]
runs = json.load(open(dump))["runs"]
parts = []
for r in runs[1:]:
    a = r["val_loss_against_first"]
    parts.append(f"{r['label']}=" + (f"{a['max_pct']:.2f}%@{a['max_step']}/{a['last_pct']:.2f}%"
                                     if a else "none"))
print(f"BENCH loss config={config} steps={steps} ref={runs[0]['label']} {' '.join(parts)} "
      f"gpu={gpu}")
PY
echo "runs: $out"
