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

# kill_and_resume NAME KILL_STEP LAST_STEP ARGS...: a reference run
# NAME_ref whose saves wait, and run NAME killed (SIGKILL) once step
# KILL_STEP's background save is published and then resumed; the resumed
# steps' losses must equal the reference's bit for bit. Sets k, the step
# resumed from.
kill_and_resume() {
  local name=$1 at=$2 last=$3; shift 3
  mpi_run -np 1 "$bin" "$@" checkpoint_async=false run_name=${name}_ref >"$work/${name}_ref.log" 2>&1 \
    || fail "$name: reference run" "$work/${name}_ref.log"
  mpirun --bind-to none -np 1 "$bin" "$@" run_name=$name >"$work/$name.log" 2>&1 &
  local launcher=$!
  wait_for "grep -qs '^checkpoint: step $at saved' '$work/$name.log'"
  kill -KILL $(rank_pids $launcher) 2>/dev/null || true
  set +e; wait $launcher; set -e
  grep -q "^step *$last/$last" "$work/$name.log" && fail "$name: finished before the kill" "$work/$name.log"
  grep "^checkpoint: saves written in the background" "$work/$name.log" \
    || fail "$name: auto, not in the background" "$work/$name.log"
  grep "^checkpoint: step [0-9]* saved" "$work/$name.log"
  mpi_run -np 1 "$bin" "$@" run_name=$name >"$work/${name}_resume.log" 2>&1 \
    || fail "$name: resume" "$work/${name}_resume.log"
  k=$(grep -o "^resumed from $work/$name/step_0*[0-9]*" "$work/${name}_resume.log" | sed 's/.*step_0*//') \
    || fail "$name: not resumed" "$work/${name}_resume.log"
  check losses "$work/${name}_ref" "$work/$name" $((k + 1)) "$last" 0
}

kill_and_resume killed 500 3000 "${run[@]}"
# The final weights (the fp32 master) through gpt2_convert as llm.c files,
# compared byte for byte (the GPU machine's python3 has no h5py).
for r in killed_ref killed; do
  "$convert" "$work/$r/step_00003000" "$work/$r.bin" >/dev/null || fail "gpt2_convert $r"
done
cmp "$work/killed_ref.bin" "$work/killed.bin" || fail "the final weights differ from the reference's"
echo "final weights (fp32 master): byte for byte the reference's"

GPT2_TEST_SNAPSHOT_MEM_MB=10 mpi_run -np 1 "$bin" "${run[@]}" max_steps=4 checkpoint_every=4 run_name=small >"$work/small.log" 2>&1 \
  || fail "auto with too little RAM" "$work/small.log"
grep "^checkpoint: saves wait for the disk: background saves need" "$work/small.log" \
  && grep -q "^checkpoint: step 4 saved to .*, [0-9.]* s; written in" "$work/small.log" \
  || fail "auto with too little RAM: no note, or the save did not wait" "$work/small.log"

cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
if [ "${cc:-0}" -ge 89 ]; then
  kill_and_resume fp8 250 1000 "${run[@]}" fp8=1 max_steps=1000 checkpoint_every=250
  grep -q "no FP8 scaling state" "$work/fp8_resume.log" && fail "fp8: the state was not found" "$work/fp8_resume.log"
  echo "fp8: resumed at step $k, losses bit for bit the uninterrupted run's"
else
  echo "fp8 case skipped: compute capability ${cc:-unknown} has no FP8 tensor cores"
fi
echo "checkpoint_async on the GPU: OK"
