#!/usr/bin/env bash
# init_from is read by rank 0 alone and broadcast, and --version names what
# is compiled in (2 CPU ranks, tiny config):
#  (1) a 2-rank run whose rank 1 runs in a directory where the init_from path
#      (relative) does not exist (mpirun MPMD, --wdir per rank) trains and
#      ends with the same final weights, bit for bit, as the ordinary 2-rank
#      run from the same file: rank 1 got the weights without reading them;
#  (2) a bad init_from still ends every rank with exit 2 naming the key;
#  (3) --version lists NCCL with its version iff the build has NCCL, and the
#      tokenizer (PCRE2, json-c) iff it was built.
# usage: safety_init_from.sh GPT2_DDP WORK_DIR HAVE_NCCL NCCL_VERSION HAVE_TOKENIZER
set -euo pipefail
bin=$1 work=$2 have_nccl=$3 nccl_version=$4 have_tokenizer=$5
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
root=$PWD
bin=$(realpath "$bin")
run=("$root/configs/tiny.ini" max_steps=3 warmup_steps=1 eval_every=0 log_every=1
     train_data="$root/data/nlp-corpus/nlp_train_*.bin" out_dir="$work")

"$bin" "${run[@]}" max_steps=2 run_name=src >"$work/src.log" 2>&1 || fail "source run" "$work/src.log"
mkdir -p "$work/rank0" "$work/rank1"
cp "$work/src/model.h5" "$work/rank0/start.h5"

mpi_run -np 2 "$bin" "${run[@]}" init_from="$work/rank0/start.h5" run_name=ref >"$work/ref.log" 2>&1 \
  || fail "reference run" "$work/ref.log"
# Before rank 0 alone read it, rank 1 failed on its own and the job hung: the timeout.
set +e
timeout 120 mpirun --bind-to none -np 1 --wdir "$work/rank0" "$bin" "${run[@]}" init_from=start.h5 run_name=mpmd : \
       -np 1 --wdir "$work/rank1" "$bin" "${run[@]}" init_from=start.h5 run_name=mpmd >"$work/mpmd.log" 2>&1
rc=$?
set -e
[ $rc -eq 0 ] || fail "rank 1 cannot see init_from=start.h5 and must not need to: exit $rc" "$work/mpmd.log"
grep -q "initialised from start.h5" "$work/mpmd.log" || fail "no 'initialised from' line" "$work/mpmd.log"
/usr/bin/python3 tests/lib/ckpt_check.py same_weights "$work/ref/model.h5" "$work/mpmd/model.h5"
echo "init_from read by rank 0 only (rank 1's directory has no start.h5): same final weights"

set +e
mpi_run -np 2 "$bin" "${run[@]}" init_from="$work/nothing.h5" run_name=bad >"$work/bad.log" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "error: init_from = $work/nothing.h5" "$work/bad.log" \
  || fail "a missing init_from: exit $rc" "$work/bad.log"
echo "missing init_from: exit 2, $(grep -m1 error "$work/bad.log" | cut -c1-120)"

version=$("$bin" --version)
echo "$version"
if [ "$have_nccl" = ON ]; then
  grep -q "^NCCL: ${nccl_version%% *} " <<<"$version" || fail "--version lacks 'NCCL: ${nccl_version%% *}'"
else
  grep -q "^NCCL: not in this build" <<<"$version" || fail "--version should say NCCL is not built"
fi
if [ "$have_tokenizer" = ON ]; then
  grep -q "^tokenizer: GPT-2 BPE, PCRE2 [0-9.]*, json-c [0-9.]*" <<<"$version" || fail "--version lacks the tokenizer"
else
  grep -q "^tokenizer: not built" <<<"$version" || fail "--version should say the tokenizer is not built"
fi
echo "init_from and --version: OK"
