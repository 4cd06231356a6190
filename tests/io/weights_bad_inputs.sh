#!/usr/bin/env bash
# Bad model files for every reader of weights: each case of
# make_bad_models.py (a size that breaks a rule of src/model/shape.h, a
# dataset of another shape than the sizes imply, a missing attribute or
# dataset, a truncated llm.c .bin or one whose header asks for terabytes,
# a text file) must exit 2 with the file and the field or rule named, from
# gpt2_eval, gpt2_sample, gpt2_convert (no output written) and gpt2_ddp
# init_from=; also: every rank of a 2-rank init_from exits 2 with one
# message, a checkpoint whose model.h5 has a bad size exits 2 on resume and
# as --weights, gpt2_eval --device cuda refuses a head size the CUDA
# attention lacks, gpt2_sample refuses a vocabulary smaller than the
# tokenizer's, and a checksum error stays exit 1. The good files pass.
# usage: weights_bad_inputs.sh GPT2_DDP GPT2_EVAL GPT2_SAMPLE GPT2_CONVERT WORK_DIR
set -euo pipefail
bin=$1 eval_bin=$2 sample_bin=$3 convert=$4 work=$5
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
val="data/nlp-corpus/nlp_val_*.bin"
tiny=(configs/tiny.ini max_steps=1 warmup_steps=0 eval_every=0 out_dir="$work")
"$bin" "${tiny[@]}" checkpoint_every=1 run_name=src >"$work/src.log" 2>&1 \
  || fail "training run" "$work/src.log"
good=$work/src/model.h5
"$convert" "$good" "$work/good.bin" >"$work/convert_good.log" 2>&1 \
  || fail "llm.c export" "$work/convert_good.log"
/usr/bin/python3 tests/io/make_bad_models.py "$good" "$work/good.bin" "$work/bad" >/dev/null

# expect RC LOG ERE COMMAND...: exit code RC and ERE in the output.
expect() {
  local want=$1 log=$2 ere=$3; shift 3
  set +e; "$@" >"$log" 2>&1; local rc=$?; set -e
  [ $rc -eq "$want" ] || fail "exit $rc (want $want): $*" "$log"
  grep -Eq -- "$ere" "$log" || fail "no '$ere' in the output of: $*" "$log"
}

echo "good files (controls):"
for f in "$good" "$work/good.bin"; do
  expect 0 "$work/good_eval.log" "val loss [0-9.]+" \
    "$eval_bin" --weights "$f" --val "$val" --val-batches 1 --batch 2 --seq-len 16
  echo "  gpt2_eval $(basename "$f"): $(grep 'val loss' "$work/good_eval.log")"
done
expect 0 "$work/good_sample.log" "" "$sample_bin" --weights "$good" --tokens 4 --greedy
expect 0 "$work/good_convert.log" "" "$convert" "$work/good.bin" "$work/good_again.h5"
echo "  gpt2_sample and gpt2_convert: exit 0"

