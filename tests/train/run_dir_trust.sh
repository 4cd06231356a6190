#!/usr/bin/env bash
# A run directory that holds something else under the names the run writes
# (issue 61, kind 4): a symbolic link must never redirect a write out of the
# directory, and a directory, FIFO or link where the run keeps a file of its
# own ends the start at once (exit 2, naming the path and the fix), before
# any step, instead of at the first save or never (a FIFO blocks).
# usage: run_dir_trust.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
run=(configs/tiny.ini device=cpu max_steps=2 warmup_steps=1 eval_every=0 log_every=1
     checkpoint_every=2 out_dir="$work")
echo precious >"$work/outside.txt"
mkdir -p "$work/outside_dir" && echo precious >"$work/outside_dir/keep.txt"

# Links under the temporary names the run creates and renames: replaced,
# never followed; the files they point to keep their bytes.
mkdir -p "$work/links"
ln -s "$work/outside.txt" "$work/links/model.h5.tmp"
ln -s "$work/outside.txt" "$work/links/latest.tmp"
ln -s "$work/outside_dir" "$work/links/step_00000002.tmp"
timeout 60 "$bin" "${run[@]}" run_name=links >"$work/links.log" 2>&1 || fail "links: the run failed" "$work/links.log"
[ "$(cat "$work/outside.txt")" = precious ] || fail "a link redirected a write to outside.txt"
[ "$(cat "$work/outside_dir/keep.txt")" = precious ] || fail "a link redirected the removal of outside_dir"
[ -f "$work/links/model.h5" ] && [ ! -L "$work/links/model.h5" ] || fail "model.h5 is not a file of the run directory"
[ "$(readlink "$work/links/latest")" = step_00000002 ] || fail "latest does not name step_00000002"
/usr/bin/python3 -c "import h5py,sys; h5py.File(sys.argv[1]).attrs['format']" "$work/links/model.h5" \
  || fail "model.h5 does not read back"
echo "links: replaced, outside files untouched"

# refused NAME KIND MAKE: a start on a directory where MAKE made NAME exits
# 2 within the limit, names the path and what it is, and trains no step.
cases=0
refused() {
  cases=$((cases + 1))
  local name=$1 kind=$2 make=$3 dir="$work/case$cases"
  mkdir -p "$dir" && (cd "$dir" && eval "$make")
  local rc=0
  timeout 30 "$bin" "${run[@]}" run_name="$(basename "$dir")" >"$dir.log" 2>&1 || rc=$?
  [ $rc -eq 2 ] || fail "$name as $kind: exit $rc, expected 2" "$dir.log"
  grep -q "error: $dir/$name is $kind, where the run keeps .*Move it aside (mv $dir/$name $dir/$name.moved)" "$dir.log" \
    || fail "$name as $kind: no message naming it" "$dir.log"
  ! grep -q "^step " "$dir.log" || fail "$name as $kind: steps ran before the refusal" "$dir.log"
  printf '%-14s %-22s exit 2: %s\n' "$name" "$kind" "$(grep -o 'error: .*' "$dir.log" | cut -c1-100)"
}
refused latest "a directory" "mkdir latest"
refused latest.tmp "a directory" "mkdir latest.tmp"
refused model.h5 "a directory" "mkdir model.h5"
refused model.h5.tmp "a directory" "mkdir model.h5.tmp"
refused metrics.jsonl "a symbolic link" "ln -s $work/outside.txt metrics.jsonl"
refused metrics.jsonl "a FIFO (named pipe)" "mkfifo metrics.jsonl"
refused samples.jsonl "a symbolic link" "ln -s $work/outside.txt samples.jsonl"
refused gpt2_ddp.lock "a FIFO (named pipe)" "mkfifo gpt2_ddp.lock"
refused gpt2_ddp.lock "a symbolic link" "ln -s $work/outside.txt gpt2_ddp.lock"
[ "$(cat "$work/outside.txt")" = precious ] || fail "a refused start wrote to outside.txt"
echo "run_dir_trust: OK"
