#!/usr/bin/env bash
# bench/bench_loss.sh on the CPU backend: tiny.ini, a reference run and one
# with micro-batch 4 (two accumulation steps: another rounding order), 12
# steps with an evaluation every 4. Its BENCH line's largest and last
# relative differences must be those computed here from the two runs'
# metrics.jsonl; a run that fails (a bad key) ends it with exit 1, naming
# the run.
# usage: bench_loss.sh BUILD_DIR WORK_DIR
set -euo pipefail
build=$(realpath "$1") work=$2
cd "$(dirname "$0")/../.."
fail() { echo "FAIL: $*"; [ -z "${2:-}" ] || tail -30 "$2"; exit 1; }
rm -rf "$work"; mkdir -p "$work"
export CONFIG=configs/tiny.ini DEVICE=cpu STEPS=12 EVAL_EVERY=4 COMMON="eval_batches=2"
OUT="$work/runs" bench/bench_loss.sh "$build" ref:micro_batch=8 acc:micro_batch=4 \
  >"$work/bench.log" 2>&1 || fail "bench_loss.sh" "$work/bench.log"
cat "$work/bench.log"
python3 - "$work/bench.log" "$work/runs" <<'PY' || fail "the BENCH line" "$work/bench.log"
import json, os, re, sys
log, runs = sys.argv[1:]
line = [l for l in open(log) if l.startswith("BENCH loss ")]
assert len(line) == 1, f"{len(line)} BENCH lines"
m = re.search(r"config=tiny steps=12 ref=ref acc=([0-9.]+)%@(\d+)/([0-9.]+)% gpu=", line[0])
assert m, line[0]
def evals(name):
    recs = map(json.loads, open(os.path.join(runs, name, "metrics.jsonl")))
    return {r["step"]: r["val_loss"] for r in recs if r["type"] == "eval"}
ref, acc = evals("ref"), evals("acc")
assert sorted(ref) == sorted(acc) == [0, 4, 8, 12], (sorted(ref), sorted(acc))
pct = [(abs(acc[s] - ref[s]) / ref[s] * 100, s) for s in sorted(ref)]
worst = max(pct)
assert pct[-1][0] > 0, "the two runs gave the same losses: nothing was compared"
want = (f"{worst[0]:.2f}", str(worst[1]), f"{pct[-1][0]:.2f}")
assert m.groups() == want, f"BENCH says {m.groups()}, the runs {want}"
print(f"bench_loss: largest {want[0]}% at step {want[1]}, last {want[2]}%, as computed here")
PY
if OUT="$work/bad" bench/bench_loss.sh "$build" ref: bad:no_such_key=1 >"$work/bad.log" 2>&1; then
  fail "a run with a bad key did not end the benchmark" "$work/bad.log"
fi
grep -q "bench_loss: bad failed" "$work/bad.log" || fail "the failed run is not named" "$work/bad.log"
echo "bench_loss.sh: OK"
