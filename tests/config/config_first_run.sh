#!/bin/sh
# A first run's command line through the real binary: --max_steps=3 and
# max_steps=3 give the same resolved config and, in a 3-step tiny run, the
# same step records; a warm-up chosen for a longer run (the defaults', a
# config file's) is shortened to its share of a max_steps given after it,
# with a note; one given with max_steps stays the user's and is refused.
#   config_first_run.sh GPT2_DDP CONFIG.ini WORK_DIR
set -u
bin=$1 tiny=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
failed=0
fail() { echo "FAIL: $*"; failed=1; }
py=/usr/bin/python3

# (1) the same run in both spellings: config and step records.
"$bin" --print-config "$tiny" max_steps=3 >"$work/plain.ini" 2>&1 || fail "max_steps=3: $(cat "$work/plain.ini")"
"$bin" --print-config "$tiny" --max_steps=3 >"$work/flag.ini" 2>&1 || fail "--max_steps=3: $(cat "$work/flag.ini")"
cmp -s "$work/plain.ini" "$work/flag.ini" || fail "configs differ: $(diff "$work/plain.ini" "$work/flag.ini")"
grep -q '^max_steps = 3$' "$work/flag.ini" || fail "--max_steps=3 not in the config"
common="eval_every=0 log_every=1 out_dir=$work"
# shellcheck disable=SC2086
"$bin" "$tiny" max_steps=3 $common run_name=plain >"$work/plain.log" 2>&1 || fail "plain run: $(tail -3 "$work/plain.log")"
# shellcheck disable=SC2086
"$bin" "$tiny" --max_steps=3 $common run_name=flag >"$work/flag.log" 2>&1 || fail "flag run: $(tail -3 "$work/flag.log")"
$py - "$work/plain/metrics.jsonl" "$work/flag/metrics.jsonl" <<'PY' || failed=1
import json, sys
def steps(path):
    recs = [json.loads(line) for line in open(path) if line.strip()]
    return [(r["step"], r["loss"], r["lr"]) for r in recs if r.get("type") == "step"]
a, b = steps(sys.argv[1]), steps(sys.argv[2])
if len(a) != 3 or a != b:
    print(f"FAIL: step records differ or are not 3: {a} vs {b}")
    sys.exit(1)
print(f"ok: 3 identical step records (step, loss, lr): {a}")
PY

# (2) the warm-up fitted: expected = floor(warmup * max_steps / the
# max_steps it was chosen for), read from the printed configs.
value() { sed -n "s/^$1 = //p" "$2"; }
fitted() { # NAME BASE_CONFIG_OUTPUT MAX_STEPS ARGS...: the run's warm-up is fitted
    name=$1 base=$2 max=$3
    shift 3
    "$bin" --print-config "$@" >"$work/$name.ini" 2>&1 || { fail "$name: exit $?: $(cat "$work/$name.ini")"; return; }
    w=$(value warmup_steps "$base") m=$(value max_steps "$base")
    want=$($py -c "print(min($w * $max // $m, $max))")
    got=$(value warmup_steps "$work/$name.ini")
    [ "$got" = "$want" ] || fail "$name: warmup_steps = $got, expected $want ($w x $max / $m)"
    grep -q "^# note: warmup_steps = $w (.*for max_steps = $m) is longer than max_steps = $max: using warmup_steps = $want" \
        "$work/$name.ini" || fail "$name: no note: $(head -2 "$work/$name.ini")"
    echo "ok: $name: warmup_steps $w (for $m steps) -> $got for $max steps"
}
"$bin" --print-config --lr=6e-4 >"$work/defaults.ini" 2>&1 || fail "defaults: $(cat "$work/defaults.ini")"
"$bin" --print-config "$tiny" >"$work/tiny.ini" 2>&1 || fail "tiny: $(cat "$work/tiny.ini")"
fitted defaults_10 "$work/defaults.ini" 10 --max_steps=10
fitted defaults_500 "$work/defaults.ini" 500 --max_steps 500
fitted tiny_3 "$work/tiny.ini" 3 "$tiny" --max_steps=3
fitted tiny_15 "$work/tiny.ini" 15 "$tiny" max_steps=15
# A file that sets max_steps alone: the defaults' warm-up is fitted to it.
printf 'max_steps = 100\n' >"$work/short.ini"
fitted file_100 "$work/defaults.ini" 100 "$work/short.ini"
# Not fitted: a warm-up that fits, or one set with (or after) max_steps.
"$bin" --print-config --max_steps=5000 >"$work/long.ini" 2>&1
[ "$(value warmup_steps "$work/long.ini")" = "$(value warmup_steps "$work/defaults.ini")" ] &&
    ! grep -q note "$work/long.ini" || fail "a warm-up that fits was changed: $(head -2 "$work/long.ini")"
"$bin" "$tiny" --max_steps=3 --warmup_steps=4 --print-config >"$work/both.out" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "warmup_steps = 4 is larger than max_steps = 3: .*--warmup_steps=N with N <= 3" "$work/both.out" ||
    fail "warmup_steps=4 with max_steps=3: exit $rc: $(cat "$work/both.out")"
# A real run of the defaults' schedule shortened: it starts (dry run).
"$bin" --max_steps=10 --dry_run >"$work/dry.log" 2>&1 || fail "--max_steps=10 --dry_run: exit $?: $(tail -3 "$work/dry.log")"

[ $failed -eq 0 ] && echo "first-run command line: OK"
exit $failed
