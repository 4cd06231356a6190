#!/usr/bin/env bash
# Time to quality: recipes trained on the benchmark corpus
# (tools/prepare_bench_corpus.sh), one model size, one batch, one pass over
# the training tokens at most (max_steps = train tokens / total_batch unless
# STEPS is smaller), the same seed, data order and validation windows. The
# first recipe is the reference (llm.c's: AdamW, cosine, lr 6e-4); for each
# recipe bench/recipe_report.py prints its validation curve and the steps it
# needs to reach the reference's final validation loss (linear between
# evaluations), then one comparable line
#   BENCH recipe model=<L>x<C> batch=<tokens> steps=<N> ref=<name> ref_final=<loss>
#         <name>=<steps to ref>(<% of N>) ... gpu=<name>
# and writes recipe.png and recipe.json next to the runs.
# Recipes are NAME:key=value,key=value (overrides of the common settings).
# usage: [CONFIG=configs/124M.ini] [BATCH=65536] [MICRO=32] [STEPS=N] [EVALS=20]
#        [EVAL_BATCHES=8] [DEVICE=cuda] [TRAIN=GLOB VAL=GLOB] [COMMON="k=v ..."] [OUT=DIR] bench/bench_recipe.sh BUILD_DIR [RECIPE ...]
set -uo pipefail
build=${1:-build}; shift || true
cd "$(dirname "$0")/.."
train_glob=${TRAIN:-data/bench-corpus/bench_train_*.bin}
val_glob=${VAL:-data/bench-corpus/bench_val_*.bin}
ls $train_glob >/dev/null 2>&1 || { echo "bench_recipe: no $train_glob: run tools/prepare_bench_corpus.sh"; exit 1; }
# The reference is configs/124M.ini's own recipe (llm.c's); the others are
# the published faster ones: a tuned AdamW (3x the lr, warm-up / stable /
# linear decay: modded-nanogpt's record of 2024-06) and Muon on the blocks'
# matrices with AdamW for the rest under the same schedule.
recipes=${*:-llmc: adamw_wsd:lr=1.8e-3,lr_schedule=wsd,decay_frac=0.3,min_lr_frac=0 muon_wsd:optimizer=muon,lr=1.8e-3,muon_lr=0.02,lr_schedule=wsd,decay_frac=0.3,min_lr_frac=0}
config=${CONFIG:-configs/124M.ini}
batch=${BATCH:-65536}
micro=${MICRO:-32}
evals=${EVALS:-20}
eval_batches=${EVAL_BATCHES:-8}
bin=$(realpath "$build/gpt2_ddp")
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
train_tokens=$(/usr/bin/env python3 - $train_glob <<'PY'
import struct, sys
print(sum(struct.unpack("<256i", open(p, "rb").read(1024))[2] for p in sys.argv[1:]))
PY
)
seq_len=$(sed -n 's/^seq_len *= *\([0-9]*\).*/\1/p' "$config" | head -1); seq_len=${seq_len:-1024}
max_steps=$((train_tokens / batch))
[ -n "${STEPS:-}" ] && [ "$STEPS" -lt "$max_steps" ] && max_steps=$STEPS
eval_every=$(( (max_steps + evals - 1) / evals ))
warmup=$(( max_steps * 700 / 19073 + 1 )) # llm.c's share: 700 of 19073 steps
echo "bench_recipe: $train_tokens train tokens, batch $batch: $max_steps steps (each token at most once), eval every $eval_every"
common=(device="${DEVICE:-cuda}" micro_batch="$micro" total_batch="$batch" max_steps="$max_steps"
        warmup_steps="$warmup" eval_every="$eval_every" eval_batches="$eval_batches" log_every=10
        checkpoint_every=0 hellaswag_examples=0 sample_every=0 resume=none
        train_data="$train_glob" val_data="$val_glob" out_dir="$out")
names=()
for recipe in $recipes; do
  name=${recipe%%:*} overrides=()
  [ -n "${recipe#*:}" ] && [ "$recipe" != "$name" ] && IFS=, read -ra overrides <<<"${recipe#*:}"
  t0=$SECONDS
  # shellcheck disable=SC2086
  "$bin" "$config" "${common[@]}" run_name="$name" ${COMMON:-} "${overrides[@]}" >"$out/$name.log" 2>&1 \
    || { echo "$name failed:"; tail -5 "$out/$name.log"; exit 1; }
  echo "bench_recipe: $name: $((SECONDS - t0)) s"
  names+=("$name")
done
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' ' '_')
/usr/bin/env python3 bench/recipe_report.py "$out" "$config" "$batch" "$max_steps" "${gpu:-none}" "${names[@]}"
