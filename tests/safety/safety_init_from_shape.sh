#!/usr/bin/env bash
# init_from takes the model's shape from its source when the config sets
# none of n_layer, n_embd, n_head, vocab_size, block_size (the defaults are
# 124M), from each kind of source: a run's model.h5, a checkpoint's run and
# step directory, an llm.c .bin and a Hugging Face directory (both written
# by gpt2_convert). h5py is the oracle: the trained model.h5 has the
# source's tensors with the source's shapes. Also:
#  - a size set that the source does not have: exit 2 naming both values
#    and the fix, before the run directory exists;
#  - the run resumed (resume=auto) with the same command line takes the
#    checkpoint's shape, even once the init_from file is gone.
# usage: safety_init_from_shape.sh GPT2_DDP GPT2_CONVERT WORK_DIR HAVE_HF(1|0)
set -euo pipefail
bin=$1 convert=$2 work=$3 have_hf=$4
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
py=/usr/bin/python3

"$bin" configs/tiny.ini max_steps=2 warmup_steps=1 eval_every=0 checkpoint_every=2 out_dir="$work" \
  run_name=src >"$work/src.log" 2>&1 || fail "source run" "$work/src.log"
"$convert" "$work/src/model.h5" "$work/src.bin" >"$work/convert.log" 2>&1 || fail "to llm.c" "$work/convert.log"
sources=("$work/src/model.h5" "$work/src" "$work/src/step_00000002" "$work/src.bin")
if [ "$have_hf" = 1 ]; then
  "$convert" "$work/src/model.h5" "$work/hf" >"$work/convert.log" 2>&1 || fail "to HF" "$work/convert.log"
  sources+=("$work/hf")
fi

# Same tensors, same shapes: the source run's model.h5 against NEW.
same_shapes() {
  "$py" - "$work/src/model.h5" "$1" <<'PY'
import sys, h5py
def shapes(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o.shape) if isinstance(o, h5py.Dataset) else None)
    return out
a, b = shapes(sys.argv[1]), shapes(sys.argv[2])
if not a or a != b:
    diff = sorted(set(a.items()) ^ set(b.items()))[:6]
    sys.exit(f"FAIL: {sys.argv[2]}: tensors or shapes differ from the source's: {diff}")
print(f"  {len(b)} tensors with the source's shapes (wte {b['wte.weight'] if 'wte.weight' in b else '?'})")
PY
}

# No model key anywhere (no config file): the defaults would be 124M.
i=0
for src in "${sources[@]}"; do
  i=$((i + 1))
  "$bin" --init_from="$src" --max_steps=2 --micro_batch=4 --total_batch=512 --eval_every=0 \
    --out_dir="$work" --run_name="to$i" >"$work/to$i.log" 2>&1 || fail "init_from=$src" "$work/to$i.log"
  grep -qxF "model shape from init_from = $src: 2 layers, 64 wide, 1 heads, vocab 50257, block 128; seq_len lowered to match" \
    "$work/to$i.log" || fail "init_from=$src: no 'model shape from' line" "$work/to$i.log"
  echo "init_from=$src: $(grep -m1 '^model:' "$work/to$i.log")"
  same_shapes "$work/to$i/model.h5" || exit 1
done

# A size the source does not have: refused before anything is written.
set +e
"$bin" --init_from="$work/src.bin" --n_layer=3 --n_embd=128 --n_head=2 --max_steps=2 --eval_every=0 \
  --out_dir="$work" --run_name=bad >"$work/bad.log" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || fail "n_layer=3 against a 2-layer init_from: exit $rc" "$work/bad.log"
grep -q "error: init_from = $work/src.bin: the llm.c model file $work/src.bin has n_layer = 2, the config 3; n_embd = 64, the config 128; n_head = 1, the config 2 (its weights fit only its own shape). Remove n_layer, n_embd, n_head from the config" \
  "$work/bad.log" || fail "the refusal names each key, both values and the fix" "$work/bad.log"
[ ! -e "$work/bad" ] || fail "the refused start left $work/bad behind" "$work/bad.log"
echo "mismatch: exit 2, $(grep -m1 -o 'has n_layer.*' "$work/bad.log" | cut -c1-100)..."
# A size set to the source's own value is fine, the rest still comes from it.
"$bin" --init_from="$work/src.bin" --n_layer=2 --max_steps=1 --micro_batch=4 --total_batch=512 \
  --eval_every=0 --out_dir="$work" --run_name=part >"$work/part.log" 2>&1 || fail "n_layer=2 with the rest from init_from" "$work/part.log"
same_shapes "$work/part/model.h5" || exit 1

# The same command line continued (resume=auto) after init_from is gone.
cont=(--init_from="$work/src.bin" --micro_batch=4 --total_batch=512 --eval_every=0 --checkpoint_every=2
      --out_dir="$work" --run_name=cont)
"$bin" "${cont[@]}" --max_steps=2 >"$work/cont1.log" 2>&1 || fail "first part" "$work/cont1.log"
mv "$work/src.bin" "$work/moved.bin"
"$bin" "${cont[@]}" --max_steps=4 --allow_changed=max_steps >"$work/cont2.log" 2>&1 || fail "resumed without the init_from file" "$work/cont2.log"
grep -q "^model shape from the checkpoint resumed, $work/cont/step_00000002/model.h5: 2 layers, 64 wide" \
  "$work/cont2.log" || fail "no shape line from the checkpoint" "$work/cont2.log"
grep -q "^resumed from $work/cont/step_00000002: step 2" "$work/cont2.log" || fail "not resumed" "$work/cont2.log"
same_shapes "$work/cont/model.h5" || exit 1
echo "init_from shape: OK"
