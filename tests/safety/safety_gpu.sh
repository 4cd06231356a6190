#!/usr/bin/env bash
# Run safety on GPUs (label gpu; exit 77 without a GPU or a CUDA build):
#   preflight  124M at micro_batch 512 (an estimate no GPU has room for):
#              exit 2 before anything is allocated, naming the need, the
#              free memory and the largest micro_batch that fits; that
#              micro_batch then runs 2 steps (exit 0): the advice holds.
#              On a GPU with FP8 (compute capability 8.9+), 124M with fp8=1
#              at micro_batch 32: the measured peak lies between the
#              estimate and the estimate + 2 GiB (the CUDA context, cuBLAS
#              workspaces), so the estimate lays the FP8 model out as it is.
#   nonfinite  the non-finite guard on the CUDA backend (1 GPU, and 2 GPUs
#              with NCCL when there are 2): GPT2_TEST_NAN_STEP=3 -> step 3
#              logged as skipped and its checkpoint holds step 2's tensors
#              bit for bit; NaN from step 3 on with max_bad_steps=3 -> exit
#              4, latest -> step 4 (step 2's tensors), nothing after it.
#   preempt    this machine's mpirun: SIGUSR1 to launch/local.sh -> exit 3,
#              a complete checkpoint, and resume=auto continues (exit 0);
#              then SIGUSR1 to mpirun itself, recorded (forwarded or not),
#              and the STOP file, which must end the run with exit 3.
# usage: safety_gpu.sh preflight|nonfinite|preempt GPT2_DDP WORK_DIR
set -euo pipefail
mode=$1 bin=$(realpath "$2") work=$3
cd "$(dirname "$0")/../.."
source tests/lib/nccl_lib.sh
need_gpus 1
[[ "$("$bin" --version)" == *"cuda ("* ]] || { echo "SKIP: $bin has no CUDA backend"; exit 77; }
fresh_dir "$work"
check() { py tests/safety/safety_check.py "$@"; }

preflight() {
  local args=(configs/124M.ini device=cuda max_steps=2 warmup_steps=1 eval_every=0 log_every=1
              checkpoint_every=0 out_dir="$work")
  set +e
  "$bin" "${args[@]}" micro_batch=512 run_name=big >"$work/big.log" 2>&1
  local rc=$?
  set -e
  grep "memory pre-flight" "$work/big.log" || true
  [ $rc -eq 2 ] || fail "micro_batch=512: exit $rc, expected 2" "$work/big.log"
  grep -q "error: memory pre-flight: micro_batch = 512 needs about [0-9.]* GiB per GPU (estimate .*), but the GPU of rank 0 has [0-9.]* GiB free" "$work/big.log" \
    || fail "the refusal does not name both numbers" "$work/big.log"
  ! grep -q "cudaMalloc" "$work/big.log" || fail "a cudaMalloc failed: the pre-flight came too late" "$work/big.log"
  local mb
  mb=$(sed -n 's/.*The largest micro_batch that fits is \([0-9]*\) .*/\1/p' "$work/big.log")
  [ -n "$mb" ] || fail "no micro_batch suggested" "$work/big.log"
  "$bin" "${args[@]}" micro_batch="$mb" run_name=advised >"$work/advised.log" 2>&1 \
    || fail "the advised micro_batch=$mb does not run" "$work/advised.log"
  grep -E "^memory pre-flight|^peak GPU memory|^step" "$work/advised.log"
  set +e
  "$bin" "${args[@]}" micro_batch=256 run_name=issue >"$work/issue.log" 2>&1
  rc=$?
  set -e
  echo "the issue's case, 124M at micro_batch 256 on this GPU: exit $rc: $(grep -m1 -o 'memory pre-flight: .*GiB free' "$work/issue.log" || true)"
  [ $rc -eq 0 ] || [ $rc -eq 2 ] || fail "micro_batch=256: exit $rc (a failure after the pre-flight)" "$work/issue.log"
  echo "pre-flight: refused micro_batch 512 with exit 2, micro_batch $mb runs"
  local cc
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
  if [ "${cc:-0}" -ge 89 ]; then
    "$bin" "${args[@]}" micro_batch=32 fp8=1 run_name=fp8 >"$work/fp8.log" 2>&1 \
      || fail "124M with fp8=1 at micro_batch 32 does not run" "$work/fp8.log"
    local line
    line=$(grep "^peak GPU memory" "$work/fp8.log") || fail "no peak memory line" "$work/fp8.log"
    echo "fp8: $line"
    # "peak GPU memory: P GiB on rank 0, ... (estimate E GiB; ...)"
    echo "$line" | awk '{ p = $4; for (i = 1; i < NF; i++) if ($i == "(estimate") e = $(i + 1)
                          exit !(p >= e && p <= e + 2.0) }' \
      || fail "fp8: the peak is not within [estimate, estimate + 2 GiB]" "$work/fp8.log"
  else
    echo "(compute capability $cc: the FP8 estimate not checked)"
  fi
}

