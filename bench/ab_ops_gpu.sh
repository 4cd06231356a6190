#!/usr/bin/env bash
# Op-level A/B on one GPU: bench_ops_cuda of this tree's build (A) against
# another source tree's (B: an earlier commit, `git archive <commit> | tar
# -x -C DIR`), built the same way and run alternately (A B A B ...) at each
# shape, so that drift of the GPU's clocks falls on both. A shape is
# TOKENS:CHANNELS[:ONLY] (ONLY: bench_ops_cuda's prefix of op names).
# Prints one comparable line per op and shape, medians over the rounds:
#   ABOP <op> | <shape> a=<us> b=<us> a/b=<ratio> (rounds: a ... | b ...)
# usage: [ROUNDS=2] [AUTOTUNE=1] bench/ab_ops_gpu.sh BUILD_DIR OTHER_SRC [SHAPE ...]
#   bench/ab_ops_gpu.sh build /tmp/base 32768:768:layernorm 16384:1600:layernorm
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,10s/^# \{0,1\}//p' "$0" >&2; exit 2; }
build=$(realpath "$1") other=$(realpath "$2"); shift 2
shapes=${*:-32768:768 16384:1600}
rounds=${ROUNDS:-2} autotune=${AUTOTUNE:-1}
cd "$(dirname "$0")/.." || exit
source bench/ab_build.sh
ab_build_other "$other" tests/bench_ops_cuda || exit 1
out=$(mktemp -d)
n=0 # the shape's number: two shapes of the same width (other ONLY) keep their own logs
for shape in $shapes; do
  IFS=: read -r tokens channels only <<<"$shape"
  n=$((n + 1))
  for ((r = 0; r < rounds; r++)); do
    for side in a b; do
      bin=$build/tests/bench_ops_cuda
      [ $side = b ] && bin=$other/build/tests/bench_ops_cuda
      log=$out/$side.$tokens.$channels.$n.$r.log
      "$bin" "$tokens" "$autotune" "$channels" ${only:+"$only"} >"$log" 2>&1 \
        || { echo "$side failed at $shape:"; tail -5 "$log"; exit 1; }
    done
  done
done
python3 - "$out" <<'PY'
import glob, os, re, statistics, sys
# "BENCH <op> <shape> median_us=<us> ...": op names hold spaces, so the
# shape is found by its form at the end of what comes before median_us
shape_at_end = re.compile(r"^BENCH (.*?)\s+(N\d+ C\d+(?: OC\d+| Vp\d+)?|n\d+)\s*$")
times = {}  # (tokens, channels, op, shape) -> {"a": [us, ...], "b": [...]}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.log"))):
    side, tokens, channels = os.path.basename(path).split(".")[:3]  # a.32768.768.1.0.log
    for line in open(path):
        if not line.startswith("BENCH ") or " median_us=" not in line:
            continue
        head, tail = line.split(" median_us=", 1)
        m = shape_at_end.match(head)
        if not m:
            continue
        key = (tokens, channels, m.group(1), m.group(2))
        times.setdefault(key, {"a": [], "b": []})[side].append(float(tail.split()[0]))
for (_, _, op, shape), t in times.items():
    if not t["a"] or not t["b"]:
        print(f"ABOP {op} | {shape} only in {'a' if t['a'] else 'b'}")
        continue
    a, b = statistics.median(t["a"]), statistics.median(t["b"])
    rounds = lambda xs: " ".join(f"{x:.1f}" for x in xs)
    print(f"ABOP {op} | {shape} a={a:.1f} b={b:.1f} a/b={a / b:.3f} (rounds: a {rounds(t['a'])} | b {rounds(t['b'])})")
PY
rm -rf "$out"
