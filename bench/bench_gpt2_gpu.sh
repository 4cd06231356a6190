#!/usr/bin/env bash
# GPT-2 124M training throughput on one GPU, ours against the PyTorch peer
# (bench/torch_peer.py: torch.compile, fused AdamW, bf16 autocast, vocab
# 50304) in the same run, no gradient accumulation. The peer runs twice: with
# SDPA pinned to cuDNN (PyTorch's fastest attention on Hopper) and with
# SDPA's default choice; our ratio is against the faster of the two.
# Shapes are T:B pairs (default T=1024 at B=16, 32, 64 and T=4096 at B=8).
# Prints, per shape, one comparable line
#   BENCH gpt2_124M T=<T> B=<B> ours=<tok/s> cudnn=<tok/s> default=<tok/s> ratio=<ours/faster> gpu=<name>
# and at the end a table; before that (PROFILE_B > 0) the per-op table of a
# short profiled run at T=1024 (profile_ops=1, with each op's floor).
# Our tokens/s are medians of steps 6-30 as the trainer logs them: a step's
# time includes the loop's host work. The peer's are medians of steps 6-25.
# FP8=1 adds a column: ours again with fp8=1 (docs/fp8.md), and its ratio
# to our BF16 run (the ratio to PyTorch stays BF16's).
# usage: [PROFILE_B=32] [PEER=1] [FP8=0] [OURS_ARGS="key=value ..."] bench/bench_gpt2_gpu.sh BUILD_DIR [T:B ...]
#        (needs data/nlp-corpus shards: the trainer opens them, the timed batches are real text)
set -uo pipefail
build=${1:-build}; shift || true
shapes=${*:-1024:16 1024:32 1024:64 4096:8}
profile_b=${PROFILE_B:-32} # micro-batch of the per-op table; 0 skips it
peer=${PEER:-1}            # 0: ours only
ours_args=${OURS_ARGS:-}
fp8=${FP8:-0}              # 1: our run once more with fp8=1
cd "$(dirname "$0")/.."
out=$(mktemp -d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' ' '_')
declare -A ours peer_cudnn peer_default ours_ms ours_mfu ours_fp8

median_of_run() { # metrics.jsonl -> "ms tok/s mfu%"
  /usr/bin/env python3 - "$1" <<'PY'
import json, statistics, sys
rows = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "step"][5:]
ms = statistics.median(r["ms"] for r in rows)
tps = statistics.median(r["tokens_per_s"] for r in rows)
mfu = statistics.median(r.get("mfu", 0) for r in rows)
print(f"{ms:.2f} {tps:.0f} {mfu * 100:.1f}")
PY
}