# CASE (file in WORK/bad)  what the message must say after the file's path
n='[0-9]+'
cases=(
  "n_head_zero.h5|n_head = 0: out of range: must be in \[1, 4096\]"
  "n_layer_zero.h5|n_layer = 0: out of range: must be in \[1, 1024\]"
  "n_embd_negative.h5|n_embd = -64: out of range"
  "vocab_over_padded.h5|vocab_size = 60000 is larger than padded_vocab_size = 50304"
  "padded_not_rounded.h5|padded_vocab_size = 50432: must be vocab_size = 50257 rounded up to a multiple of 128, 50304"
  "head_not_dividing.h5|n_embd = 64 is not divisible by n_head = 3"
  "sizes_huge.h5|n_embd = 1099511627776: out of range: must be in \[1, 65536\]"
  "sizes_large.h5|dataset ln_f.weight is 64, but the size attributes make it 65536 \(n_embd"
  "block_size_over_wpe.h5|dataset wpe.weight is 128 x 64, but the size attributes make it 256 x 64 \(block_size x n_embd"
  "wrong_shape.h5|dataset h.0.attn.c_attn.weight is 192 x 63, but the size attributes make it 192 x 64 \(3 n_embd x n_embd"
  "missing_attr.h5|size attribute 'n_head': missing"
  "string_attr.h5|size attribute 'n_layer': not an integer"
  "missing_dataset.h5|dataset h.1.mlp.c_fc.bias is missing"
  "n_layer_lowered.h5|dataset h.1.ln_1.weight is a layer beyond n_layer = 1"
  "bin_n_head_zero.bin|llm.c header: n_head = 0: out of range"
  "bin_n_layer_negative.bin|llm.c header: n_layer = -2: out of range"
  "bin_vocab_over_padded.bin|llm.c header: vocab_size = 60000 is larger than padded_vocab_size = 50304"
  "bin_head_not_dividing.bin|llm.c header: n_embd = 64 is not divisible by n_head = 3"
  "bin_sizes_huge.bin|llm.c header: n_embd = 2147483647: out of range"
  "bin_sizes_large.bin|$n bytes, but its header's sizes make $n \(1024-byte header \+ $n parameters x 4 bytes\): the file is shorter than its header says"
  "bin_truncated.bin|$n bytes, but its header's sizes make $n .*: the file is shorter than its header says"
  "bin_short_header.bin|shorter than llm.c's 1024-byte header"
  "bin_version.bin|llm.c model version 4; supported: 3 \(fp32\) and 5 \(bf16\)"
  "text_file|neither an HDF5 weights file nor an llm.c model file \(accepted: a weights .h5"
  "empty_file|neither an HDF5 weights file nor an llm.c model file"
)
init=("$bin" "${tiny[@]}")
for c in "${cases[@]}"; do
  name=${c%%|*} ere=${c#*|}
  f=$work/bad/$name
  expect 2 "$work/$name.eval.log" "error: --weights: $f: $ere" \
    "$eval_bin" --weights "$f" --val "$val" --val-batches 1 --batch 2 --seq-len 16
  expect 2 "$work/$name.sample.log" "error: --weights: $f: $ere" \
    "$sample_bin" --weights "$f" --tokens 4
  expect 2 "$work/$name.convert.log" "error: $f: $ere" "$convert" "$f" "$work/$name.out.h5"
  [ ! -e "$work/$name.out.h5" ] || fail "$name: gpt2_convert wrote an output file"
  expect 2 "$work/$name.init.log" "error: init_from = $f: $f: $ere" \
    "${init[@]}" run_name="init_$name" init_from="$f"
  echo "  $name: exit 2 from each tool: $(grep -m1 -o "$name: .*" "$work/$name.eval.log" | cut -c1-150)"
done

echo "a Hugging Face config.json with the same sizes (the same rules and words):"
"$convert" "$good" "$work/hf" >"$work/hf_export.log" 2>&1 || fail "Hugging Face export" "$work/hf_export.log"
for kv in "n_head 0|n_head = 0: out of range: must be in \[1, 4096\]" \
          "n_head 3|n_embd = 64 is not divisible by n_head = 3" \
          "n_positions 0|n_positions = 0: out of range: must be in \[1, 1048576\]" \
          "n_embd 1099511627776|n_embd = 1099511627776: out of range: must be in \[1, 65536\]"; do
  set -- ${kv%%|*}
  dir=$work/hf_$1_$2
  cp -r "$work/hf" "$dir"
  /usr/bin/python3 -c "import json, sys; p = sys.argv[1]; c = json.load(open(p)); c[sys.argv[2]] = int(sys.argv[3]); json.dump(c, open(p, 'w'))" \
    "$dir/config.json" "$1" "$2"
  expect 2 "$dir.convert.log" "error: $dir/config.json: ${kv#*|}" "$convert" "$dir" "$dir.out.h5"
  expect 2 "$dir.init.log" "error: init_from = $dir: $dir/config.json: ${kv#*|}" \
    "${init[@]}" run_name="init_hf_$1_$2" init_from="$dir"
  echo "  config.json $1 = $2: exit 2 from gpt2_convert and init_from: $(grep -m1 -o 'config.json: .*' "$dir.convert.log")"
done

echo "mpirun -np 2, init_from=<bad .h5>:"
expect 2 "$work/np2.log" "error: init_from = $work/bad/n_head_zero.h5: .*n_head = 0" \
  mpi_run -np 2 "${init[@]}" run_name=np2 init_from="$work/bad/n_head_zero.h5"
lines=$(grep -c 'error' "$work/np2.log")
[ "$lines" -eq 1 ] || fail "$lines error lines from 2 ranks (want one)" "$work/np2.log"
echo "  every rank exit 2, one message"

echo "a checkpoint whose model.h5 has n_head = 0 (same size: its COMPLETE marker still holds):"
cp -r "$work/src" "$work/bad_ckpt"
step=$work/bad_ckpt/step_00000001
/usr/bin/python3 -c "import sys, h5py, numpy as np; h5py.File(sys.argv[1], 'r+').attrs.modify('n_head', np.int64(0))" \
  "$step/model.h5"
before=$(cd "$work/bad_ckpt" && find . -type f ! -name '*.lock' | sort | xargs md5sum)
expect 2 "$work/resume.log" "error: cannot resume: $step/model.h5: n_head = 0: out of range" \
  "$bin" "${tiny[@]}" max_steps=2 checkpoint_every=1 run_name=bad_ckpt
after=$(cd "$work/bad_ckpt" && find . -type f ! -name '*.lock' | sort | xargs md5sum)
[ "$before" = "$after" ] || fail "resume changed the run directory: $before // $after"
# A run directory stands for its final model.h5 when it has one; without
# it, for its newest checkpoint: this one.
[ -f "$work/bad_ckpt/model.h5" ] || fail "the source run left no model.h5"
rm "$work/bad_ckpt/model.h5"
expect 2 "$work/ckpt_eval.log" "error: --weights: $step/model.h5: n_head = 0" \
  "$eval_bin" --weights "$work/bad_ckpt" --val "$val"
echo "  resume and gpt2_eval --weights RUN_DIR (no model.h5): exit 2 naming $step/model.h5; nothing changed"

echo "the backend's and the tokenizer's limits:"
expect 2 "$work/cuda.log" "error: --device cuda: $work/bad/head_size_32.h5: head size n_embd / n_head = 64 / 2 = 32, but the CUDA attention supports head sizes 64 and 128" \
  "$eval_bin" --weights "$work/bad/head_size_32.h5" --val "$val" --device cuda
expect 0 "$work/cpu32.log" "val loss" \
  "$eval_bin" --weights "$work/bad/head_size_32.h5" --val "$val" --val-batches 1 --batch 2 --seq-len 16
echo "  head size 32: --device cuda exit 2, --device cpu runs"
expect 2 "$work/small_vocab.log" "error: --weights: $work/bad/small_vocab.h5 has vocab_size = 1000, fewer tokens than the tokenizer's 50257" \
  "$sample_bin" --weights "$work/bad/small_vocab.h5" --tokens 4
echo "  gpt2_sample, a 1000-token model: exit 2"

echo "a checksum error stays a damaged file (exit 1):"
cp "$good" "$work/flipped.h5"
/usr/bin/python3 - "$work/flipped.h5" <<'PY'
import sys, h5py
path = sys.argv[1]
with h5py.File(path, "r") as f:
    offset = f["wte.weight"].id.get_offset()  # contiguous data (CRC32C per 4 MiB)
data = bytearray(open(path, "rb").read())
data[offset + 1000] ^= 0x10
open(path, "wb").write(data)
PY
expect 1 "$work/flipped.log" "dataset wte.weight: read failed: .*CRC32C checksum" \
  "$eval_bin" --weights "$work/flipped.h5" --val "$val"
echo "  exit 1, checksum named"
echo "weights_bad_inputs: OK (${#cases[@]} bad files x 4 tools)"
