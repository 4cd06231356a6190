#!/usr/bin/env bash
# Every class of bad Hugging Face directory (hf_check.py break CASE: config
# missing, not JSON, another model_type, settings we cannot reproduce, sizes
# that do not match the tensors, a tensor missing, misshapen, of an integer
# dtype, unknown or stored twice, an untied lm_head, a truncated file or
# header, a corrupt header, a missing shard, an index naming none) exits 2 with a message naming
# the file and the problem: gpt2_convert DIR out.h5 for each, init_from=DIR
# for some, under mpirun -np 2 for one (every rank exits 2, one message).
# Nothing is written when the input is bad.
# usage: hf_bad_inputs.sh GPT2_DDP GPT2_CONVERT WORK_DIR
set -euo pipefail
bin=$1 convert=$2 work=$3
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
"$bin" configs/tiny.ini max_steps=1 warmup_steps=0 eval_every=0 out_dir="$work" run_name=src \
  >"$work/src.log" 2>&1 || fail "training run" "$work/src.log"
"$convert" "$work/src/model.h5" "$work/good" >/dev/null

# expect_exit2 LOG ERE COMMAND...: exit code 2, and ERE in the output.
expect_exit2() {
  local log=$1 ere=$2; shift 2
  set +e; "$@" >"$log" 2>&1; local rc=$?; set -e
  [ $rc -eq 2 ] || fail "exit $rc (want 2): $*" "$log"
  grep -Eq -- "$ere" "$log" || fail "no '$ere' in the output of: $*" "$log"
  echo "  exit 2: $(grep -m1 'error' "$log" | sed 's/^[^:]*: error: //')"
}

# CASE  what the message must say (after the file's path)
cases=(
  "no_config|config.json: No such file or directory"
  "config_not_json|config.json: not valid JSON: it ends after .* in the middle of a value"
  "model_type|config.json: model_type = \"llama\": gpt2_ddp reads GPT-2 models"
  "no_model_type|config.json: no model_type \(not a Hugging Face model config\)"
  "n_embd_string|config.json: n_embd = \"64\": not an integer"
  "activation|config.json: activation_function = \"relu\": gpt2_ddp's GPT-2 uses the tanh GELU"
  "epsilon|config.json: layer_norm_epsilon = 1e-0?6: gpt2_ddp's LayerNorm uses 1e-5"
  "untied_config|config.json: tie_word_embeddings = false"
  "config_more_layers|model.safetensors: tensor 'transformer.h.2.ln_1.weight' \(or 'h.2.ln_1.weight'\) is missing"
  "config_wider|model.safetensors: tensor 'transformer.wte.weight' has shape \[50257, 64\], but .*config.json \(n_layer 2, n_embd 128, .*\) needs \[50257, 128\]"
  "config_vocab|model.safetensors: tensor 'transformer.wte.weight' has shape \[50257, 64\], but .*needs \[50000, 64\]"
  "no_weights|: no model.safetensors \(nor model.safetensors.index.json\)"
  "missing_tensor|model.safetensors: tensor 'transformer.h.1.mlp.c_fc.bias' \(or 'h.1.mlp.c_fc.bias'\) is missing"
  "wrong_shape|model.safetensors: tensor 'transformer.h.0.attn.c_attn.weight' has shape \[192, 64\], but .* needs \[64, 192\] \(Conv1D: in, out\)"
  "int_dtype|model.safetensors: tensor 'transformer.h.0.ln_1.bias' has dtype I32, not a floating-point type"
  "unknown_tensor|model.safetensors: tensor 'transformer.h.0.attn.q_proj.weight' is not one of GPT-2's"
  "stored_twice|model.safetensors: GPT-2's 'wpe.weight' is stored twice"
  "untied_lm_head|model.safetensors: lm_head.weight differs from wte.weight: an untied output layer"
  "truncated|model.safetensors: [0-9]+ bytes, but its header describes [0-9]+ .*: truncated"
  "truncated_header|model.safetensors: 100 bytes, but its header alone needs 8 \+ [0-9]+: truncated"
  "corrupt_header|model.safetensors: header: not valid JSON at byte [0-9]+"
  "header_length|model.safetensors: header length [0-9]+ is not in \[2, 100000000\]"
  "shard_missing|model-00001-of-00002.safetensors: No such file or directory"
  "shard_none|model.safetensors.index.json: \"weight_map\" names no file"
)
echo "gpt2_convert DIR out.h5:"
for c in "${cases[@]}"; do
  name=${c%%|*} ere=${c#*|}
  /usr/bin/python3 tests/hf/hf_check.py break "$work/good" "$work/$name" "$name"
  expect_exit2 "$work/$name.log" "$work/$name/?$ere" "$convert" "$work/$name" "$work/$name.h5"
  [ ! -e "$work/$name.h5" ] || fail "$name: an output file was written"
done

echo "init_from=DIR:"
run=("$bin" configs/tiny.ini max_steps=1 warmup_steps=0 eval_every=0 out_dir="$work")
for name in model_type missing_tensor truncated untied_lm_head; do
  expect_exit2 "$work/init_$name.log" "init_from = $work/$name: |$work/$name/" \
    "${run[@]}" run_name="init_$name" init_from="$work/$name"
done
expect_exit2 "$work/init_layers.log" \
  "init_from = $work/good: the Hugging Face model $work/good has n_layer = 2, the config 3" \
  "${run[@]}" run_name=init_layers init_from="$work/good" n_layer=3

echo "mpirun -np 2, init_from=DIR:"
source tests/lib/mpi_env.sh
expect_exit2 "$work/np2.log" "$work/wrong_shape/model.safetensors: tensor 'transformer.h.0.attn.c_attn.weight' has shape" \
  mpirun --allow-run-as-root --oversubscribe -np 2 "${run[@]}" run_name=np2 init_from="$work/wrong_shape"
n=$(grep -c 'error' "$work/np2.log")
[ "$n" -eq 1 ] || fail "$n error lines from 2 ranks (want one)" "$work/np2.log"
echo "hf_bad_inputs: OK (${#cases[@]} broken directories)"
