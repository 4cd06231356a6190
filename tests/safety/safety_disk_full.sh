#!/usr/bin/env bash
# A full disk (2 CPU ranks, tiny config) while writing a checkpoint, the
# final weights and the metrics: every rank ends with the system's message
# naming the file, exit 1, no segfault or core dump (HDF5's exit handler
# used to crash: exit 139), and the previous checkpoint stays intact and
# resumable. The disk is a small tmpfs mounted here (removed at exit); where
# mounting is refused (an unprivileged CI container) a file-size limit
# (ulimit -f on the ranks: writes fail with EFBIG) stands in for it.
#  (1) checkpoint: step 2's checkpoint (51 MB) fits, step 4's does not:
#      exit 1, latest -> step 2 (complete), also when step 4 is written in
#      the background (checkpoint_async=true); a copy of the run directory
#      resumes from step 2 and finishes (exit 0);
#      the resumed copy removes the partial step_00000004.tmp;
#  (2) the final weights (model.h5, 13 MB) do not fit: exit 1 naming it,
#      and no half-written model.h5.tmp is left;
#  (3) metrics.jsonl stops fitting after some lines: exit 1 naming it.
# usage: safety_disk_full.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$(realpath "$1") work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
fs=$work/fs
mkdir -p "$fs"
mode=ulimit
cleanup() { if mountpoint -q "$fs"; then umount "$fs" || umount -l "$fs"; fi; }
trap cleanup EXIT
# DISK_FULL_MODE=ulimit forces the fallback (to test it where mounting works).
if [ "${DISK_FULL_MODE:-}" != ulimit ] && mount -t tmpfs -o size=80m tmpfs "$fs" 2>/dev/null; then
  mode=tmpfs
fi
echo "full disk by: $mode"
[ $mode = tmpfs ] && reason="No space left on device" || reason="File too large"
run=(configs/tiny.ini warmup_steps=1 eval_every=0 log_every=1 out_dir="$fs")

