#!/usr/bin/env bash
# The start-up warning for a run that reads its training data many times
# over: a 150-token shard (2 samples of 64) under tiny.ini's 2 x 1024 tokens
# is 16 epochs, warned once (rank 0 of 2) with the numbers and where to get
# real data; the bundled corpus under the same run (0.001 epochs) is not.
# usage: train_epochs.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source tests/lib/mpi_env.sh
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; [ -z "${2:-}" ] || cat "$2"; exit 1; }
/usr/bin/python3 - "$work/small_train_000000.bin" <<'PY'
import struct, sys
tokens = [(i * 7919) % 50257 for i in range(150)]
header = [20240520, 1, len(tokens)] + [0] * 253
open(sys.argv[1], "wb").write(struct.pack("<256i", *header) + struct.pack(f"<{len(tokens)}H", *tokens))
PY
args=(configs/tiny.ini max_steps=2 warmup_steps=1 eval_every=0 out_dir="$work")
mpi_run -np 2 "$bin" "${args[@]}" run_name=small train_data="$work/small_train_*.bin" >"$work/small.log" 2>&1 \
  || fail "run on the small shard" "$work/small.log"
grep -A6 '^warning:' "$work/small.log"
[ "$(grep -c '^warning: this run reads' "$work/small.log")" -eq 1 ] || fail "want one warning from 2 ranks" "$work/small.log"
grep -q "warning: this run reads 2.0K tokens (max_steps 2 x total_batch 1024), but" "$work/small.log" || fail "planned tokens" "$work/small.log"
grep -q "holds 128 (2 samples of 64):" "$work/small.log" || fail "dataset size" "$work/small.log"
grep -q "^  16 epochs; the model will memorise it" "$work/small.log" || fail "epochs" "$work/small.log"
grep -q "FineWeb-10B" "$work/small.log" || fail "where to get data" "$work/small.log"
"$bin" "${args[@]}" run_name=bundled >"$work/bundled.log" 2>&1 || fail "run on the bundled corpus" "$work/bundled.log"
! grep -q '^warning: this run reads' "$work/bundled.log" || fail "a warning for 0.001 epochs" "$work/bundled.log"
echo "train_epochs: OK"
