#!/usr/bin/env bash
# gpt2_tokenize throughput: the bundled nlp-corpus documents as one JSONL
# file, COPIES times over (default 8, ~73 MB), tokenized at 1 thread and at
# each thread count given (default: the CPUs this process may use). Every
# run's shards must be identical; prints one comparable line:
#   tokenize: 72.6 MB JSONL | 1 thread 16.1 MB/s | 2 threads 29.8 MB/s (1.85x) | ...
# The repeated text favours the per-thread word caches, a little more at one
# thread (one cache warms once); MB/s are of text read (uncompressed).
# usage: [COPIES=8] bench/bench_tokenize.sh BUILD_DIR [THREADS ...]   (needs tools/prepare_data.sh's data)
set -euo pipefail
build=${1:-build}; shift || true
threads=${*:-$(nproc)}
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
/usr/bin/python3 - data/nlp-corpus/text "$out/corpus.jsonl" "${COPIES:-8}" <<'PY'
import glob, json, os, sys
src, dst, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
docs = [open(p, encoding="utf-8").read() for p in sorted(glob.glob(os.path.join(src, "*.txt")))]
with open(dst, "w") as f:
    for c in range(copies):
        f.writelines(json.dumps({"text": d, "copy": c}) + "\n" for d in docs)
PY
line="tokenize: $(awk -v b="$(stat -c %s "$out/corpus.jsonl")" 'BEGIN { printf "%.1f", b / 1e6 }') MB JSONL"
base=""
for t in 1 $threads; do
  "$build/gpt2_tokenize" --out-dir "$out/t$t" --name c --threads "$t" "$out/corpus.jsonl" 2>"$out/t$t.log"
  rate=$(sed -n 's/.*(\([0-9.]*\) MB\/s, .*/\1/p' "$out/t$t.log" | tail -n 1)
  cmp -s "$out/t1/c_train_000000.bin" "$out/t$t/c_train_000000.bin" || { echo "threads=$t: different shards"; exit 1; }
  if [ -z "$base" ]; then base=$rate; line+=" | 1 thread $rate MB/s"
  else line+=" | $t threads $rate MB/s ($(awk -v a="$rate" -v b="$base" 'BEGIN { printf "%.2f", a / b }')x)"; fi
done
echo "$line | $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
