#!/usr/bin/env bash
# Background checkpoint saves on the GPU (one rank, device=cuda, tiny
# config; deterministic attention, and GEMM algorithms from cuBLASLt's
# heuristic rather than timed (matmul_autotune=false: timing may pick
# others in another process), so that two runs can be compared bit for bit;
# label gpu, exit 77 without a GPU):
#  (1) checkpoint_async=auto saves in the background (pinned snapshot
#      buffers); killed (SIGKILL) once step 500's save was published, the same
#      command resumes and its losses and final weights equal those of a
#      run whose saves waited (checkpoint_async=false);
#  (2) auto where the buffers do not fit (GPT2_TEST_SNAPSHOT_MEM_MB=10):
#      the run says its saves wait for the disk, and they do.
# usage: ckpt_async_cuda.sh GPT2_DDP GPT2_CONVERT WORK_DIR
set -euo pipefail
bin=$1 convert=$2 work=$3
source "$(dirname "$0")/../lib/ckpt_lib.sh"
nvidia-smi -L >/dev/null 2>&1 || { echo "no GPU: skipped"; exit 77; }
fresh_dir "$work"
# Steps of the tiny model take milliseconds on a GPU: the run is long enough
# for the kill to land in its middle.
run=(configs/tiny.ini device=cuda attention_deterministic=true matmul_autotune=false max_steps=3000 warmup_steps=2
     eval_every=0 log_every=1 checkpoint_every=500 out_dir="$work")
check() { /usr/bin/env python3 tests/lib/ckpt_check.py "$@"; }

mpi_run -np 1 "$bin" "${run[@]}" checkpoint_async=false run_name=ref >"$work/ref.log" 2>&1 \
  || fail "reference run" "$work/ref.log"
mpirun --bind-to none -np 1 "$bin" "${run[@]}" run_name=killed >"$work/killed.log" 2>&1 &
launcher=$!
wait_for 'grep -qs "^checkpoint: step 500 saved" "$work/killed.log"'
kill -KILL $(rank_pids $launcher) 2>/dev/null || true
set +e; wait $launcher; set -e
grep -q "^step  3000/3000" "$work/killed.log" && fail "finished before the kill" "$work/killed.log"
grep "^checkpoint: saves written in the background" "$work/killed.log" || fail "auto: not in the background" "$work/killed.log"
grep "^checkpoint: step [0-9]* saved" "$work/killed.log"
mpi_run -np 1 "$bin" "${run[@]}" run_name=killed >"$work/resume.log" 2>&1 || fail "resume" "$work/resume.log"
k=$(grep -o "^resumed from $work/killed/step_0*[0-9]*" "$work/resume.log" | sed 's/.*step_0*//') \
  || fail "not resumed" "$work/resume.log"
check losses "$work/ref" "$work/killed" $((k + 1)) 3000 0
# The final weights (the fp32 master) through gpt2_convert as llm.c files,
# compared byte for byte (the GPU machine's python3 has no h5py).
for r in ref killed; do
  "$convert" "$work/$r/step_00003000" "$work/$r.bin" >/dev/null || fail "gpt2_convert $r"
done
cmp "$work/ref.bin" "$work/killed.bin" || fail "the final weights differ from the reference's"
echo "final weights (fp32 master): byte for byte the reference's"

GPT2_TEST_SNAPSHOT_MEM_MB=10 mpi_run -np 1 "$bin" "${run[@]}" max_steps=4 checkpoint_every=4 run_name=small >"$work/small.log" 2>&1 \
  || fail "auto with too little RAM" "$work/small.log"
grep "^checkpoint: saves wait for the disk: background saves need" "$work/small.log" \
  && grep -q "^checkpoint: step 4 saved to .*, [0-9.]* s; written in" "$work/small.log" \
  || fail "auto with too little RAM: no note, or the save did not wait" "$work/small.log"
echo "checkpoint_async on the GPU: OK"
