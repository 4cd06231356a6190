#!/usr/bin/env bash
# The memory report: with ZeRO-1 the optimizer state per rank falls as 1/N
# (to within one 128-element unit), for 124M and 1558M at N = 1, 2, 4, 8,
# planned with dry_run (no GPU, nothing allocated). usage: ddp_memory.sh GPT2_DDP
set -euo pipefail
bin=$1
cd "$(dirname "$0")/../.."
for cfg in 124M 1558M; do
  for n in 1 2 4 8; do
    "$bin" configs/$cfg.ini dry_run=1 dry_run_ranks=$n device=cuda | grep -E "^memory|^  " | sed "s/^/$cfg N=$n: /"
  done
done | tee /dev/stderr | /usr/bin/python3 -c '
import re, sys
opt = {}
for line in sys.stdin:
    m = re.match(r"(\S+) N=(\d+):\s+optimizer state\s+[\d.]+ GiB \((\d+) bytes", line)
    if m: opt[(m[1], int(m[2]))] = float(m[3])
for cfg in ("124M", "1558M"):
    one = opt[(cfg, 1)]
    for n in (2, 4, 8):
        ratio = opt[(cfg, n)] * n / one
        print(f"{cfg}: optimizer state at N={n} x N / at N=1 = {ratio:.4f}")
        assert abs(ratio - 1) < 1e-4, "optimizer state per rank does not fall as 1/N"
print("memory: OK")
'
