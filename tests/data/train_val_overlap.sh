#!/usr/bin/env bash
# A train_data pattern that also matches the validation shards
# (data/nlp-corpus/nlp_*.bin) is refused on 1 and on 2 ranks: exit 2 from
# every rank, one message that names both patterns, the shared file and
# the fix, however the two patterns spell the path (./data/...), and no
# run directory made. The patterns that do not overlap train.
# usage: train_val_overlap.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source tests/lib/mpi_env.sh
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $1"; [ -z "${2:-}" ] || cat "$2"; exit 1; }
args=(configs/tiny.ini "train_data=data/nlp-corpus/nlp_*.bin" "val_data=./data/nlp-corpus/nlp_val_*.bin"
      max_steps=2 eval_every=1 out_dir="$work")
want="train_data = data/nlp-corpus/nlp_\*.bin and val_data = ./data/nlp-corpus/nlp_val_\*.bin both match data/nlp-corpus/nlp_val_000000.bin: the validation loss would be measured on training data.*nlp_train_\*.bin.*eval_every = 0"
for np in 1 2; do
  set +e; mpi_run -np "$np" "$bin" "${args[@]}" run_name=np$np >"$work/np$np.log" 2>&1; rc=$?; set -e
  [ $rc -eq 2 ] || fail "$np rank(s): exit code $rc, expected 2" "$work/np$np.log"
  [ "$(grep -cE "$want" "$work/np$np.log")" -eq 1 ] || fail "$np rank(s): not one message naming the shared file" "$work/np$np.log"
  [ ! -e "$work/np$np" ] || fail "$np rank(s): a run directory was made" "$work/np$np.log"
  echo "$np rank(s): refused, exit 2, one message"
done
"$bin" configs/tiny.ini max_steps=1 eval_every=1 eval_batches=1 out_dir="$work" run_name=apart >"$work/apart.log" 2>&1 \
  || fail "the bundled train and val patterns were refused" "$work/apart.log"
echo "train_val_overlap: OK"
