#!/usr/bin/env bash
# bench/bench_attention.sh's side-by-side table, on the CPU: a stand-in for
# bench_attention prints BENCH lines of every implementation of ours (the
# default, once more with the column sums, the deterministic mode, the
# mma.sync kernels) and a stand-in for the peers' python3 prints cuDNN's
# and FlashAttention-2's, each with its own times. Every cell of the table
# must hold the times of its own implementation (the column-sum line once
# overwrote the default's, whose impl name it extends), its TFLOP/s must
# be the causal FLOPs over that time, and the ratio the default over cuDNN.
# usage: bench_attention_table.sh WORK_DIR
set -euo pipefail
work=$1
cd "$(dirname "$0")/../.."
rm -rf "$work"; mkdir -p "$work/build/tests"
fail() { echo "FAIL: $*"; cat "$work/table.txt" 2>/dev/null || true; exit 1; }

# times in ms, distinct per implementation and pass: fwd = base, fwd+bwd = 3 base + 0.1
cat >"$work/times.txt" <<'EOF'
wgmma 0.150
wgmma+colsum 0.170
wgmma-det 0.190
mma.sync 0.210
cudnn 0.230
fa2 0.250
EOF
# one BENCH line: emit IMPL B H T D, with IMPL's times from times.txt
cat >"$work/emit" <<EOF
#!/usr/bin/env bash
ms=\$(awk -v i="\$1" '\$1 == i { print \$2 }' "$work/times.txt")
echo "BENCH attention impl=\$1 B=\$2 H=\$3 T=\$4 D=\$5 fwd_ms=\$ms fwdbwd_ms=\$(awk "BEGIN { print 3 * \$ms + 0.1 }")"
EOF
cat >"$work/build/tests/bench_attention" <<EOF
#!/usr/bin/env bash
for impl in wgmma wgmma+colsum wgmma-det mma.sync; do "$work/emit" \$impl "\$@"; done
EOF
# the peers' python3: attention_peers.py's lines from times.txt; anything else (the summary) run
cat >"$work/python3" <<EOF
#!/usr/bin/env bash
if [ "\$1" = bench/attention_peers.py ]; then
  shift
  for impl in cudnn fa2; do "$work/emit" \$impl "\$@"; done
  exit 0
fi
exec /usr/bin/python3 "\$@"
EOF
chmod +x "$work/emit" "$work/build/tests/bench_attention" "$work/python3"

PYTHON="$work/python3" bench/bench_attention.sh "$work/build" \
  >"$work/table.txt" 2>&1 || fail "bench_attention.sh exited $?"
cat "$work/table.txt"
/usr/bin/python3 - "$work/table.txt" "$work/times.txt" <<'PY' || fail "the table"
import re, sys
table, times = sys.argv[1:]
base = {name: float(ms) for name, ms in (l.split() for l in open(times))}
lines = open(table).read().splitlines()
head = [l for l in lines if l.startswith("B H T D")]
assert len(head) == 1, "one header line"
impls = head[0].split()[5:-1]  # after "B H T D pass", before "ratio"
assert impls == list(base), f"columns {impls}, expected {list(base)}"
rows = 0
for l in lines:
    m = re.match(r"(\d+) (\d+) (\d+) (\d+)\s+(fwd\+bwd|fwd)\s+(.*)", l)
    if not m:
        continue
    b, h, t, d = map(int, m.groups()[:4])
    bwd = m.group(5) == "fwd+bwd"
    cells = re.findall(r"([\d.]+) \(\s*(\d+)\)", m.group(6))
    ratio = float(m.group(6).split()[-1])
    assert len(cells) == len(impls), f"{len(cells)} cells in {l!r}"
    flop = 4.0 * b * h * t * t * d / 2 * (3.5 if bwd else 1.0)
    want = {}
    for name, (ms, tflops) in zip(impls, cells):
        want[name] = 3 * base[name] + 0.1 if bwd else base[name]
        assert abs(float(ms) - want[name]) < 6e-4, f"{name} {ms} ms, expected {want[name]:.3f}: {l!r}"
        assert abs(int(tflops) - flop / want[name] * 1e-9) <= 1, f"{name} {tflops} TFLOP/s: {l!r}"
    assert abs(ratio - want["wgmma"] / want["cudnn"]) < 6e-4, f"ratio {ratio}: {l!r}"
    rows += 1
assert rows == 8, f"{rows} rows, expected 8 (the 4 default shapes x fwd, fwd+bwd)"
print("bench_attention_table: 8 rows, every cell its own implementation's")
PY
