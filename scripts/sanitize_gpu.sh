#!/usr/bin/env bash
# compute-sanitizer over a few training steps of the trainer on the GPU: the
# tiny model widened to 128 (2 layers, two 64-wide heads, so that the MLP's
# products fall on our wgmma GEMM's 128-wide tiles in both directions) at
# T = 128 (two attention tiles, so the causal and the off-diagonal paths both
# run), gradient accumulation 2, and one evaluation, so that every kernel of
# the CUDA backend runs: encoder, LayerNorms, the GEMMs (cuBLASLt's with
# their epilogues, and on H100/H200 ours for the GELU products), flash
# attention forward and backward, classifier, norm, AdamW.
#
# Every reported error is attributed to the kernel it names: ours, or
# cuBLASLt's own GEMM kernels (nvjet_*, cutlass*, *gemm*), which we do not
# build. racecheck reports shared-memory hazards inside cuBLASLt's Hopper
# kernels, whose producer/consumer pipelines synchronise through TMA and
# mbarriers that racecheck does not model; they are listed, not counted as
# ours. (Our own kernels' names avoid those words: matmul_wgmma.cu's GEMM
# is wgmma_linear_kernel.) The script fails (exit 1) on any error in our
# kernels, on an error it cannot attribute, or on a tool that did not
# finish.
# SANITIZE_ARGS adds trainer keys (e.g. "fp8=1": the FP8 casts, the fused
# LayerNorm and GELU passes and the FP8 products instead of the bf16 ones).
# usage: [SANITIZE_TIMEOUT=400] [SANITIZE_ARGS="k=v ..."] scripts/sanitize_gpu.sh [BUILD_DIR] [TOOL ...]
#        (default tools: memcheck racecheck; exit 124 in the table: a tool ran out of time)
set -uo pipefail
build=${1:-build}; shift || true
tools=${*:-memcheck racecheck}
cd "$(dirname "$0")/.."
out=$(mktemp -d)
vendor='nvjet_|cutlass|gemm|cublas'
declare -A verdict
status=0
for tool in $tools; do
  log=$out/$tool.log
  start=$(date +%s)
  timeout "${SANITIZE_TIMEOUT:-400}" compute-sanitizer --tool "$tool" --print-limit 100000 \
    "$build/gpt2_ddp" configs/tiny.ini device=cuda n_embd=128 n_head=2 micro_batch=4 seq_len=128 \
    total_batch=1024 max_steps=2 warmup_steps=1 eval_every=2 eval_batches=1 log_every=1 \
    checkpoint_every=0 resume=none out_dir="$out" run_name="$tool" ${SANITIZE_ARGS:-} >"$log" 2>&1
  rc=$?
  # memcheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)"
  summary=$(grep -E "(ERROR|RACECHECK) SUMMARY" "$log" | tail -1 | sed -E 's/^=+ //')
  steps=$(grep -c '^step ' "$log")
  # the kernel of each report: "... at KERNEL+0xOFFSET" or "... in KERNEL"
  kernels=$(grep -E '^=+ (Invalid|Error|Warning|Race)' "$log" |
            sed -nE 's/.* (at|in) ([A-Za-z_][A-Za-z0-9_:<>]*)(\+0x[0-9a-f]+)?.*/\2/p')
  n_all=$(grep -cE '^=+ (Invalid|Error: Race|Warning: Race|Race)' "$log")
  n_vendor=$(grep -cE "$vendor" <<<"$kernels")
  n_ours=$(( n_all - n_vendor ))
  echo "== $tool: sanitizer exit $rc, $steps training steps logged, $(( $(date +%s) - start )) s: ${summary:-no summary}"
  [ -n "$kernels" ] && sort <<<"$kernels" | uniq -c | sed 's/^/   reports in /'
  if [ "$n_ours" -gt 0 ] || [ "$steps" -lt 2 ] || { [ "$rc" -ne 0 ] && [ "$n_all" -eq 0 ]; }; then
    status=1
    grep -E '^=+ ' "$log" | grep -vE "$vendor" | head -40
    tail -5 "$log"
  fi
  trained=""; [ "$steps" -ge 2 ] || trained=" | FAILED: $steps training steps (the run ended early; its log is above)"
  verdict[$tool]="$n_ours in our kernels, $n_vendor in cuBLASLt's | ${summary:-no summary (exit $rc)}$trained"
done
echo
printf "%-10s %s\n" tool "reports"
for tool in $tools; do printf "%-10s %s\n" "$tool" "${verdict[$tool]}"; done
exit $status
