#!/usr/bin/env bash
# bench/bench_sizes_gpu.sh on the CPU backend (DEVICE=cpu), tiny.ini: each
# run's line (micro-batch, median ms/step and tokens/s after SKIP steps)
# against the run's own metrics.jsonl; no accumulation by default (a step
# of micro_batch x 1024 tokens) and the config's total_batch with ACCUM=1;
# an FP8 run, which the CPU backend refuses, reported as failed with the
# trainer's reason and no fp8_ratio line; SKIP >= STEPS refused.
# usage: bench_sizes.sh BUILD_DIR WORK_DIR
set -euo pipefail
build=$(realpath "$1") work=$2
cd "$(dirname "$0")/../.."
fail() { echo "FAIL: $*"; [ -z "${2:-}" ] || tail -30 "$2"; exit 1; }
rm -rf "$work"; mkdir -p "$work"
check() { # check LOG RUNS_DIR SKIP TOKENS_PER_STEP RUN@TAG@MICRO_BATCH ...
  python3 - "$@" <<'PY' || fail "the runs' lines" "$1"
import json, os, statistics, sys
log, runs, skip, tokens = sys.argv[1:5]
lines = open(log).read().splitlines()
for spec in sys.argv[5:]:
    run, tag, micro = spec.split("@")
    recs = [json.loads(l) for l in open(os.path.join(runs, tag, "metrics.jsonl"))]
    got = next(r for r in recs if r["type"] == "run")["tokens_per_step"]
    assert got == int(tokens), f"{run}: {got} tokens a step, expected {tokens}"
    steps = [r for r in recs if r["type"] == "step"][int(skip):]
    want = [run, micro, f"{statistics.median(r['ms'] for r in steps):.1f}",
            f"{statistics.median(r['tokens_per_s'] for r in steps):.0f}"]
    mine = [l.split()[:4] for l in lines if l.split()[:1] == [run]]
    assert mine and all(m == want for m in mine), f"{run}: lines {mine}, metrics give {want}"
    print(f"bench_sizes: {run}: {want[2]} ms, {want[3]} tokens/s over steps after {skip}, as computed here")
PY
}
OUT="$work/plain" DEVICE=cpu STEPS=4 SKIP=2 bench/bench_sizes_gpu.sh "$build" tiny:micro_batch=4 \
  tiny:micro_batch=4,fp8=true >"$work/plain.log" 2>&1 || fail "bench_sizes_gpu.sh" "$work/plain.log"
cat "$work/plain.log"
check "$work/plain.log" "$work/plain" 2 4096 tiny:micro_batch=4@tiny_micro_batch_4@4
grep -q "^tiny:micro_batch=4,fp8=true *failed (exit 2): .*fp8 = true needs device=cuda" "$work/plain.log" \
  || fail "the FP8 run's failure is not reported with its reason" "$work/plain.log"
grep -q "fp8_ratio" "$work/plain.log" && fail "an fp8_ratio line without an FP8 run" "$work/plain.log"
OUT="$work/accum" DEVICE=cpu ACCUM=1 STEPS=3 bench/bench_sizes_gpu.sh "$build" tiny \
  >"$work/accum.log" 2>&1 || fail "bench_sizes_gpu.sh with ACCUM=1" "$work/accum.log"
check "$work/accum.log" "$work/accum" 1 1024 tiny@tiny@8
if DEVICE=cpu STEPS=2 SKIP=2 bench/bench_sizes_gpu.sh "$build" tiny >"$work/skip.log" 2>&1; then
  fail "SKIP=2 with STEPS=2 was not refused" "$work/skip.log"
fi
grep -q "SKIP=2 leaves none of STEPS=2" "$work/skip.log" || fail "no reason for the refusal" "$work/skip.log"
echo "bench_sizes.sh: OK"
