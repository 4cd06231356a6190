#!/usr/bin/env bash
# A validation set smaller than eval_batches x micro_batch windows (CPU
# ranks, tiny config): a 5-window val shard (5 x 64 + 1 tokens) under
# micro_batch = 2 and eval_batches = 7 gives 2 batches (4 windows, each
# once), with one note on rank 0 naming eval_batches; the step-0 val loss
# on 1, 2 and 3 ranks equals, bit for bit, that of a run with
# eval_batches = 2 (no note). Before, the 7 batches wrapped around the 5
# windows and counted some of them three times. gpt2_eval clamps the same
# way. A set smaller than one batch (micro_batch = 8) is refused, exit 2 on
# every rank, before the run directory is used.
# usage: safety_val_small.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
/usr/bin/python3 - "$work/val_000000.bin" <<'PY'
import struct, sys
tokens = [(i * 7919 + 13) % 50257 for i in range(5 * 64 + 1)]
header = [20240520, 1, len(tokens)] + [0] * 253
open(sys.argv[1], "wb").write(struct.pack("<256i", *header) + struct.pack(f"<{len(tokens)}H", *tokens))
PY
# total_batch 768 = 2 x 64 x 6: divisible by 1, 2 and 3 ranks.
run=(configs/tiny.ini micro_batch=2 total_batch=768 max_steps=1 warmup_steps=0 eval_every=1
     log_every=1 out_dir="$work" val_data="$work/val_*.bin")
echo "check: eval_batches = 7 over 5 windows on 1, 2, 3 ranks -> 2 batches, one note"
for np in 1 2 3; do
  mpi_run -np $np "$bin" "${run[@]}" eval_batches=7 run_name=np$np >"$work/np$np.log" 2>&1 \
    || fail "np=$np" "$work/np$np.log"
  n=$(grep -c '^note: val_data holds 5 windows of 65 tokens' "$work/np$np.log" || true)
  [ "$n" -eq 1 ] || fail "np=$np: $n notes, expected 1 (rank 0 alone)" "$work/np$np.log"
done
grep '^note: val_data' "$work/np2.log"
grep -q 'eval_batches x micro_batch = 7 x 2 = 14: each evaluation uses 2 batches (4 windows, each once); set eval_batches = 2' "$work/np2.log" \
  || fail "the note's numbers" "$work/np2.log"
echo "check: eval_batches = 2 (what the set holds) -> no note, the reference loss"
"$bin" "${run[@]}" eval_batches=2 run_name=ref >"$work/ref.log" 2>&1 || fail "reference run" "$work/ref.log"
! grep -q '^note: val_data' "$work/ref.log" || fail "a note where the set holds the batches" "$work/ref.log"
/usr/bin/python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def val(name):
    evals = [json.loads(l) for l in open(f"{work}/{name}/metrics.jsonl") if '"eval"' in l]
    return [e["val_loss"] for e in evals if e["step"] == 0][0]
ref = val("ref")
for n in (1, 2, 3):
    v = val(f"np{n}")
    print(f"np={n}, eval_batches=7: step-0 val loss {v!r}; eval_batches=2: {ref!r}")
    assert v == ref, f"np={n}: {v!r} != {ref!r}: windows repeated or the rank count matters"
print("each window once, the same loss on 1, 2 and 3 ranks: OK")
PY
echo "check: gpt2_eval --val-batches 7 over the same 5 windows"
eval_bin=$(dirname "$bin")/gpt2_eval
if [ -x "$eval_bin" ]; then
  for nb in 7 2; do
    "$eval_bin" --weights "$work/ref/model.h5" --val "$work/val_*.bin" --val-batches $nb --batch 2 \
      --seq-len 64 >"$work/eval$nb.log" 2>&1 || fail "gpt2_eval --val-batches $nb" "$work/eval$nb.log"
  done
  grep -q '^note: --val holds 5 windows of 65 tokens: 2 batches of 2 instead of --val-batches 7' "$work/eval7.log" \
    || fail "gpt2_eval's note" "$work/eval7.log"
  l7=$(grep '^val loss' "$work/eval7.log" | cut -d' ' -f3)
  l2=$(grep '^val loss' "$work/eval2.log" | cut -d' ' -f3)
  echo "gpt2_eval: val loss $l7 (--val-batches 7), $l2 (--val-batches 2)"
  [ "$l7" = "$l2" ] || fail "gpt2_eval repeated windows: $l7 != $l2" "$work/eval7.log"
fi
echo "check: micro_batch = 8 > 5 windows on 2 ranks -> exit 2, one message, nothing written"
rc=0
mpi_run -np 2 "$bin" "${run[@]}" micro_batch=8 total_batch=1024 run_name=tiny_val >"$work/refuse.log" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "exit code $rc, expected 2" "$work/refuse.log"
n=$(grep -c 'holds 5 windows of seq_len + 1 = 65 tokens, fewer than one validation batch of micro_batch = 8' "$work/refuse.log" || true)
[ "$n" -eq 1 ] || fail "$n messages, expected 1" "$work/refuse.log"
grep 'error:' "$work/refuse.log"
[ ! -e "$work/tiny_val/metrics.jsonl" ] || fail "metrics written by a refused run" "$work/refuse.log"
echo "safety_val_small: OK"
