#!/usr/bin/env bash
# A/B on one GPU: this tree's trainer (A) against another source tree's (B:
# an earlier commit, `git archive <commit> | tar -x -C DIR`), built the same
# way and run alternately (A B A B ...) at each shape, so that drift of the
# GPU's clocks falls on both. GPT-2 124M, no accumulation, medians of steps
# 6-30 as the trainer logs them. Then the per-op table (profile_ops=1, with
# floors where the build prints them) of each at the first shape.
# Prints one comparable line per shape:
#   AB gpt2_124M T=<T> B=<B> a=<tok/s> b=<tok/s> a/b=<ratio> [A_ARGS / B_ARGS]
# BITS=1 first checks that the two give the same training, bit for bit, at
# the first shape (for a change meant to leave the numbers alone): 4 steps
# each with attention_deterministic=true, their losses and gradient norms
# as logged (full precision) compared:
#   AB bits T=<T> B=<B> same|DIFFERENT (step <n>: a <loss> <norm>, b ...)
# CONFIG (default configs/124M.ini) and DEVICE (default cuda) pick another
# model or backend.
# usage: [ROUNDS=2] [BITS=1] [A_ARGS="k=v ..."] [B_ARGS="k=v ..."] bench/ab_gpu.sh BUILD_DIR OTHER_SRC [T:B ...]
set -uo pipefail
build=$(realpath "$1") other=$(realpath "$2"); shift 2 # relative to the caller's directory, or absolute
shapes=${*:-1024:32}
rounds=${ROUNDS:-2}
a_args=${A_ARGS:-} b_args=${B_ARGS:-}
config=${CONFIG:-configs/124M.ini} device=${DEVICE:-cuda}
model=gpt2_$(basename "$config" .ini)
cd "$(dirname "$0")/.." || exit
source bench/ab_build.sh
ab_build_other "$other" gpt2_ddp || exit 1
out=$(mktemp -d)
train() { # train BINARY T B STEPS ARGS...: the config at T x B, no accumulation, evaluations or checkpoints
  local bin=$1 t=$2 b=$3 steps=$4; shift 4
  "$bin" "$config" device="$device" micro_batch="$b" seq_len="$t" block_size="$t" \
    total_batch=$((b * t)) max_steps="$steps" eval_every=0 checkpoint_every=0 out_dir="$out" "$@"
}
run() { # run NAME BINARY T B ARGS...
  local name=$1 bin=$2 t=$3 b=$4; shift 4
  train "$bin" "$t" "$b" 30 warmup_steps=10 log_every=1 run_name="$name" "$@" >"$out/$name.log" 2>&1 \
    || { echo "$name failed:"; tail -5 "$out/$name.log"; return 1; }
  python3 -c "
import json, statistics, sys
rows = [json.loads(l) for l in open('$out/$name/metrics.jsonl') if '\"step\"' in l][5:]
print(round(statistics.median(r['tokens_per_s'] for r in rows)))"
}
if [ "${BITS:-0}" = 1 ]; then
  first=${shapes%% *}
  t=${first%%:*} b=${first##*:}
  for side in a b; do
    bin=$build/gpt2_ddp args=$a_args
    [ $side = b ] && bin=$other/build/gpt2_ddp args=$b_args
    # shellcheck disable=SC2086
    train "$bin" "$t" "$b" 4 log_every=1 attention_deterministic=true run_name="bits_$side" $args \
      >"$out/bits_$side.log" 2>&1 || { echo "bits_$side failed:"; tail -5 "$out/bits_$side.log"; }
  done
  python3 - "$out" "$t" "$b" <<'PY'
import json, os, sys
out, t, b = sys.argv[1:]
def steps(side):
    path = os.path.join(out, f"bits_{side}", "metrics.jsonl")
    recs = [json.loads(l) for l in open(path)] if os.path.exists(path) else []
    return [(r["step"], r["loss"], r["grad_norm"]) for r in recs if r["type"] == "step"]
a, b_ = steps("a"), steps("b")
diff = [(x, y) for x, y in zip(a, b_) if x != y]
if len(a) == len(b_) == 4 and not diff:
    print(f"AB bits T={t} B={b} same (4 steps: losses and gradient norms)")
else:
    x, y = diff[0] if diff else (a[-1:] or None, b_[-1:] or None)
    print(f"AB bits T={t} B={b} DIFFERENT ({len(a)} and {len(b_)} steps; first: a {x}, b {y})")
PY
fi
for shape in $shapes; do
  t=${shape%%:*} b=${shape##*:}
  as=() bs=()
  for ((r = 0; r < rounds; r++)); do
    # shellcheck disable=SC2086
    as+=("$(run "a_${t}_${b}_$r" "$build/gpt2_ddp" "$t" "$b" $a_args)")
    # shellcheck disable=SC2086
    bs+=("$(run "b_${t}_${b}_$r" "$other/build/gpt2_ddp" "$t" "$b" $b_args)")
  done
  a_list=$(IFS=,; echo "${as[*]}") b_list=$(IFS=,; echo "${bs[*]}")
  read -r a bm ratio < <(python3 -c "
import statistics
a = statistics.median([$a_list]); b = statistics.median([$b_list])
print(round(a), round(b), f'{a / b:.3f}')")
  echo "AB $model T=$t B=$b a=$a b=$bm a/b=$ratio (rounds: a ${as[*]} | b ${bs[*]}) [${a_args:-} / ${b_args:-}]"
done
first=${shapes%% *}
t=${first%%:*} b=${first##*:}
for side in a b; do
  bin=$build/gpt2_ddp args=$a_args
  [ $side = b ] && bin=$other/build/gpt2_ddp args=$b_args
  # shellcheck disable=SC2086
  train "$bin" "$t" "$b" 6 warmup_steps=2 log_every=0 profile_ops=1 run_name="profile_$side" $args \
    >"$out/profile_$side.log" 2>&1
  echo "== $side: per-op table, T=$t B=$b"
  sed -n '/^per-op profile/,/^step (profiled)/p' "$out/profile_$side.log"
  sed -n '/^GEMM algorithms by measurement/,/^$/p' "$out/profile_$side.log"
done
[ -n "${KEEP:-}" ] && cp -r "$out" "$KEEP"
rm -rf "$out"
