#!/usr/bin/env bash
# Checkpoints read by others, and llm.c interchange (one rank, tiny config):
#  (1) h5py alone reads the named weights of the step-8 checkpoint's model.h5,
#      and the PyTorch GPT-2 of tests/lib/gpt2_torch.py built from them
#      gives the val loss the trainer logged at step 8 on the same batches;
#  (2) gpt2_convert writes llm.c model files (fp32, bf16) holding those
#      weights in llm.c's order, and reads one back into the same weights;
#  (3) init_from= an llm.c file or the checkpoint starts a new run whose
#      step-0 val loss is the trainer's step-8 val loss, bit for bit; a model
#      of another shape is refused naming the key.
# usage: ckpt_interchange.sh GPT2_DDP GPT2_CONVERT WORK_DIR
set -euo pipefail
bin=$1 convert=$2 work=$3
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
check=(/usr/bin/python3 tests/lib/ckpt_check.py)
eval_cfg=(eval_batches=2 val_data="data/nlp-corpus/nlp_val_*.bin" out_dir="$work")
"$bin" configs/tiny.ini max_steps=8 warmup_steps=2 eval_every=8 log_every=4 checkpoint_every=8 \
  "${eval_cfg[@]}" run_name=src >"$work/src.log" 2>&1 || fail "training run" "$work/src.log"
ckpt=$work/src/step_00000008
h5ls -r "$ckpt/model.h5" | head -4
"${check[@]}" torch "$ckpt" "$work/src" 8 "data/nlp-corpus/nlp_val_*.bin" 2 1 8 64 2

"$convert" "$ckpt" "$work/gpt2_tiny.bin"
"$convert" "$work/src" "$work/gpt2_tiny_bf16.bin" --bf16
"${check[@]}" llmc "$ckpt/model.h5" "$work/gpt2_tiny.bin"
"${check[@]}" llmc "$ckpt/model.h5" "$work/gpt2_tiny_bf16.bin"
"$convert" "$work/gpt2_tiny.bin" "$work/back.h5"
"${check[@]}" same_weights "$ckpt/model.h5" "$work/back.h5"

val_at() { grep '"type":"eval"' "$1/metrics.jsonl" | grep "\"step\":$2," | sed 's/.*"val_loss":\([^,]*\),.*/\1/'; }
ref=$(val_at "$work/src" 8)
for from in "$work/gpt2_tiny.bin" "$ckpt" "$work/gpt2_tiny_bf16.bin"; do
  name=$(basename "$from")
  "$bin" configs/tiny.ini max_steps=1 warmup_steps=0 eval_every=1 "${eval_cfg[@]}" \
    init_from="$from" run_name="init_$name" >"$work/init_$name.log" 2>&1 || fail "init_from=$from" "$work/init_$name.log"
  got=$(val_at "$work/init_$name" 0)
  echo "init_from=$name: step-0 val loss $got (the source run logged $ref at step 8)"
  case $name in
    *bf16*) /usr/bin/python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-2 * b)" "$got" "$ref" \
              || fail "bf16 weights: val loss too far from $ref" ;;
    *) [ "$got" = "$ref" ] || fail "val loss $got differs from $ref" ;;
  esac
done

set +e
"$bin" configs/tiny.ini n_layer=3 max_steps=1 warmup_steps=0 eval_every=0 out_dir="$work" run_name=bad \
  init_from="$work/gpt2_tiny.bin" >"$work/bad.log" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "init_from = .*gpt2_tiny.bin: the llm.c model file .* has n_layer = 2, the config 3" "$work/bad.log" \
  || fail "a 2-layer llm.c file into a 3-layer config: exit $rc" "$work/bad.log"
echo "refused: $(grep error "$work/bad.log")"
echo "interchange: OK"
