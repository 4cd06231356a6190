#!/usr/bin/env bash
# attention_deterministic on the trainer (label gpu; exit 77 without a GPU
# or a CUDA build):
#   - with the Hopper kernels (H100/H200): two runs of the tiny model, same
#     seed, GEMM algorithms fixed (matmul_autotune=false), log the same loss
#     and gradient norm at every step, bit for bit;
#   - with attention_hopper=false (the mma.sync kernels, which have no such
#     mode): exit 2 before training, naming the key and the kernels.
# usage: attention_deterministic.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$(realpath "$1") work=$2
cd "$(dirname "$0")/../.."
source tests/lib/nccl_lib.sh
need_gpus 1
[[ "$("$bin" --version)" == *"cuda ("* ]] || { echo "SKIP: $bin has no CUDA backend"; exit 77; }
fresh_dir "$work"
args=(configs/tiny.ini device=cuda attention_deterministic=true matmul_autotune=false
      max_steps=20 warmup_steps=2 eval_every=0 log_every=1 checkpoint_every=0 out_dir="$work")

set +e
"$bin" "${args[@]}" attention_hopper=false run_name=refused >"$work/refused.log" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || fail "attention_hopper=false: exit $rc, expected 2" "$work/refused.log"
grep -q "attention_deterministic=true needs the Hopper attention kernels.*mma.sync" \
  "$work/refused.log" ||
  fail "the refusal does not name the key and the kernels" "$work/refused.log"
! grep -q "^step " "$work/refused.log" || fail "it trained before refusing" "$work/refused.log"
echo "attention_hopper=false: refused with exit 2"

probe=$("$bin" "${args[@]}" max_steps=2 run_name=probe 2>&1) || {
  grep -q "needs the Hopper attention kernels" <<<"$probe" ||
    { echo "$probe"; fail "probe run failed"; }
  echo "SKIP (partly): this GPU or build has no Hopper attention kernels;" \
       "the refusal above passed"
  exit 0
}
for run in a b; do
  "$bin" "${args[@]}" run_name=$run >"$work/$run.log" 2>&1 ||
    fail "run $run failed" "$work/$run.log"
done
py - "$work/a/metrics.jsonl" "$work/b/metrics.jsonl" <<'PY'
import json, sys
runs = [[r for r in map(json.loads, open(p)) if r["type"] == "step"] for p in sys.argv[1:]]
a, b = ([(r["step"], r["loss"], r["grad_norm"]) for r in run] for run in runs)
assert len(a) == 20, f"{len(a)} steps logged"
diff = [(x, y) for x, y in zip(a, b) if x != y]
assert not diff, f"runs differ: first {diff[0]}"
print(f"20 steps: loss and grad_norm the same in both runs (last loss {a[-1][1]!r})")
PY
