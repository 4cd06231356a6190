#!/usr/bin/env bash
# GPT-2 124M training throughput on one GPU, ours against the PyTorch peer
# (bench/torch_peer.py) in the same run: T=1024, no gradient accumulation,
# micro-batch 16, 32 and 64. Prints one comparable line per micro-batch:
# tokens/s, ms/step and MFU for both, and the ratio ours/peer; before that,
# the per-op table of a short profiled run (profile_ops=1) at micro-batch 32.
# usage: [PROFILE_B=32] bench/bench_gpt2_gpu.sh BUILD_DIR [B ...]   (needs data/nlp-corpus shards)
set -uo pipefail
build=${1:-build}; shift || true
batches=${*:-16 32 64}
profile_b=${PROFILE_B:-32} # micro-batch of the per-op table; 0 skips it
cd "$(dirname "$0")/.."
out=$(mktemp -d)
declare -A ours_ms ours_tps ours_mfu peer_ms peer_tps
for b in $batches; do
  "$build/gpt2_ddp" configs/124M.ini device=cuda micro_batch=$b total_batch=$((b * 1024)) \
    max_steps=30 warmup_steps=10 eval_every=0 log_every=1 out_dir="$out" run_name=b$b >"$out/b$b.log" 2>&1 \
    || { tail -5 "$out/b$b.log"; continue; }
  read -r ms tps mfu < <(/usr/bin/env python3 - "$out/b$b/metrics.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"step"' in l][5:]
ms = statistics.median(r["ms"] for r in rows)
tps = statistics.median(r["tokens_per_s"] for r in rows)
mfu = statistics.median(r.get("mfu", 0) for r in rows)
print(f"{ms:.2f} {tps:.0f} {mfu * 100:.1f}")
PY
)
  ours_ms[$b]=$ms ours_tps[$b]=$tps ours_mfu[$b]=$mfu
  echo "ours B=$b: $ms ms/step, $tps tok/s, MFU $mfu%"
done
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  while read -r line; do
    echo "$line"
    b=$(sed -E 's/.*B=([0-9]+).*/\1/' <<<"$line")
    peer_ms[$b]=$(sed -E 's/.*ms=([0-9.]+).*/\1/' <<<"$line")
    peer_tps[$b]=$(sed -E 's/.*tok\/s=([0-9]+).*/\1/' <<<"$line")
  done < <(python3 bench/torch_peer.py $batches 2>&1 | grep '^peer')
fi
# The per-op table: a separate short run with profile_ops=1 (every op
# between two synchronizes, so its steps are slower than the runs above).
if [ "$profile_b" -gt 0 ]; then
  "$build/gpt2_ddp" configs/124M.ini device=cuda micro_batch=$profile_b \
    total_batch=$((profile_b * 1024)) max_steps=6 warmup_steps=2 eval_every=0 log_every=0 \
    profile_ops=1 out_dir="$out" run_name=profile >"$out/profile.log" 2>&1 || tail -5 "$out/profile.log"
  echo
  sed -n '/^per-op profile/,/^step (profiled)/p' "$out/profile.log"
fi
flops=$(python3 -c "print(6*124475904 + 12*12*768*1024)")
echo
printf "%-4s %12s %12s %8s %12s %12s %8s %8s\n" B "ours ms" "ours tok/s" "MFU" "peer ms" "peer tok/s" "peer MFU" "ratio"
for b in $batches; do
  pm=${peer_ms[$b]:-nan} pt=${peer_tps[$b]:-0} ot=${ours_tps[$b]:-0}
  pmfu=$(python3 -c "print(f'{$pt*$flops/989.4e12*100:.1f}%')")
  ratio=$(python3 -c "print(f'{$ot/$pt:.3f}' if $pt else 'n/a')")
  printf "%-4s %12s %12s %8s %12s %12s %8s %8s\n" "$b" "${ours_ms[$b]:-fail}" "$ot" "${ours_mfu[$b]:-}%" "$pm" "$pt" "$pmfu" "$ratio"
done
