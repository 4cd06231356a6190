#!/usr/bin/env bash
# Checkpoint directories that used to block a run for good, recovered
# without deleting anything (2 CPU ranks, tiny config, a good run with
# checkpoints at steps 2 and 4 copied for each case):
#  (1) step_00000004 without its COMPLETE marker: resume=auto resumes from
#      step 2, moves it aside to step_00000004.incomplete (content intact),
#      saves steps 4 and 6 (exit 0); the same again makes
#      step_00000004.incomplete.2;
#  (2) an incomplete step_00000006 made while the run trains (during the
#      save of step 4): the save of step 6 moves it aside and succeeds;
#  (3) step 4's shard damaged (a flipped bit): resume=<step 2> resumes from
#      step 2, step 4 is moved aside to
#      step_00000004.superseded_by_step_00000002 byte for byte, and the run
#      saves steps 4 and 6 (exit 0); resume=auto names the damaged
#      checkpoint and the exact resume=<step 2> (exit 1, nothing moved), and
#      that resume= then works as above. The same command again (a requeued
#      job) continues from step 6 instead of going back again.
# usage: ckpt_recover.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
# The base run ends at step 4, the resumes go on to 6 or 8: max_steps may change.
run=(configs/tiny.ini warmup_steps=1 eval_every=0 log_every=1 checkpoint_every=2 run_name=base
     allow_changed=max_steps)
mpi_run -np 2 "$bin" "${run[@]}" max_steps=4 out_dir="$work/good" >"$work/good.log" 2>&1 \
  || fail "base run" "$work/good.log"

# resume_ok CASE [key=value...]: resumes WORK/CASE to step 6; exit 0 expected.
resume_ok() {
  local name=$1; shift
  mpi_run -np 2 "$bin" "${run[@]}" max_steps=6 out_dir="$work/$name" "$@" >"$work/$name.log" 2>&1 \
    || fail "$name: exit $?, expected 0" "$work/$name.log"
}
# saved_through CASE: latest -> step 6, and steps 4 and 6 are complete.
saved_through() {
  local d=$work/$1/base
  [ "$(readlink "$d/latest")" = step_00000006 ] && [ -f "$d/step_00000004/COMPLETE" ] \
    && [ -f "$d/step_00000006/COMPLETE" ] || fail "$1: steps 4 and 6 not saved" "$work/$1.log"
}
# same_tree A B: the same files with the same bytes.
same_tree() { diff -r "$1" "$2" >/dev/null || fail "$2 differs from $1"; }

# (1)
cp -a "$work/good" "$work/incomplete"
rm "$work/incomplete/base/step_00000004/COMPLETE"
cp -a "$work/incomplete/base/step_00000004" "$work/incomplete_step4"
resume_ok incomplete
grep "^resumed from $work/incomplete/base/step_00000002: step 2" "$work/incomplete.log" >/dev/null \
  || fail "incomplete: not resumed from step 2" "$work/incomplete.log"
grep -o "checkpoint: .*step_00000004 has no COMPLETE marker.*moved aside to .*step_00000004.incomplete (not deleted.*" \
  "$work/incomplete.log" || fail "incomplete: no message on moving it aside" "$work/incomplete.log"
same_tree "$work/incomplete_step4" "$work/incomplete/base/step_00000004.incomplete"
saved_through incomplete
echo "(1) incomplete step 4: resumed from step 2, moved aside with its files, steps 4 and 6 saved"
rm "$work/incomplete/base/step_00000004/COMPLETE" "$work/incomplete/base/step_00000006/COMPLETE"
resume_ok incomplete
[ -d "$work/incomplete/base/step_00000004.incomplete.2" ] && [ -d "$work/incomplete/base/step_00000006.incomplete" ] \
  && [ -d "$work/incomplete/base/step_00000004.incomplete" ] || fail "incomplete again: $(ls "$work/incomplete/base")"
saved_through incomplete
echo "(1) again: step_00000004.incomplete.2 and step_00000006.incomplete, the first one kept; saved again"

# (2) an incomplete target made during the run: the save holds step 4 open
# for 3 s after the ranks wrote their files, time to make step_00000006.
cp -a "$work/good" "$work/target"
rm -r "$work/target/base/step_00000004"
mpirun --bind-to none -np 2 -x GPT2_TEST_SAVE_DELAY_MS=3000 "$bin" "${run[@]}" max_steps=6 \
  out_dir="$work/target" >"$work/target.log" 2>&1 &
