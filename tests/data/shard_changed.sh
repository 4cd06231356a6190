#!/usr/bin/env bash
# A token shard that another job changes while a run reads it, on a copy of
# the bundled corpus in the work folder, after the run's first checkpoint:
#   truncate  2 ranks, the training shard cut to 0 bytes (a mapping of it
#             used to end the run with SIGBUS, exit 135)
#   rewrite   2 ranks, the training shard rewritten in place with token
#             50300 >= vocab_size 50257 (used to train on to exit 0)
#   val       1 rank, the validation shard cut, read at the next evaluation
# Every rank exits 1 within the timeout, no signal death, one message that
# names the shard, the change and the fix (from the first rank whose read
# failed: with 2 ranks the change can fall between rank 0's read of a step's
# batch and rank 1's, and then rank 1 alone tells it); no lock file is left, the
# checkpoint written before the change is untouched, and once the shard is
# restored the same run resumes from its newest checkpoint.
# usage: shard_changed.sh GPT2_DDP WORK_DIR MODE
set -euo pipefail
bin=$1 work=$2 mode=$3
cd "$(dirname "$0")/../.."
source tests/lib/mpi_env.sh
rm -rf "$work" && mkdir -p "$work/data"
fail() { echo "FAIL: $1"; [ -z "${2:-}" ] || tail -n 30 "$2"; exit 1; }
cp data/nlp-corpus/nlp_train_000000.bin data/nlp-corpus/nlp_val_000000.bin "$work/data/"
np=2 key=train_data shard="$work/data/nlp_train_000000.bin" eval=(eval_every=0)
if [ "$mode" = val ]; then
  np=1 key=val_data shard="$work/data/nlp_val_000000.bin" eval=(eval_every=2 eval_batches=2)
fi
cp "$shard" "$work/original.bin"
run=$work/out/run log=$work/run.log
args=(configs/tiny.ini device=cpu micro_batch=2 total_batch=256 warmup_steps=1 log_every=1
      checkpoint_every=1 keep_last=0 "${eval[@]}" train_data="$work/data/nlp_train_*.bin"
      val_data="$work/data/nlp_val_*.bin" out_dir="$work/out" run_name=run)

set +e
timeout 60 mpirun --bind-to none -np "$np" "$bin" "${args[@]}" max_steps=200 >"$log" 2>&1 &
pid=$!
set -e
for _ in $(seq 600); do grep -q '^checkpoint: step 1 saved' "$log" && break; sleep 0.1; done
grep -q '^checkpoint: step 1 saved' "$log" || { kill "$pid"; fail "no first checkpoint" "$log"; }
sums=$(md5sum "$run"/step_00000001/*)
case $mode in
  truncate | val) truncate -s 0 "$shard"; what="it is now 0 bytes, shorter than the [0-9]+ it had when opened \(truncated\)" ;;
  rewrite)
    /usr/bin/python3 -c 'import os, struct, sys
p = sys.argv[1]; n = (os.path.getsize(p) - 1024) // 2
with open(p, "r+b") as f: f.seek(1024); f.write(struct.pack("<H", 50300) * n)' "$shard"
    what="token 50300 at index [0-9]+ is out of range \(vocab_size 50257\)" ;;
esac
echo "$mode: $(basename "$shard") changed after step 1's checkpoint"
set +e; wait "$pid"; rc=$?; set -e
[ $rc -ne 124 ] || fail "still running 60 s after the change" "$log"
[ $rc -eq 1 ] || fail "exit code $rc, expected 1" "$log"
! grep -qiE 'bus error|signal [0-9]|segmentation' "$log" || fail "a rank died of a signal" "$log"
want="^$ERROR_ANY_RANK $key: $shard: changed after it was opened and checked: $what\. A run reads its shards until it ends: give it its own copy.*resumes from $run/step_"
[ "$(grep -cE "$want" "$log")" -eq 1 ] || fail "not one message naming the shard, the change and the fix" "$log"
[ "$(grep -cE "$ERROR_ANY_RANK" "$log")" -eq 1 ] || fail "more than one error line" "$log"
[ ! -e "$run/gpt2_ddp.lock" ] || fail "the lock file was left" "$log"
[ "$(md5sum "$run"/step_00000001/*)" = "$sums" ] || fail "step 1's checkpoint changed" "$log"
grep -E "$ERROR_ANY_RANK" "$log" | cut -c1-200
echo "$mode: exit $rc, one message, no lock file, step 1 untouched"

# The data restored, the same command (one step further) resumes.
cp "$work/original.bin" "$shard"
newest=$(readlink "$run/latest")
steps=$((10#${newest#step_} + 1))
timeout 60 mpirun --bind-to none -np "$np" "$bin" "${args[@]}" max_steps=$steps allow_changed=max_steps \
  >"$work/resume.log" 2>&1 || fail "resume on the restored data failed" "$work/resume.log"
grep -q "^resumed from $run/$newest" "$work/resume.log" || fail "did not resume from $newest" "$work/resume.log"
grep -qE "^step +$steps/$steps " "$work/resume.log" || fail "no step $steps after the resume" "$work/resume.log"
echo "shard_changed $mode: OK (resumed from $newest)"
