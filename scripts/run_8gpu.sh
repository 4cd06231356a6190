#!/usr/bin/env bash
# The 8-GPU run (one node of 8 GPUs), as parts that fit a device call each:
#   readme   `mpirun -np 8 build/gpt2_ddp configs/124M.ini` as the README
#            says (max_steps etc. shortened): trains, checkpoints, is stopped
#            by SIGTERM to its ranks (exit 3) and resumes to its last step
#   ckpt     tests/dist/nccl_ckpt.sh: with 8 GPUs visible it also resumes an
#            8-GPU checkpoint on 4
#   scaling  bench/bench_scaling.sh at 1 2 4 8 GPUs, ours and PyTorch DDP
#   big      1558M, ZeRO-1, on every GPU: tokens/s, MFU, peak memory per GPU
#            against the dry-run estimate
# Prints a summary last. NP, DEVICE and CONFIG let the readme part run
# anywhere (NP=2 DEVICE=cpu CONFIG=configs/tiny.ini checks the script itself).
# usage: scripts/run_8gpu.sh BUILD_DIR
#   env: PARTS="readme ckpt scaling big" NP=8 DEVICE=cuda CONFIG=configs/124M.ini
#        OUT=<logs dir> (default BUILD_DIR.8gpu)
set -uo pipefail
build=$(realpath "${1:-build}")
cd "$(dirname "$0")/.."
source tests/lib/mpi_env.sh
source tests/lib/ckpt_lib.sh
export NCCL_NVLS_ENABLE=0
parts=${PARTS:-readme ckpt scaling big} np=${NP:-8} device=${DEVICE:-cuda} cfg=${CONFIG:-configs/124M.ini}
out=${OUT:-$build.8gpu}; mkdir -p "$out"
summary=$out/summary.txt; : >"$summary"
has() { [[ " $parts " == *" $1 "* ]]; }
note() { echo "$*" | tee -a "$summary"; }
launch() { mpirun --bind-to none -x NCCL_NVLS_ENABLE -np "$np" "$build/gpt2_ddp" "$cfg" "$@"; }

if has readme; then
  work=$out/readme; rm -rf "$work"; mkdir -p "$work"
  args=(device="$device" max_steps=60 warmup_steps=10 checkpoint_every=20 eval_every=30
        out_dir="$work" run_name=run)
  # mpirun itself, not through launch (a function would run in a subshell
  # and $! would not be mpirun's pid).
  mpirun --bind-to none -x NCCL_NVLS_ENABLE -np "$np" "$build/gpt2_ddp" "$cfg" "${args[@]}" \
    >"$work/first.log" 2>&1 &
  pid=$!
  if wait_for "grep -q '^step *30/' '$work/first.log'" 600; then
    # SIGTERM to every rank, as Slurm does at pre-emption (a SIGTERM to
    # mpirun itself ends mpirun and leaves the ranks running).
    kill -TERM $(rank_pids "$pid")
    wait "$pid"; rc=$?
  else
    kill -KILL "$pid"; wait "$pid"; rc=timeout
  fi
  stopped=$(sed -nE 's/^stopped by a pre-emption signal .* after step ([0-9]+).*/\1/p' "$work/first.log")
  launch "${args[@]}" >"$work/resumed.log" 2>&1; rc2=$?
  from=$(grep -m1 "^resumed from" "$work/resumed.log")
  last=$(grep -E "^step +60/60" "$work/resumed.log" | head -1)
  ok=FAIL; [ "$rc" = 3 ] && [ -n "$stopped" ] && [ "$rc2" = 0 ] && [ -n "$from" ] && [ -n "$last" ] && ok=OK
  note "readme run ($np ranks, $device, $cfg): $ok: SIGTERM -> exit $rc after step ${stopped:-?}; ${from:-no resume line}; then exit $rc2"
  note "  ${last:-no step 60 line}"
  grep -m1 -A$((np)) "^GPU map" "$work/first.log" | tee -a "$summary"
  ls "$work/run" | tr '\n' ' ' | sed 's/^/  run dir: /' | tee -a "$summary"; echo | tee -a "$summary"
fi

if has ckpt; then
  (cd "$build" && ctest -R '^nccl_ckpt$' -V) 2>&1 | sed -E 's/^[0-9]+: //' >"$out/ckpt.log"
  grep -E "^losses of steps|^resumed from|nccl checkpoints|Test +#" "$out/ckpt.log" | tee -a "$summary"
fi

if has scaling; then
  RESULTS=$out/results.txt REPORT=0 GPUS="1 2 4 $np" PARTS="ours torch" \
    bench/bench_scaling.sh "$build" >"$out/scaling.log" 2>&1
  python3 bench/scaling_report.py report "$out/results.txt" | tee -a "$summary"
fi

if has big; then
  work=$out/big; rm -rf "$work"; mkdir -p "$work"
  launch configs/1558M.ini device="$device" max_steps=12 warmup_steps=2 eval_every=0 log_every=1 \
    checkpoint_every=0 zero_stage=1 out_dir="$work" run_name=big >"$work.log" 2>&1 \
    || note "1558M run FAILED (see $work.log)"
  python3 - "$work/big/metrics.jsonl" "$work.log" "$np" <<'PY' | tee -a "$summary"
import json, re, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if r.get("type") == "step"][3:]
log = open(sys.argv[2]).read()
m = re.search(r"peak GPU memory: ([0-9.]+) GiB on rank 0, ([0-9.]+) GiB the most on any rank \(estimate ([0-9.]+) GiB", log)
mem = f"peak memory {m.group(2)} GiB per GPU (most of any rank), estimate {m.group(3)} GiB" if m else "no memory line"
print(f"1558M ZeRO-1 on {sys.argv[3]} GPUs: {statistics.median(r['tokens_per_s'] for r in rows):.0f} tok/s, "
      f"MFU {100 * statistics.median(r['mfu'] for r in rows):.1f}% per GPU (median of {len(rows)} steps); {mem}")
PY
fi
echo; echo "================ summary ================"; cat "$summary"
