#!/usr/bin/env bash
# Ranks started with different settings (issue 61, kind 5): an MPMD line
# that gives each rank its own overrides, another .ini for one rank (as on
# another node's file system), an out_dir whose ${VAR} is set differently
# per rank. Every rank exits 2 within the limit, before the run directory
# exists, and the message names the rank that differs, its host and the
# keys. A ${VAR} in train_data (each rank its own copy) is accepted.
# usage: config_agree.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
run=(configs/tiny.ini device=cpu max_steps=2 warmup_steps=1 eval_every=0 out_dir="$work" run_name=agree)
sed 's/^lr = 3e-3/lr = 1e-3/' configs/tiny.ini >"$work/other.ini"
grep -q "^lr = 1e-3" "$work/other.ini" || fail "could not make other.ini"

# disagree NAME REGEX -- RANK0_ARGS -- RANK1_ARGS (each: the command after -np 1)
disagree() {
  local name=$1 regex=$2; shift 3
  local a=() b=()
  while [ "$1" != -- ]; do a+=("$1"); shift; done
  shift; b=("$@")
  local rc=0
  timeout 60 mpirun --bind-to none -np 1 "${a[@]}" : -np 1 "${b[@]}" >"$work/$name.log" 2>&1 || rc=$?
  [ $rc -eq 2 ] || fail "$name: exit $rc, expected 2" "$work/$name.log"
  grep -q "error: the ranks disagree on the configuration: rank 1/2 (host $(hostname)) has $regex" "$work/$name.log" \
    || fail "$name: no message naming rank 1 and the keys" "$work/$name.log"
  [ ! -e "$work/agree" ] || fail "$name: the run directory was created"
  printf '%-10s exit 2: %s\n' "$name" "$(grep -o 'has .* (rank 0 runs' "$work/$name.log")"
}
disagree overrides "lr = 0.001 where rank 0 has lr = 0.003; seed = 7 where rank 0 has seed = 1337 (rank 0" \
  -- "$bin" "${run[@]}" -- "$bin" "${run[@]}" lr=1e-3 seed=7
disagree n_layer "n_layer = 3 where rank 0 has n_layer = 2 (rank 0" \
  -- "$bin" "${run[@]}" -- "$bin" "${run[@]}" n_layer=3
disagree ini "lr = 0.001 where rank 0 has lr = 0.003 (rank 0" \
  -- "$bin" "${run[@]}" -- "$bin" "$work/other.ini" "${run[@]:1}"
disagree env_var "out_dir = $work/b where rank 0 has out_dir = $work/a (rank 0" \
  -- env "ROOT=$work/a" "$bin" "${run[@]}" 'out_dir=${ROOT}' -- env "ROOT=$work/b" "$bin" "${run[@]}" 'out_dir=${ROOT}'
# A ${VAR} in a data path may give each rank its own copy (as written, the
# same): accepted; checked on --print-config, which agrees before it prints.
timeout 60 mpirun --bind-to none -np 1 env "D=$work/a" "$bin" --print-config "${run[@]}" 'train_data=${D}/x_*.bin' \
  : -np 1 env "D=$work/b" "$bin" --print-config "${run[@]}" 'train_data=${D}/x_*.bin' >"$work/data_var.log" 2>&1 \
  || fail "a per-rank \${D} in train_data was refused" "$work/data_var.log"
# The same settings through different spellings agree.
timeout 60 mpirun --bind-to none -np 1 "$bin" "${run[@]}" : -np 1 "$bin" "${run[@]}" --lr 3e-3 >"$work/same.log" 2>&1 \
  || fail "the same settings, spelled differently, were refused" "$work/same.log"
echo "config_agree: OK"