for shape in $shapes; do
  t=${shape%%:*} b=${shape##*:}
  # shellcheck disable=SC2086
  "$build/gpt2_ddp" configs/124M.ini device=cuda micro_batch="$b" seq_len="$t" block_size="$t" \
    total_batch=$((b * t)) max_steps=30 warmup_steps=10 eval_every=0 log_every=1 \
    checkpoint_every=0 out_dir="$out" run_name="t${t}b$b" $ours_args >"$out/t${t}b$b.log" 2>&1 \
    || { tail -5 "$out/t${t}b$b.log"; continue; }
  read -r ms tps mfu < <(median_of_run "$out/t${t}b$b/metrics.jsonl")
  ours[$shape]=$tps ours_ms[$shape]=$ms ours_mfu[$shape]=$mfu
  echo "ours T=$t B=$b: $ms ms/step, $tps tok/s, MFU $mfu%"
  [ "$fp8" = 1 ] || continue
  # shellcheck disable=SC2086
  "$build/gpt2_ddp" configs/124M.ini device=cuda micro_batch="$b" seq_len="$t" block_size="$t" \
    total_batch=$((b * t)) max_steps=30 warmup_steps=10 eval_every=0 log_every=1 \
    checkpoint_every=0 out_dir="$out" run_name="t${t}b${b}fp8" fp8=1 $ours_args \
    >"$out/t${t}b${b}fp8.log" 2>&1 || { tail -5 "$out/t${t}b${b}fp8.log"; continue; }
  read -r ms tps mfu < <(median_of_run "$out/t${t}b${b}fp8/metrics.jsonl")
  ours_fp8[$shape]=$tps
  echo "ours fp8 T=$t B=$b: $ms ms/step, $tps tok/s"
done

if [ "$peer" = 1 ] && python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  for sdpa in cudnn default; do
    for t in $(for s in $shapes; do echo "${s%%:*}"; done | sort -un); do
      bs=$(for s in $shapes; do [ "${s%%:*}" = "$t" ] && echo "${s##*:}"; done)
      # shellcheck disable=SC2086
      while read -r line; do
        echo "$line"
        b=$(sed -E 's/.* B=([0-9]+) .*/\1/' <<<"$line")
        tps=$(sed -E 's/.*tok\/s=([0-9]+).*/\1/' <<<"$line")
        if [ "$sdpa" = cudnn ]; then peer_cudnn[$t:$b]=$tps; else peer_default[$t:$b]=$tps; fi
      done < <(python3 bench/torch_peer.py --sdpa "$sdpa" --seq-len "$t" $bs 2>&1 | tee -a "$out/peer.log" | grep '^peer')
    done
  done
fi

# The per-op table: a separate short run with profile_ops=1 (every op
# between two synchronizes, so its steps are slower than the runs above).
if [ "$profile_b" -gt 0 ]; then
  # shellcheck disable=SC2086
  "$build/gpt2_ddp" configs/124M.ini device=cuda micro_batch=$profile_b \
    total_batch=$((profile_b * 1024)) max_steps=6 warmup_steps=2 eval_every=0 log_every=0 \
    checkpoint_every=0 profile_ops=1 out_dir="$out" run_name=profile $ours_args \
    >"$out/profile.log" 2>&1 || tail -5 "$out/profile.log"
  echo
  sed -n '/^per-op profile/,/^step (profiled)/p' "$out/profile.log"
  echo
  sed -n '/^GEMM algorithms by measurement/,/^$/p' "$out/profile.log"
fi

echo
for shape in $shapes; do
  t=${shape%%:*} b=${shape##*:}
  o=${ours[$shape]:-0} c=${peer_cudnn[$shape]:-0} d=${peer_default[$shape]:-0}
  ratio=$(python3 -c "f = max($c, $d); print(f'{$o / f:.3f}' if f and $o else 'n/a')")
  extra=""
  if [ "$fp8" = 1 ]; then
    f8=${ours_fp8[$shape]:-0}
    extra=" fp8=$f8 fp8_ratio=$(python3 -c "print(f'{$f8 / $o:.3f}' if $o and $f8 else 'n/a')")"
  fi
  echo "BENCH gpt2_124M T=$t B=$b ours=$o cudnn=$c default=$d ratio=$ratio$extra gpu=${gpu:-unknown}"
done
echo
printf "%-5s %-3s %9s %12s %6s %14s %16s %8s %12s\n" T B "ours ms" "ours tok/s" MFU "peer cudnn" \
  "peer default" "ratio" "$([ "$fp8" = 1 ] && echo 'fp8 tok/s')"
for shape in $shapes; do
  t=${shape%%:*} b=${shape##*:}
  o=${ours[$shape]:-0} c=${peer_cudnn[$shape]:-0} d=${peer_default[$shape]:-0}
  ratio=$(python3 -c "f = max($c, $d); print(f'{$o / f:.3f}' if f and $o else 'n/a')")
  printf "%-5s %-3s %9s %12s %6s %14s %16s %8s %12s\n" "$t" "$b" "${ours_ms[$shape]:-fail}" "$o" \
    "${ours_mfu[$shape]:-}%" "$c" "$d" "$ratio" "$([ "$fp8" = 1 ] && echo "${ours_fp8[$shape]:-fail}")"
done
rm -rf "$out"
