#!/usr/bin/env bash
# The memory pre-flight on the CPU backend (CPU ranks):
#   - 2 ranks on a node whose MemAvailable is taken as 800 MiB
#     (GPT2_TEST_MEM_AVAILABLE_MB), tiny at micro_batch 128: exit 2 on every
#     rank, one message naming micro_batch, the need and the available RAM
#     (0.78 GiB for 2 ranks: 0.39 GiB each) and the largest micro_batch that
#     fits, before the run directory exists; that micro_batch then passes
#     the same check and trains (exit 0): the advice holds;
#   - memory_preflight=false skips the check (the same run trains);
#   - this machine's real MemAvailable: 124M at micro_batch 512 (hundreds of
#     GiB in fp32) is refused within a peak RSS of 1 GiB, i.e. before the
#     model is allocated (skipped on a machine with more than 400 GiB free).
# usage: safety_preflight_cpu.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
run=(configs/tiny.ini device=cpu max_steps=1 warmup_steps=0 eval_every=0 log_every=1
     out_dir="$work")

echo "check: tiny, micro_batch 128, 2 ranks on 800 MiB -> exit 2 naming micro_batch and the RAM"
rc=0
GPT2_TEST_MEM_AVAILABLE_MB=800 mpi_run -np 2 -x GPT2_TEST_MEM_AVAILABLE_MB "$bin" "${run[@]}" \
  micro_batch=128 total_batch=16384 run_name=big >"$work/big.log" 2>&1 || rc=$?
grep 'memory pre-flight' "$work/big.log" || true
[ "$rc" -eq 2 ] || fail "exit code $rc, expected 2" "$work/big.log"
n=$(grep -c 'error: memory pre-flight: micro_batch = 128 needs about [0-9.]* GiB of RAM per rank (estimate [0-9.]* GiB + 0.25 GiB reserve .*), but the node of rank [01] has 0.78 GiB available (MemAvailable) for its 2 rank(s): 0.39 GiB each' "$work/big.log" || true)
[ "$n" -eq 1 ] || fail "$n matching messages, expected 1 (rank 0 alone)" "$work/big.log"
[ ! -e "$work/big" ] || fail "the run directory was created before the pre-flight" "$work/big.log"
mb=$(sed -n 's/.*The largest micro_batch that fits is \([0-9]*\) .*/\1/p' "$work/big.log")
[ -n "$mb" ] || fail "no micro_batch suggested" "$work/big.log"
echo "check: the suggested micro_batch = $mb passes the same check and trains"
GPT2_TEST_MEM_AVAILABLE_MB=800 mpi_run -np 2 -x GPT2_TEST_MEM_AVAILABLE_MB "$bin" "${run[@]}" \
  micro_batch="$mb" total_batch=16384 run_name=advised >"$work/advised.log" 2>&1 \
  || fail "micro_batch=$mb" "$work/advised.log"
grep 'memory pre-flight' "$work/advised.log"
grep -q "fits the 0.39 GiB of RAM available to each of the 2 rank(s)" "$work/advised.log" \
  || fail "no pre-flight line for the advised micro_batch" "$work/advised.log"

echo "check: memory_preflight=false skips it (micro_batch 128 on the same 800 MiB trains)"
GPT2_TEST_MEM_AVAILABLE_MB=800 mpi_run -np 2 -x GPT2_TEST_MEM_AVAILABLE_MB "$bin" "${run[@]}" \
  micro_batch=128 total_batch=16384 memory_preflight=false run_name=skipped >"$work/skipped.log" 2>&1 \
  || fail "memory_preflight=false" "$work/skipped.log"
! grep -q 'memory pre-flight' "$work/skipped.log" || fail "the check ran" "$work/skipped.log"
[ -s "$work/skipped/metrics.jsonl" ] || fail "no step logged" "$work/skipped.log"

avail_kib=$(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo)
if [ "$avail_kib" -gt $((400 * 1024 * 1024)) ]; then
  echo "skip: 124M at micro_batch 512 may fit this machine's $((avail_kib / 1048576)) GiB"
else
  echo "check: 124M at micro_batch 512 on this machine's MemAvailable -> exit 2 before allocating"
  rc=0
  /usr/bin/time -f 'peak RSS %M kB' -o "$work/124M.rss" "$bin" configs/124M.ini device=cpu \
    micro_batch=512 out_dir="$work" run_name=124M >"$work/124M.log" 2>&1 || rc=$?
  grep 'error:' "$work/124M.log" || true
  [ "$rc" -eq 2 ] || fail "exit code $rc, expected 2" "$work/124M.log"
  grep -q 'micro_batch = 512 needs about [0-9.]* GiB of RAM per rank .* GiB available (MemAvailable) for its 1 rank(s)' "$work/124M.log" \
    || fail "the message does not name micro_batch and the available RAM" "$work/124M.log"
  rss=$(sed -n 's/peak RSS \([0-9]*\) kB/\1/p' "$work/124M.rss")
  echo "peak RSS of the refused run: $rss kB"
  [ "$rss" -lt 1048576 ] || fail "peak RSS $rss kB: it allocated before refusing" "$work/124M.log"
fi
echo "safety_preflight_cpu: OK"
