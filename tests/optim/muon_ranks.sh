#!/usr/bin/env bash
# Muon on CPU ranks (tiny config, optimizer=muon, global batch 1536 tokens,
# micro-batch 2: grad_accum 12, 6 and 4 at 1, 2 and 3 ranks):
#  (1) 12 steps on 1, 2 and 3 ranks give the same losses within 1e-5
#      relative (each matrix is orthogonalised whole on the rank that owns
#      it; the sums of gradients run in another order at another rank
#      count: tests/dist/ddp_compare.py says why they differ at all);
#  (2) the 2-rank run again, every rank SIGKILLed once step 9 is logged:
#      resume=auto continues from its step-8 checkpoint, and steps 9..12 and
#      the final checkpoint (master, Muon's momentum, AdamW's m and v of
#      every shard) equal the uninterrupted run's bit for bit;
#  (3) that step-8 checkpoint resumed at 3 ranks and at 1: the momentum
#      reshards to the new owners of each matrix (losses within 1e-5).
# usage: muon_ranks.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
run=(configs/tiny.ini optimizer=muon micro_batch=2 total_batch=1536 max_steps=12 warmup_steps=2
     eval_every=0 log_every=1 checkpoint_every=4 checkpoint_async=false out_dir="$work")

for np in 1 2 3; do
  mpi_run -np "$np" "$bin" "${run[@]}" run_name=np$np >"$work/np$np.log" 2>&1 \
    || fail "$np-rank run" "$work/np$np.log"
done
grep -q "^optimizer: muon for the blocks' 2-D weights" "$work/np2.log" \
  || fail "the run does not say it uses Muon" "$work/np2.log"
/usr/bin/python3 tests/lib/ckpt_check.py losses "$work/np1" "$work/np2" 1 12 1e-5
/usr/bin/python3 tests/lib/ckpt_check.py losses "$work/np1" "$work/np3" 1 12 1e-5

mpirun --bind-to none -np 2 "$bin" "${run[@]}" run_name=killed >"$work/killed.log" 2>&1 &
launcher=$!
wait_for 'grep -q "^step     9/" "$work/killed.log"'
kill -KILL $(rank_pids $launcher)
set +e; wait $launcher; set -e
[ -f "$work/killed/step_00000008/COMPLETE" ] || fail "no step-8 checkpoint before the kill" "$work/killed.log"
[ ! -d "$work/killed/step_00000012" ] || fail "the killed run finished before the kill" "$work/killed.log"
mpi_run -np 2 "$bin" "${run[@]}" run_name=killed >"$work/resume.log" 2>&1 || fail "resume" "$work/resume.log"
grep "^resumed from" "$work/resume.log"
/usr/bin/python3 tests/lib/ckpt_check.py losses "$work/np2" "$work/killed" 9 12 0
/usr/bin/python3 tests/lib/ckpt_check.py state "$work/np2/step_00000012" "$work/killed/step_00000012"

for np in 3 1; do
  mpi_run -np "$np" "$bin" "${run[@]}" resume="$work/np2/step_00000008" run_name=from2_np$np \
    >"$work/from2_np$np.log" 2>&1 || fail "resume at $np ranks" "$work/from2_np$np.log"
  grep "^resumed from" "$work/from2_np$np.log"
  /usr/bin/python3 tests/lib/ckpt_check.py losses "$work/np2" "$work/from2_np$np" 9 12 1e-5
done
echo "muon ranks: OK"