launcher=$!
wait_for '[ -f "$work/target/base/step_00000004.tmp/shard_00001.h5" ]'
mkdir "$work/target/base/step_00000006" && echo partial >"$work/target/base/step_00000006/shard_00000.h5"
set +e; wait $launcher; rc=$?; set -e
[ $rc -eq 0 ] || fail "target: exit $rc, expected 0" "$work/target.log"
grep -o "checkpoint: .*step_00000006 has no COMPLETE marker.*" "$work/target.log" \
  || fail "target: no message on moving it aside" "$work/target.log"
[ "$(cat "$work/target/base/step_00000006.incomplete/shard_00000.h5")" = partial ] \
  || fail "target: the moved-aside directory lost its content"
saved_through target
echo "(2) an incomplete step_00000006 made mid-run: moved aside by the save, step 6 saved"

# (3) a damaged newest checkpoint
cp -a "$work/good" "$work/damaged"
/usr/bin/python3 - "$work/damaged/base/step_00000004/shard_00000.h5" <<'PY'
import sys, h5py
path = sys.argv[1]
with h5py.File(path, "r") as f:
    offset = f["m"].id.get_offset()  # contiguous data (CRC32C per 4 MiB)
data = bytearray(open(path, "rb").read())
data[offset + 1000] ^= 0x10
open(path, "wb").write(data)
PY
cp -a "$work/damaged/base/step_00000004" "$work/damaged_step4"
set +e
mpi_run -np 2 "$bin" "${run[@]}" max_steps=6 out_dir="$work/damaged" >"$work/damaged_auto.log" 2>&1
rc=$?
set -e
[ $rc -eq 1 ] || fail "damaged, resume=auto: exit $rc, expected 1" "$work/damaged_auto.log"
hint=$(grep -o "checkpoint $work/damaged/base/step_00000004 cannot be loaded.*" "$work/damaged_auto.log" | head -1) \
  || fail "damaged, resume=auto: no way back named" "$work/damaged_auto.log"
echo "$hint" | grep -q "resume=$work/damaged/base/step_00000002 " \
  && echo "$hint" | grep -q "mv $work/damaged/base/step_00000004 $work/damaged/base/step_00000004.damaged" \
  || fail "damaged, resume=auto: the hint lacks the exact resume= or mv: $hint"
echo "(3) resume=auto: exit 1: ${hint//$work\//}"
cmd=$(echo "$hint" | grep -o "resume=[^ ]*" | head -1)
same_tree "$work/damaged_step4" "$work/damaged/base/step_00000004"
resume_ok damaged "$cmd"
grep "^resumed from .*step_00000002: step 2" "$work/damaged.log" >/dev/null || fail "damaged: not resumed from step 2" "$work/damaged.log"
aside=$work/damaged/base/step_00000004.superseded_by_step_00000002
grep -o "checkpoint: .*step_00000004 is newer than the checkpoint this run went back to: moved aside to $aside " \
  "$work/damaged.log" || fail "damaged: no message on moving step 4 aside" "$work/damaged.log"
same_tree "$work/damaged_step4" "$aside"
saved_through damaged
echo "(3) the hint's $cmd: resumed from step 2, the damaged step 4 moved aside byte for byte, steps 4 and 6 saved"
mpi_run -np 2 "$bin" "${run[@]}" max_steps=8 out_dir="$work/damaged" "$cmd" >"$work/requeue.log" 2>&1 \
  || fail "requeue with $cmd: exit $?" "$work/requeue.log"
grep -o "this run already went back to step 2 once; continuing from its newest checkpoint, .*step_00000006" "$work/requeue.log" \
  && grep -q "^resumed from $work/damaged/base/step_00000006: step 6" "$work/requeue.log" \
  || fail "requeue with $cmd did not continue from step 6" "$work/requeue.log"
[ "$(ls -d "$work/damaged/base"/step_*.superseded* | wc -l)" = 1 ] && [ -f "$work/damaged/base/step_00000008/COMPLETE" ] \
  || fail "requeue: $(ls "$work/damaged/base")"
echo "(3) the same command again (a requeue): continued from step 6 to 8, nothing moved"
echo "recover: OK"
