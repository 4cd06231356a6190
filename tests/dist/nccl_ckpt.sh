#!/usr/bin/env bash
# Checkpoints across GPU counts and backends: the tiny config (global batch
# 2048 tokens, micro-batch 4) runs 8 steps on 4 GPUs, saving at step 4; that
# checkpoint resumes on 2 GPUs, on 1 GPU and on 2 CPU ranks (fp32). A CPU
# checkpoint (2 ranks) resumes on the GPUs; with 8 GPUs, an 8-GPU checkpoint
# resumes on 4. Steps 5..8 of every resumed run
# must follow the run that wrote the checkpoint: within RTOL_GPU when both
# are bf16 GPU runs (only the summation order differs), within RTOL_BACKEND
# across backends (bf16 against fp32 arithmetic). usage: nccl_ckpt.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source tests/lib/nccl_lib.sh
need_gpus 4
# Measured on 4x H200: 2e-6..3e-6 between GPU counts, 7e-5..8e-5 across backends.
RTOL_GPU=1e-4 RTOL_BACKEND=1e-3
rm -rf "$work"; mkdir -p "$work"
run=(configs/tiny.ini micro_batch=4 total_batch=2048 max_steps=8 warmup_steps=2 eval_every=0
     log_every=1 checkpoint_every=4 out_dir="$work")
go() {  # go NAME NP ARGS...
  local name=$1 np=$2; shift 2
  gpu_run -np "$np" "$bin" "${run[@]}" run_name="$name" "$@" >"$work/$name.log" 2>&1 \
    || fail "$name" "$work/$name.log"
}
check() {  # check REF RUN RTOL WORLD_WRITTEN WORLD_NOW
  grep "^resumed from" "$work/$2.log"
  py tests/lib/ckpt_check.py losses "$work/$1" "$work/$2" 5 8 "$3"
  grep -q "^world $4$" "$work/$1/step_00000004/COMPLETE" && grep -q "^world $5$" "$work/$2/step_00000008/COMPLETE" \
    || fail "expected a $4-rank checkpoint resumed into a $5-rank one"
}

go g4 4 device=cuda
go g4_to_g2 2 device=cuda resume="$work/g4/step_00000004"; check g4 g4_to_g2 "$RTOL_GPU" 4 2
go g4_to_g1 1 device=cuda resume="$work/g4/step_00000004"; check g4 g4_to_g1 "$RTOL_GPU" 4 1
go g4_to_cpu 2 device=cpu resume="$work/g4/step_00000004"; check g4 g4_to_cpu "$RTOL_BACKEND" 4 2
go c2 2 device=cpu
go c2_to_g4 4 device=cuda resume="$work/c2/step_00000004"; check c2 c2_to_g4 "$RTOL_BACKEND" 2 4
go c2_to_g2z0 2 device=cuda zero_stage=0 resume="$work/c2/step_00000004"; check c2 c2_to_g2z0 "$RTOL_BACKEND" 2 2
if [ "$(gpus_visible)" -ge 8 ]; then  # an 8-GPU node: its checkpoint on half of it
  go g8 8 device=cuda
  go g8_to_g4 4 device=cuda resume="$work/g8/step_00000004"; check g8 g8_to_g4 "$RTOL_GPU" 8 4
fi
echo "nccl checkpoints: OK"
