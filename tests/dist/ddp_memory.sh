#!/usr/bin/env bash
# The memory report: with ZeRO-1 the optimizer state per rank falls as 1/N
# up to the balance of the shard map along whole tensors (dist/zero.h): the
# state printed is the optimizer's bytes for the largest shard the report
# names, and that shard is within 7% of the mean for 124M and 1558M at N =
# 2, 4, 8 (the balance table of docs/multi-gpu.md), planned with dry_run (no
# GPU, nothing allocated). usage: ddp_memory.sh GPT2_DDP
set -euo pipefail
bin=$1
cd "$(dirname "$0")/../.."
for cfg in 124M 1558M; do
  for n in 1 2 4 8; do
    "$bin" configs/$cfg.ini dry_run=1 dry_run_ranks=$n device=cuda | grep -E "^memory|^  " | sed "s/^/$cfg N=$n: /"
  done
done | tee /dev/stderr | /usr/bin/python3 -c '
import re, sys
opt, shard = {}, {}
for line in sys.stdin:
    m = re.match(r"(\S+) N=(\d+):\s+optimizer state\s+[\d.]+ GiB \((\d+) bytes", line)
    if m: opt[(m[1], int(m[2]))] = float(m[3])
    m = re.match(r"(\S+) N=(\d+):\s+optimizer shards: largest (\d+) elements \(rank \d+\), mean (\d+)", line)
    if m: shard[(m[1], int(m[2]))] = (int(m[3]), int(m[4]))
for cfg in ("124M", "1558M"):
    one = opt[(cfg, 1)]
    for n in (2, 4, 8):
        largest, mean = shard[(cfg, n)]
        ratio = opt[(cfg, n)] * n / one
        print(f"{cfg}: optimizer state at N={n} x N / at N=1 = {ratio:.4f}, largest shard / mean = {largest / mean:.4f}")
        assert opt[(cfg, n)] == 12 * largest, "the state is not 12 bytes (AdamW) per element of the largest shard"
        assert abs(ratio - largest / mean) < 1e-3, "optimizer state per rank does not fall as 1/N times the balance"
        assert largest / mean < 1.07, "the shard map is out of balance"
print("memory: OK")
'