# full_run NAME LIMIT_KB ARGS...: 2 ranks (NP=1: one process, no mpirun);
# LIMIT_KB: the ranks' ulimit -f (ulimit mode).
full_run() {
  local name=$1 limit=$2; shift 2
  local wrap=()
  [ $mode = tmpfs ] || wrap=(bash -c 'ulimit -f "$0"; exec "$@"' "$limit")
  set +e
  if [ "${NP:-2}" = 1 ]; then
    "${wrap[@]}" "$bin" "$@" run_name="$name" >"$work/$name.log" 2>&1
  else
    mpi_run -np 2 "${wrap[@]}" "$bin" "$@" run_name="$name" >"$work/$name.log" 2>&1
  fi
  rc=$?
  set -e
}
# expect_clean_failure NAME FILE: exit 1, the reason naming FILE, no crash.
expect_clean_failure() {
  local log=$work/$1.log
  [ $rc -eq 1 ] || fail "$1: exit $rc, expected 1" "$log"
  grep -qE "$ERROR_ANY_RANK .*$2.*$reason" "$log" || fail "$1: no '$reason' naming $2" "$log"
  if grep -qiE "segmentation fault|core dumped|signal: |H5F__close_cb" "$log"; then fail "$1: crashed" "$log"; fi
  echo "$1: exit 1: $(grep -m1 -oE "$ERROR_ANY_RANK .*" "$log" | cut -c1-160)"
}
fill_to() { # leave about $1 KiB free on the tmpfs
  local avail; avail=$(df --output=avail -k "$fs" | tail -1)
  [ "$avail" -le "$1" ] || dd if=/dev/zero of="$fs/filler" bs=1K count=$((avail - $1)) status=none 2>/dev/null || true
}
fresh_fs() { rm -rf "${fs:?}"/*; }

# (1) a checkpoint; first one process alone (where HDF5's exit handler
# crashed), then 2 ranks
checkpoint_case() { # name [key=value ...]
  local name=$1; shift
  if [ $mode = tmpfs ]; then
    fresh_fs
    full_run "$name" 0 "${run[@]}" max_steps=6 checkpoint_every=2 "$@"
  else
    mpi_run -np 2 "$bin" "${run[@]}" max_steps=2 checkpoint_every=2 "$@" run_name="$name" >"$work/${name}_first.log" 2>&1 \
      || fail "first run" "$work/${name}_first.log"
    # shards of 20+ MB, model.h5 13 MB; the same run, resumed to 6 steps
    full_run "$name" 15000 "${run[@]}" max_steps=6 allow_changed=max_steps checkpoint_every=2 "$@"
  fi
  expect_clean_failure "$name" "step_00000004.tmp/"
}
NP=1 checkpoint_case ckpt1
# A background save (checkpoint_async): the writer's error reaches every
# rank at the next step, as exit 1 with the message.
checkpoint_case ckpt_async checkpoint_async=true
grep -qE "$ERROR_ANY_RANK the checkpoint of step 4, written in the background, failed: .*step_00000004.tmp/" "$work/ckpt_async.log" \
  || fail "ckpt_async: the failure does not say it was the background write" "$work/ckpt_async.log"
[ "$(readlink "$fs/ckpt_async/latest")" = step_00000002 ] && [ -f "$fs/ckpt_async/step_00000002/COMPLETE" ] \
  || fail "ckpt_async: latest is not the complete step 2" "$work/ckpt_async.log"
checkpoint_case ckpt
[ "$(readlink "$fs/ckpt/latest")" = step_00000002 ] && [ -f "$fs/ckpt/step_00000002/COMPLETE" ] \
  || fail "latest is not the complete step 2" "$work/ckpt.log"
mkdir -p "$work/copy"
cp -a "$fs/ckpt" "$work/copy/ckpt"
[ -d "$work/copy/ckpt/step_00000004.tmp" ] || fail "no partial step_00000004.tmp to test with" "$work/ckpt.log"
mpi_run -np 2 "$bin" "${run[@]}" max_steps=6 allow_changed=max_steps checkpoint_every=2 out_dir="$work/copy" run_name=ckpt \
  >"$work/ckpt_resume.log" 2>&1 || fail "resume from the copy" "$work/ckpt_resume.log"
grep "^resumed from $work/copy/ckpt/step_00000002" "$work/ckpt_resume.log" || fail "not resumed from step 2" "$work/ckpt_resume.log"
grep -q "^removed partial checkpoint directories" "$work/ckpt_resume.log" && ! ls -d "$work/copy/ckpt"/*.tmp 2>/dev/null \
  || fail "the partial step_00000004.tmp was not removed by the resumed run" "$work/ckpt_resume.log"
echo "the previous checkpoint (step 2) is intact: resumed to step 6; the partial step_00000004.tmp removed"

# (2) the final weights
[ $mode = ulimit ] || { fresh_fs; fill_to 5000; }
full_run weights 10000 "${run[@]}" max_steps=2 checkpoint_every=0
expect_clean_failure weights "weights/model.h5"
[ ! -e "$fs/weights/model.h5.tmp" ] || fail "a half-written model.h5.tmp is left ($(stat -c %s "$fs/weights/model.h5.tmp") bytes)"
echo "weights: no model.h5.tmp left"

# (3) the metrics. ulimit mode: MPI's own shared-memory files need several
# MB, so the limit stays at 10 MB and metrics.jsonl starts 2 KB short of it.
if [ $mode = tmpfs ]; then
  fresh_fs; fill_to 8
else
  mkdir -p "$fs/metrics"
  /usr/bin/python3 -c 'import sys; line = "{\"type\":\"filler\"}\n"; n = (10000 * 1024 - 2000) // len(line)
open(sys.argv[1], "w").write(line * n)' "$fs/metrics/metrics.jsonl"
fi
full_run metrics 10000 "${run[@]}" max_steps=200 checkpoint_every=0
expect_clean_failure metrics "metrics/metrics.jsonl"
lines=$(grep -c '"type":"step"' "$fs/metrics/metrics.jsonl" || true)
echo "metrics.jsonl holds $lines step records"

cleanup
mountpoint -q "$fs" && fail "$fs is still mounted"
echo "full disk: OK ($mode)"
