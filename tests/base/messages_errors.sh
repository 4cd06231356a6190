#!/usr/bin/env bash
# Errors as a user reads them. The one-process tools (gpt2_sample,
# gpt2_eval, gpt2_convert) and the trainer on one rank say "PROG: error:
# ..." with no source file:line and no [rank R/N host] prefix; GPT2_DEBUG=1
# brings file:line back. A run directory given as --weights is read through
# its model.h5 (gpt2_sample says which file), a directory without weights is
# refused naming what it lacks. A data pattern that matches nothing exits 2
# with a hint: how shards are made (train_data), --val-files or
# eval_every = 0 (val_data), once on 2 ranks.
# gpt2_tokenize without --val-files says it wrote no val shards.
# usage: messages_errors.sh GPT2_DDP GPT2_SAMPLE GPT2_EVAL GPT2_CONVERT GPT2_TOKENIZE WORK_DIR
set -euo pipefail
bin=$1 sample=$2 eval=$3 convert=$4 tokenize=$5 work=$6
cd "$(dirname "$0")/../.."
source tests/lib/mpi_env.sh
rm -rf "$work"; mkdir -p "$work/empty"
failures=0
fail() { echo "FAIL: $1"; [ -z "${2:-}" ] || { echo "---- $2"; cat "$2"; }; failures=$((failures + 1)); }
# expect NAME CODE PATTERN COMMAND...: exit CODE, stderr holds PATTERN (grep -E)
# and no source position or rank prefix.
expect() {
  local name=$1 want=$2 pattern=$3 rc=0; shift 3
  timeout 120 "$@" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
  [ "$rc" -eq "$want" ] || { fail "$name: exit $rc, expected $want" "$work/$name.err"; return; }
  grep -qE -- "$pattern" "$work/$name.err" || { fail "$name: stderr lacks /$pattern/" "$work/$name.err"; return; }
  if grep -qE '\.(c|cu|h):[0-9]+|\[rank ' "$work/$name.err"; then
    fail "$name: a source position or rank prefix" "$work/$name.err"; return
  fi
  echo "ok: $name: $(grep -m1 -E -- "$pattern" "$work/$name.err")"
}

expect sample_missing 2 "^gpt2_sample: error: --weights: $work/nothing: No such file or directory$" \
  "$sample" --weights "$work/nothing"
expect eval_missing 2 "^gpt2_eval: error: --weights: $work/nothing: No such file" \
  "$eval" --weights "$work/nothing" --val "data/nlp-corpus/nlp_val_*.bin"
expect convert_missing 2 "^gpt2_convert: error: .*$work/nothing" "$convert" "$work/nothing" "$work/x.h5"
expect sample_bad_option 2 "^gpt2_sample: error: --tokens x: not a positive integer" \
  "$sample" --weights "$work/nothing" --tokens x
expect sample_empty_dir 2 "^gpt2_sample: error: --weights: $work/empty: a directory without weights: no model.h5 .*no complete step_\* checkpoint" \
  "$sample" --weights "$work/empty"
mkdir -p "$work/partial/step_00000002" && : >"$work/partial/step_00000002/model.h5"
expect sample_partial_ckpt 2 "an incomplete checkpoint \(no COMPLETE marker" \
  "$sample" --weights "$work/partial/step_00000002"

# GPT2_DEBUG=1: the source position for whoever debugs it.
rc=0; GPT2_DEBUG=1 "$sample" --weights "$work/nothing" 2>"$work/debug.err" || rc=$?
if [ "$rc" -eq 2 ] && grep -qE '^gpt2_sample: .*tools/gpt2_sample\.c:[0-9]+: error: --weights' "$work/debug.err"; then
  echo "ok: GPT2_DEBUG=1: $(cat "$work/debug.err")"
else
  fail "GPT2_DEBUG=1 does not show file:line (exit $rc)" "$work/debug.err"
fi

# The trainer on one rank: the same format.
run=(configs/tiny.ini max_steps=2 warmup_steps=1 eval_every=1 eval_batches=1 out_dir="$work/runs")
expect val_no_match 2 "^gpt2_ddp: error: val_data: no files match pattern '$work/none_val_\*\.bin'" \
  "$bin" "${run[@]}" val_data="$work/none_val_*.bin"
grep -qF -- "only when given --val-files N" "$work/val_no_match.err" &&
  grep -qF "set eval_every = 0 to train without validation" "$work/val_no_match.err" ||
  fail "val_data: no hint on --val-files and eval_every = 0" "$work/val_no_match.err"
expect train_no_match 2 "^gpt2_ddp: error: train_data: no files match pattern" \
  "$bin" "${run[@]}" train_data="$work/none_train_*.bin" eval_every=0
grep -qF "tools/gpt2_tokenize" "$work/train_no_match.err" && grep -qF "tools/prepare_data.sh" "$work/train_no_match.err" ||
  fail "train_data: no hint on how shards are made" "$work/train_no_match.err"
[ ! -e "$work/runs/tiny/gpt2_ddp.lock" ] || fail "the refused start left its lock file"
# The issue's path: own text tokenized without --val-files, then trained.
mkdir -p "$work/text" && for i in 1 2 3; do seq -s " " 1 200 >"$work/text/$i.txt"; done
"$tokenize" --out-dir "$work/shards" "$work/text" 2>"$work/tokenize.err" || fail "gpt2_tokenize failed" "$work/tokenize.err"
grep -qF "gpt2_tokenize: note: no val shards (--val-files 0): train with eval_every = 0" "$work/tokenize.err" ||
  fail "gpt2_tokenize does not say it wrote no val shards" "$work/tokenize.err"
expect own_text_no_val 2 "^  gpt2_tokenize writes val shards .* only when given --val-files N" \
  "$bin" "${run[@]}" train_data="$work/shards/data_train_*.bin" val_data="$work/shards/data_val_*.bin"
# Two ranks: one message, not one per rank.
rc=0; mpi_run -np 2 "$bin" "${run[@]}" val_data="$work/none_val_*.bin" >"$work/np2.out" 2>"$work/np2.err" || rc=$?
n=$(grep -c "error: val_data: no files match" "$work/np2.err" || true)
[ "$rc" -eq 2 ] && [ "$n" -eq 1 ] || fail "2 ranks: exit $rc, $n error line(s) (want 2 and 1)" "$work/np2.err"

# A run directory as --weights: its model.h5, named on stderr.
"$bin" "${run[@]}" >"$work/train.log" 2>&1 || fail "training the run for --weights failed" "$work/train.log"
rc=0; "$sample" --weights "$work/runs/tiny" --tokens 4 >"$work/dir.out" 2>"$work/dir.err" || rc=$?
if [ "$rc" -eq 0 ] && grep -qxF "gpt2_sample: weights from $work/runs/tiny/model.h5" "$work/dir.err" &&
   [ -s "$work/dir.out" ]; then
  echo "ok: --weights RUN_DIR: $(cat "$work/dir.err")"
else
  fail "--weights RUN_DIR: exit $rc" "$work/dir.err"
fi
# The same text as from the file itself: the same weights were read.
"$sample" --weights "$work/runs/tiny/model.h5" --tokens 4 >"$work/file.out" 2>/dev/null
cmp -s "$work/dir.out" "$work/file.out" || fail "--weights RUN_DIR and RUN_DIR/model.h5 sample differently"

echo "$failures failed"
[ "$failures" -eq 0 ]
