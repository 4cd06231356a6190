#!/usr/bin/env bash
# A HellaSwag file that is missing or malformed ends the trainer (every rank)
# and gpt2_eval with exit code 2 and a message naming the file and line and
# what is wrong there; so do hellaswag_data without evaluations and bad
# gpt2_eval arguments. The malformed lines are tests/lib/hellaswag_data.py's.
# The good file is evaluated by a run and by gpt2_eval.
# usage: hellaswag_errors.sh GPT2_DDP GPT2_EVAL WORK_DIR
set -uo pipefail
bin=$1 eval=$2 work=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
source tests/lib/mpi_env.sh
rm -rf "$work" && mkdir -p "$work"
failed=0

# expect RC REGEX CMD...: exit code RC and REGEX (grep -E) on stderr.
expect() {
  local rc=$1 re=$2; shift 2
  "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [ "$got" -ne "$rc" ] || { [ -n "$re" ] && ! grep -Eq -- "$re" "$work/err"; }; then
    echo "FAIL: $* -> exit $got (expected $rc), stderr:"; cat "$work/err"
    failed=1
  fi
}

# A good file of 5 examples, and one per malformed case with line 3 replaced.
/usr/bin/python3 - "$work" <<'PY' || exit 1
import os, sys
sys.path.insert(0, "tests/lib")
import hellaswag_data as h
work = sys.argv[1]
good = h.make_examples(".", 5)
h.write_jsonl(os.path.join(work, "good.jsonl"), good)
lines = open(os.path.join(work, "good.jsonl")).read().splitlines()
with open(os.path.join(work, "cases.txt"), "w") as cases:
    for name, (line, message) in h.MALFORMED.items():
        with open(os.path.join(work, name + ".jsonl"), "w") as f:
            f.write("\n".join(lines[:2] + [line] + lines[3:]) + "\n")
        cases.write(f"{name}\t{message}\n")
PY

run=(configs/tiny.ini out_dir="$work/runs" eval_batches=1 max_steps=1 warmup_steps=0)
n=0
while IFS=$'\t' read -r name message; do
  f="$work/$name.jsonl"
  expect 2 "^gpt2_ddp: error: hellaswag_data: .*$name\.jsonl:3: $message" "$bin" "${run[@]}" run_name="$name" hellaswag_data="$f"
  n=$((n + 1))
done <"$work/cases.txt"
echo "trainer: $n malformed files refused"

expect 2 "hellaswag_data: .*/missing\.jsonl: cannot read: No such file or directory" \
  "$bin" "${run[@]}" run_name=missing hellaswag_data="$work/missing.jsonl"
printf '\n\n' >"$work/empty.jsonl"
expect 2 "hellaswag_data: .*/empty\.jsonl: no examples in the file" \
  "$bin" "${run[@]}" run_name=empty hellaswag_data="$work/empty.jsonl"
expect 2 "hellaswag_data is set but eval_every = 0" \
  "$bin" "${run[@]}" eval_every=0 hellaswag_data="$work/good.jsonl"
expect 2 "tokenizer_dir = $work/no_tokenizer: .*encoder\.json" \
  "$bin" "${run[@]}" run_name=tok hellaswag_data="$work/good.jsonl" tokenizer_dir="$work/no_tokenizer"
# Two ranks: both exit 2 (mpirun reports the job's code), the message once.
expect 2 "label_range\.jsonl:3: \"label\" = 4" \
  mpi_run -np 2 "$bin" "${run[@]}" run_name=np2 hellaswag_data="$work/label_range.jsonl"
[ "$(grep -c 'error:' "$work/err")" -eq 1 ] || { echo "FAIL: 2 ranks printed the error $(grep -c 'error:' "$work/err") times"; failed=1; }
ls "$work/runs/np2" 2>/dev/null | grep -q . && { echo "FAIL: a refused run wrote files: $(ls "$work/runs/np2")"; failed=1; }

# The good file in a run (the one whose model.h5 gpt2_eval reads below):
# the trainer's own HellaSwag evaluation, logged. Under the sanitizers this
# is the run that reads a good file through the trainer's path.
"$bin" "${run[@]}" run_name=weights eval_every=1 log_every=0 hellaswag_data="$work/good.jsonl" \
  >"$work/weights.log" 2>&1 || { cat "$work/weights.log"; exit 1; }
grep -q '^{"type":"hellaswag","step":1,.*"n":5,' "$work/runs/weights/metrics.jsonl" ||
  { echo "FAIL: the run logged no HellaSwag record of the 5 examples"; cat "$work/weights.log"; failed=1; }

# gpt2_eval: the same file errors, and its arguments.
w="$work/runs/weights/model.h5"
expect 2 "^gpt2_eval.*--hellaswag: .*not_json\.jsonl:3: not valid JSON" \
  "$eval" --weights "$w" --hellaswag "$work/not_json.jsonl"
expect 2 "--hellaswag: .*missing\.jsonl: cannot read" "$eval" --weights "$w" --hellaswag "$work/missing.jsonl"
expect 2 "--weights PATH is required" "$eval" --hellaswag "$work/good.jsonl"
expect 2 "--weights: .*nothing\.h5: No such file" "$eval" --weights "$work/nothing.h5" --hellaswag "$work/good.jsonl"
expect 2 "nothing to evaluate" "$eval" --weights "$w"
expect 2 "--device tpu: must be cpu or cuda" "$eval" --weights "$w" --hellaswag "$work/good.jsonl" --device tpu
expect 2 "--batch 0: not a positive integer" "$eval" --weights "$w" --hellaswag "$work/good.jsonl" --batch 0
expect 2 "--seq-len 4096: the model's block_size is 128" "$eval" --weights "$w" --val "data/nlp-corpus/nlp_val_*.bin" --seq-len 4096
expect 2 "--val: .*no_shards_\*\.bin" "$eval" --weights "$w" --val "$work/no_shards_*.bin"
expect 0 "" "$eval" --weights "$w" --hellaswag "$work/good.jsonl" --seq-len 64
grep -q "^hellaswag acc_norm .* (.*/5) " "$work/out" || { echo "FAIL: no HellaSwag line for the good file"; cat "$work/out"; failed=1; }
[ "$failed" -eq 0 ] && echo "ok: every malformed file and bad argument exits 2 naming the problem"
exit "$failed"
