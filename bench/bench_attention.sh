#!/usr/bin/env bash
# Our causal flash attention next to PyTorch SDPA's, in the same run on the
# same GPU: bench_attention (ours: the default kernels, once more with
# dqkv's column sums as the trainer runs them, and, on Hopper, their
# deterministic mode and the mma.sync kernels) and bench/attention_peers.py
# (cuDNN and FlashAttention-2, when torch with CUDA is there), per shape,
# forward and forward+backward, with TFLOP/s on causal FLOPs (forward
# 4*B*H*T*T*D/2, forward+backward 3.5x that) and our time over cuDNN's
# (below 1: we are faster).
# Shapes are B:H:T:D (default: GPT-2's D = 64 at T = 1024 and 4096, and
# D = 128 with the same C = 768).
# usage: bench/bench_attention.sh [BUILD_DIR] [B:H:T:D ...]
#        (default build; PYTHON: the peer's python3)
set -uo pipefail
build=${1:-build}; shift || true
shapes=${*:-32:12:1024:64 8:12:4096:64 32:6:1024:128 8:6:4096:128}
python=${PYTHON:-python3}
cd "$(dirname "$0")/.." || exit 2
# the CMake build's, or scripts/build_attention_standalone.sh's
bench=$build/tests/bench_attention
[ -x "$bench" ] || bench=$build/bench_attention
[ -x "$bench" ] || {
  echo "bench_attention.sh: no bench_attention in $build/tests or $build (build it first)" >&2
  exit 2
}
lines=$(mktemp)
trap 'rm -f "$lines"' EXIT
status=0
for shape in $shapes; do
  IFS=: read -r b h t d <<<"$shape"
  "$bench" "$b" "$h" "$t" "$d" | tee -a "$lines"
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 77 ] && exit 77 # no GPU
  [ "$rc" -ne 0 ] && status=1
  "$python" bench/attention_peers.py "$b" "$h" "$t" "$d" | tee -a "$lines"
done
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
echo
echo "causal attention, bf16, ${gpu:-GPU}: ms (TFLOP/s); ratio = our default / cuDNN"
"$python" - "$lines" <<'PY'
import re, sys
rows = {}
for line in open(sys.argv[1]):
    if not line.startswith("BENCH attention") or "unavailable" in line:
        continue
    kv = dict(re.findall(r"(\w+)=([\w.+-]+)", line))  # impl=wgmma+colsum is its own
    shape = tuple(int(kv[k]) for k in ("B", "H", "T", "D"))
    rows.setdefault(shape, {})[kv["impl"]] = (float(kv["fwd_ms"]), float(kv["fwdbwd_ms"]))
impls = ["wgmma", "wgmma+colsum", "wgmma-det", "mma.sync", "cudnn", "fa2"]
print(f"{'B H T D':<16}{'pass':<9}" + "".join(f"{i:>18}" for i in impls) + f"{'ratio':>8}")
for (b, h, t, d), got in rows.items():
    fwd_flop = 4.0 * b * h * t * t * d / 2
    ours = "wgmma" if "wgmma" in got else "mma.sync"
    for k, (name, mult) in enumerate((("fwd", 1.0), ("fwd+bwd", 3.5))):
        cells = []
        for i in impls:
            ms = got[i][k] if i in got else None
            cells.append(f"{ms:.3f} ({fwd_flop * mult / ms * 1e-9:3.0f})" if ms else "-")
        ratio = got[ours][k] / got["cudnn"][k] if "cudnn" in got and ours in got else None
        print(f"{f'{b} {h} {t} {d}':<16}{name:<9}" + "".join(f"{c:>18}" for c in cells)
              + (f"{ratio:>8.3f}" if ratio else f"{'-':>8}"))
PY
exit $status
