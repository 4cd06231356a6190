#!/usr/bin/env bash
# A metrics.jsonl whose last record was cut by a crash (no end of line):
# the resumed run drops the cut record, says so, keeps every record before
# it, and appends its own on lines of their own, so that every line parses
# and tools/plot_run.py draws the run.
# usage: metrics_cut.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $1"; [ -z "${2:-}" ] || cat "$2"; exit 1; }
run=(configs/tiny.ini max_steps=4 warmup_steps=1 eval_every=2 eval_batches=1 log_every=1
     checkpoint_every=2 out_dir="$work" run_name=cut)
"$bin" "${run[@]}" >"$work/first.log" 2>&1 || fail "first run" "$work/first.log"
jsonl=$work/cut/metrics.jsonl
before=$(wc -l <"$jsonl")
printf '{"type":"step","step":5,"loss":7.1' >>"$jsonl" # a crash in the middle of a record
"$bin" "${run[@]}" max_steps=6 allow_changed=max_steps >"$work/resume.log" 2>&1 || fail "resume" "$work/resume.log"
grep -q "^note: .*metrics.jsonl ended in a cut record (34 bytes, a crash while writing): dropped" "$work/resume.log" \
  || fail "no note about the cut record" "$work/resume.log"
/usr/bin/python3 - "$jsonl" "$before" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[-1] == "", "the file does not end with a newline"
records = [json.loads(l) for l in lines[:-1]]  # every line parses
steps = [r["step"] for r in records if r["type"] == "step"]
assert steps[:4] == [1, 2, 3, 4] and steps[-2:] == [5, 6], steps
assert len(lines) - 1 > int(sys.argv[2]), "records before the cut were lost"
print(f"metrics.jsonl: {len(records)} records, all parse; steps {steps}")
PY
/usr/bin/python3 tools/plot_run.py "$work/cut" -o "$work/cut.png" >"$work/plot.log" 2>&1 || fail "plot_run.py refused the mended file" "$work/plot.log"
echo "metrics_cut: OK"