nonfinite_at() { # ranks
  local np=$1 run=(configs/tiny.ini device=cuda max_steps=6 warmup_steps=1 eval_every=0 log_every=2
                   checkpoint_every=1 keep_last=0 out_dir="$work")
  GPT2_TEST_NAN_STEP=3 gpu_run -x GPT2_TEST_NAN_STEP -np "$np" "$bin" "${run[@]}" run_name=nan$np \
    >"$work/nan$np.log" 2>&1 || fail "np=$np, NaN at step 3" "$work/nan$np.log"
  grep skipped "$work/nan$np.log"
  check skip_logged "$work/nan$np" 3
  check same_tensors "$work/nan$np/step_00000002" "$work/nan$np/step_00000003"
  set +e
  GPT2_TEST_NAN_STEP=3-100 gpu_run -x GPT2_TEST_NAN_STEP -np "$np" "$bin" "${run[@]}" max_steps=20 \
    checkpoint_every=2 max_bad_steps=3 run_name=giveup$np >"$work/giveup$np.log" 2>&1
  local rc=$?
  set -e
  [ $rc -eq 4 ] || fail "np=$np, NaN from step 3: exit $rc, expected 4" "$work/giveup$np.log"
  grep "error:" "$work/giveup$np.log"
  [ "$(readlink "$work/giveup$np/latest")" = step_00000004 ] || fail "latest is not step 4" "$work/giveup$np.log"
  [ ! -e "$work/giveup$np/step_00000006" ] && [ ! -e "$work/giveup$np/model.h5" ] || fail "saved after giving up"
  check same_tensors "$work/giveup$np/step_00000002" "$work/giveup$np/step_00000004"
  echo "non-finite guard on $np GPU(s): OK"
}

nonfinite() {
  nonfinite_at 1
  if [ "$(gpus_visible)" -ge 2 ]; then nonfinite_at 2; else echo "(one GPU: the 2-GPU NCCL case not run)"; fi
}

preempt() {
  local run=(configs/tiny.ini max_steps=100000 warmup_steps=2 eval_every=0 log_every=1 out_dir="$work")
  echo "mpirun: $(mpirun --version 2>&1 | head -1)"
  launch/local.sh "${run[@]}" run_name=script >"$work/script.log" 2>&1 &
  local script=$!
  wait_for "grep -q '^step     3/' '$work/script.log'"
  kill -USR1 $script
  set +e; wait $script; local rc=$?; set -e
  [ $rc -eq 3 ] || fail "SIGUSR1 to launch/local.sh: exit $rc, expected 3" "$work/script.log"
  grep -E "^launch:|^stopped by" "$work/script.log"
  local latest; latest=$(readlink "$work/script/latest")
  [ -f "$work/script/$latest/COMPLETE" ] || fail "latest -> $latest is not complete" "$work/script.log"
  local k=${latest#step_}; k=$((10#$k))
  launch/local.sh "${run[@]}" max_steps=$((k + 2)) allow_changed=max_steps run_name=script >"$work/resume.log" 2>&1 \
    || fail "resume after the pre-emption" "$work/resume.log"
  grep "^resumed from" "$work/resume.log"
  echo "SIGUSR1 to launch/local.sh: exit 3 after step $k, resumed to step $((k + 2))"

  mpirun --allow-run-as-root --bind-to none -np 1 "$bin" "${run[@]}" device=cuda run_name=direct \
    >"$work/direct.log" 2>&1 &
  local launcher=$!
  wait_for "grep -q '^step     3/' '$work/direct.log'"
  kill -USR1 $launcher
  local forwarded=no
  for _ in $(seq 150); do kill -0 $launcher 2>/dev/null || { forwarded=yes; break; }; sleep 0.1; done
  if [ $forwarded = no ]; then
    echo "SIGUSR1 to mpirun itself: not forwarded within 15 s (the rank runs on); touching STOP"
    touch "$work/direct/STOP"
  fi
  set +e; wait $launcher; rc=$?; set -e
  grep -E "^stopped by" "$work/direct.log" || true
  [ $rc -eq 3 ] || fail "SIGUSR1 to mpirun (forwarded: $forwarded), then STOP: exit $rc, expected 3" "$work/direct.log"
  echo "SIGUSR1 to mpirun itself: forwarded=$forwarded; exit 3"
}

"$mode"
