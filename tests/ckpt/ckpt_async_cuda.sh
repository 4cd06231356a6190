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
#      the run says its saves wait for the disk, and they do;
#  (3) with fp8=1 (where the GPU has FP8 tensor cores): (1) again, killed
#      once step 250's background save is published; the resumed run's
#      losses equal the uninterrupted one's bit for bit, which needs the
#      FP8 scaling state (scales, amax histories) saved and restored.
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

cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
if [ "${cc:-0}" -ge 89 ]; then
  f8=("${run[@]}" fp8=1 max_steps=1000 checkpoint_every=250)
  mpi_run -np 1 "$bin" "${f8[@]}" checkpoint_async=false run_name=fp8_ref >"$work/fp8_ref.log" 2>&1 \
    || fail "fp8 reference run" "$work/fp8_ref.log"
  mpirun --bind-to none -np 1 "$bin" "${f8[@]}" run_name=fp8_killed >"$work/fp8_killed.log" 2>&1 &
  launcher=$!
  wait_for 'grep -qs "^checkpoint: step 250 saved" "$work/fp8_killed.log"'
  kill -KILL $(rank_pids $launcher) 2>/dev/null || true
  set +e; wait $launcher; set -e
  grep -q "^step  1000/1000" "$work/fp8_killed.log" && fail "fp8: finished before the kill" "$work/fp8_killed.log"
  mpi_run -np 1 "$bin" "${f8[@]}" run_name=fp8_killed >"$work/fp8_resume.log" 2>&1 \
    || fail "fp8 resume" "$work/fp8_resume.log"
  k=$(grep -o "^resumed from $work/fp8_killed/step_0*[0-9]*" "$work/fp8_resume.log" | sed 's/.*step_0*//') \
    || fail "fp8: not resumed" "$work/fp8_resume.log"
  grep -q "no FP8 scaling state" "$work/fp8_resume.log" && fail "fp8: the state was not found" "$work/fp8_resume.log"
  check losses "$work/fp8_ref" "$work/fp8_killed" $((k + 1)) 1000 0
  echo "fp8: resumed at step $k, losses bit for bit the uninterrupted run's"
else
  echo "fp8 case skipped: compute capability ${cc:-unknown} has no FP8 tensor cores"
fi
echo "checkpoint_async on the GPU: OK"
