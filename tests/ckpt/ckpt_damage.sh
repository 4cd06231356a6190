#!/usr/bin/env bash
# Damaged checkpoints and configs that cannot continue a run: each case
# copies a good 2-rank run (checkpoints at steps 2 and 4), damages it, and
# resumes with resume=auto. Every rank must exit non-zero with a message
# naming the file (or key) and the problem, and nothing may be deleted or
# moved. A damaged checkpoint's message also names the way back: the exact
# resume=<step 2>, or the mv that moves step 4 aside.
# usage: ckpt_damage.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
# The base run ends at step 4, the resumes go on to 6 or 8: max_steps may change.
run=(configs/tiny.ini warmup_steps=1 eval_every=0 log_every=1 checkpoint_every=2 run_name=base
     allow_changed=max_steps)
mpi_run -np 2 "$bin" "${run[@]}" max_steps=4 out_dir="$work/good" >"$work/good.log" 2>&1 \
  || fail "base run" "$work/good.log"

# flip FILE DATASET: one bit inside the stored data of the dataset (its first checksum block).
flip() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys, h5py
path, name = sys.argv[1], sys.argv[2]
with h5py.File(path, "r") as f:
    offset = f[name].id.get_offset()  # contiguous data (CRC32C per 4 MiB)
data = bytearray(open(path, "rb").read())
data[offset + 1000] ^= 0x10
open(path, "wb").write(data)
PY
}

# set_attr FILE NAME VALUE: one attribute of FILE (in the checkpoint's
# directory) rewritten as a careful hand edit would (h5py; an int64 array
# for a value with commas, else int64 or string), COMPLETE's size of the
# file updated with it, so that only the fields' own check can find it.
set_attr() {
  /usr/bin/python3 - "$@" <<'PY'
import sys, h5py, numpy as np
path, name, value = sys.argv[1:4]
with h5py.File(path, "r+") as f:
    if "," in value:
        f.attrs[name] = np.array([int(v) for v in value.split(",")], dtype=np.int64)
    elif value.lstrip("-").isdigit():
        f.attrs[name] = np.int64(int(value))
    else:
        f.attrs[name] = value
import os
lines = open("COMPLETE").read().split("\n")
lines = [f"file {path} {os.path.getsize(path)}" if l.startswith(f"file {path} ") else l for l in lines]
open("COMPLETE", "w").write("\n".join(lines))
PY
}

# expect CASE RC REGEX DAMAGE [key=value...]: copies the good run to
# WORK/CASE, runs the shell command DAMAGE there (cwd: the step-4
# checkpoint), resumes with the overrides, and checks the exit code (RC, or
# any non-zero for "nonzero"), that stderr matches REGEX, and that no file
# was removed (the run's lock file may be left by a rank that MPI_Abort
# ended). HINT=1: the damaged checkpoint's way back is named.
expect() {
  local name=$1 want=$2 regex=$3 damage=$4; shift 4
  local dir="$work/$name"
  cp -a "$work/good" "$dir"
  (cd "$dir/base/step_00000004" && eval "$damage")
  local before; before=$(cd "$dir" && find . | sort)
  set +e
  timeout 120 mpirun --bind-to none -np 2 "$bin" "${run[@]}" max_steps=6 out_dir="$dir" "$@" \
    >"$dir.log" 2>&1
  local rc=$?
  set -e
  [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "$name: exit code $rc" "$dir.log"
  [ "$want" = nonzero ] || [ $rc -eq "$want" ] || fail "$name: exit code $rc, expected $want" "$dir.log"
  grep -E "error" "$dir.log" | grep -qE "$regex" || fail "$name: no message matching '$regex'" "$dir.log"
  [ -z "$(comm -23 <(echo "$before") <(cd "$dir" && find . | sort))" ] || fail "$name: files were removed or moved"
  if [ "${HINT:-0}" = 1 ]; then
    grep -q "checkpoint $dir/base/step_00000004 cannot be loaded. To go back to the one before it, run again with resume=$dir/base/step_00000002 .*mv $dir/base/step_00000004 $dir/base/step_00000004.damaged" "$dir.log" \
      || fail "$name: the way back (resume=.../step_00000002, mv ...) is not named" "$dir.log"
  fi
  printf '%-16s exit %d: %s\n' "$name" $rc "$(grep -E "$regex" "$dir.log" | head -1 | sed 's/.*error: //')"
}

HINT=1 expect truncated_shard nonzero "step_00000004/shard_00001.h5: [0-9]+ bytes, but COMPLETE recorded [0-9]+: truncated or damaged" \
  'truncate -s 5000000 shard_00001.h5'
HINT=1 expect flipped_shard nonzero "step_00000004/shard_00000.h5: dataset m: read failed: elements \[0, [0-9]+\) do not match their CRC32C checksum" \
  'flip shard_00000.h5 m'
HINT=1 expect flipped_weights nonzero "step_00000004/model.h5: dataset wte.weight: read failed: .*CRC32C checksum" \
  'flip model.h5 wte.weight'
HINT=1 expect missing_shard nonzero "step_00000004/shard_00001.h5: missing \(COMPLETE lists it\)" \
  'rm shard_00001.h5'
# Fields that disagree with each other (issue 61): each would resume at
# another place in the data, or bypass the check of changed settings.
HINT=1 expect samples_edited 2 "model.h5: cannot resume: samples_consumed = 99 disagrees with step 4 x 16 samples per step \(total_batch 1024 / seq_len 64\) = 64 \(the file was damaged or edited\)" \
  'set_attr model.h5 samples_consumed 99'
HINT=1 expect config_emptied 2 "model.h5: cannot resume: its stored config is empty or holds no key, so the settings it was trained with are unknown" \
  'set_attr model.h5 config ""'
HINT=1 expect loader_edited 2 "model.h5: cannot resume: loader_position of rank 1 is 7, where samples_consumed = 64 puts it at [0-9]+" \
  'set_attr model.h5 loader_position 64,7'
expect total_batch 2 "step_00000004: the config differs from the checkpoint's in a key that defines the run: total_batch: 1024 in the checkpoint, 2048 now \(never changes on a resume\)" \
  'true' total_batch=2048
expect n_layer 2 "step_00000004: the config differs from the checkpoint's in a key that defines the run: n_layer: 2 in the checkpoint, 3 now \(never changes on a resume\)" \
  'true' n_layer=3
expect resume_none 2 "resume = none, but .*/base already holds checkpoints" \
  'true' resume=none
expect resume_missing 2 "resume = /nonexistent: no complete checkpoint there" \
  'true' resume=/nonexistent
echo "damage: OK"
