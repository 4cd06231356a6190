#!/usr/bin/env bash
# The tools' --help says what a user needs first: gpt2_sample's top-k
# default is the in-run samples' (50) and that sampling uses it, and both
# gpt2_sample and gpt2_eval name every kind of weights --weights takes.
# usage: tools_help.sh GPT2_SAMPLE GPT2_EVAL
set -euo pipefail
sample=$1 eval=$2
failures=0
has() { # tool, pattern: the tool's --help (exit 0) holds it
  local out
  out=$("$1" --help) || { echo "FAIL: $(basename "$1") --help exited $?"; failures=$((failures + 1)); return; }
  if grep -qF -- "$2" <<<"$out"; then
    echo "ok: $(basename "$1") --help mentions '$2'"
  else
    echo "FAIL: $(basename "$1") --help lacks '$2'"; echo "$out"; failures=$((failures + 1))
  fi
}
has "$sample" "--top-k K           sample among the K most likely tokens (default 50, as the"
grep -q "#define SAMPLES_TOP_K 50$" "$(dirname "$0")/../../src/train/observe/samples.h" ||
  { echo "FAIL: the in-run top-k (SAMPLES_TOP_K) is no longer 50: update this test"; failures=$((failures + 1)); }
for tool in "$sample" "$eval"; do
  for kind in "a weights .h5" "a run directory (its model.h5" "a step directory" "an llm.c .bin" "Hugging Face" "GPT-2 directory"; do
    has "$tool" "$kind"
  done
done
echo "$failures failed"
[ "$failures" -eq 0 ]
