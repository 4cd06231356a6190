#!/usr/bin/env bash
# tools/plot_run.py on real runs: two tiny runs (one with HellaSwag, one at
# another learning rate) overlaid into one PNG, and one run into its default
# plot.png; each must be a PNG (signature, IHDR size) with every record the
# runs logged counted; then the second run restarted from its step-10
# checkpoint, plotted over tokens: its steps after 10 are the new start's,
# at step x 1,024 tokens. A directory without metrics.jsonl, a missing
# directory and a broken metrics line fail with exit code 2 naming them.
# (tests/train/test_plot_run.py checks the plotted series in detail.)
# usage: plot_run.sh GPT2_DDP WORK_DIR
set -uo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
rm -rf "$work" && mkdir -p "$work/empty" "$work/broken"
failed=0
/usr/bin/python3 -c "import matplotlib" || { echo "FAIL: no matplotlib (tools/setup.sh installs python3-matplotlib)"; exit 1; }
/usr/bin/python3 -c "
import sys; sys.path.insert(0, 'tests/lib')
import hellaswag_data as h; h.write_jsonl('$work/hellaswag.jsonl', h.make_examples('.', 8))" || exit 1
common=(configs/tiny.ini max_steps=20 warmup_steps=5 eval_every=10 eval_batches=1 log_every=2 out_dir="$work")
"$bin" "${common[@]}" run_name=lr3e-3 hellaswag_data="$work/hellaswag.jsonl" >"$work/a.log" 2>&1 || { cat "$work/a.log"; exit 1; }
"$bin" "${common[@]}" run_name=lr1e-3 lr=1e-3 checkpoint_every=10 >"$work/b.log" 2>&1 || { cat "$work/b.log"; exit 1; }

plot() { /usr/bin/python3 tools/plot_run.py "$@"; }
check_png() { # FILE: PNG signature and a non-empty image in its IHDR
  /usr/bin/python3 - "$1" <<'PY' || failed=1
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature"
width, height = struct.unpack(">II", data[16:24])
assert data[12:16] == b"IHDR" and width > 0 and height > 0, "no image header"
print(f"{sys.argv[1]}: PNG {width}x{height}, {len(data)} bytes")
PY
}
out=$(plot "$work/lr3e-3" "$work/lr1e-3" -o "$work/both.png") || { echo "$out"; failed=1; }
echo "$out"
grep -q "^lr3e-3: 11 steps, 3 evals, 3 HellaSwag evals$" <<<"$out" || { echo "FAIL: run a's records not all read"; failed=1; }
grep -q "^lr1e-3: 11 steps, 3 evals, 0 HellaSwag evals$" <<<"$out" || { echo "FAIL: run b's records not all read"; failed=1; }
check_png "$work/both.png"
plot "$work/lr3e-3" >/dev/null && check_png "$work/lr3e-3/plot.png"

# A real restart: run b again from its step-10 checkpoint (its steps after 10
# are replaced), plotted over tokens: 1,024 a step (tiny.ini's total_batch,
# from the run record, or --tokens-per-step where the trainer writes none).
"$bin" "${common[@]}" run_name=lr1e-3 lr=1e-3 checkpoint_every=10 \
  resume="$work/lr1e-3/step_00000010" >"$work/b2.log" 2>&1 || { cat "$work/b2.log"; exit 1; }
out=$(plot "$work/lr3e-3" "$work/lr1e-3" -o "$work/tokens.png" --x tokens --tokens-per-step 1024 \
  --log-y --dump "$work/tokens.json") || { echo "$out"; failed=1; }
echo "$out"
grep -Eq "^lr1e-3: 11 steps, [0-9]+ evals, 0 HellaSwag evals, (resumed at step 10|restarted before step 12)$" \
  <<<"$out" || { echo "FAIL: run b's restart not found"; failed=1; }
check_png "$work/tokens.png"
/usr/bin/python3 - "$work/tokens.json" "$work/lr1e-3/metrics.jsonl" <<'PY' || failed=1
import json, sys
dump = json.load(open(sys.argv[1]))
runs = {r["label"]: r for r in dump["runs"]}
lines = [json.loads(l) for l in open(sys.argv[2])]
last = {}  # the second start's records are those after the last step-1..10 ones
for r in lines:
    if r.get("type") == "step":
        last[r["step"]] = r["loss"]
loss = runs["lr1e-3"]["panels"]["train_loss"]
assert loss["x"] == [s * 1024 for s in loss["step"]], "tokens != step * 1024"
assert loss["y"] == [last[s] for s in loss["step"]], "not the latest record of each step"
assert loss["step"][-1] == 20 and max(loss["segment"]) == 1, "the restart is not a new segment"
print("ok: real restart over tokens")
PY

expect_fail() { # REGEX DIR...
  local re=$1; shift
  plot "$@" -o "$work/bad.png" >/dev/null 2>"$work/err"
  local rc=$?
  if [ $rc -ne 2 ] || ! grep -Eq "$re" "$work/err"; then
    echo "FAIL: plot_run.py $* -> exit $rc, stderr: $(cat "$work/err")"; failed=1
  fi
}
expect_fail "empty: no metrics.jsonl" "$work/empty"
expect_fail "nowhere: not a directory" "$work/lr3e-3" "$work/nowhere"
echo '{"type":"step","step":1,"loss":1}' >"$work/broken/metrics.jsonl"
echo 'garbage' >>"$work/broken/metrics.jsonl"
expect_fail "broken/metrics.jsonl:2: not JSON" "$work/broken"
[ -e "$work/bad.png" ] && { echo "FAIL: a failed plot wrote a file"; failed=1; }
[ $failed -eq 0 ] && echo "ok: plots written, bad directories refused"
exit $failed
