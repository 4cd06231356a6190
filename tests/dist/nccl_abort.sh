#!/usr/bin/env bash
# A GPU rank that dies or stops responding ends every rank, non-zero, within
# the timeout: (1) SIGKILL of one of 2 ranks mid-run (mpirun sees the death
# and ends the job); (2) SIGSTOP of one rank (no process dies: the other
# rank's NCCL watchdog finds its collective, or its wait outside NCCL,
# pending for nccl_timeout_s, says so, aborts NCCL and exits 1; mpirun then
# ends the stopped one); (3) the same with the copy engines' reduction, whose
# streams wait for each other's flags outside NCCL.
# usage: nccl_abort.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source tests/lib/nccl_lib.sh
need_gpus 2
rm -rf "$work"; mkdir -p "$work"
timeout_s=15

# start NAME [KEY=VALUE...]: 2 GPU ranks training "forever" in the background; sets launcher.
start() {
  local name=$1; shift
  mpirun --bind-to none -x NCCL_NVLS_ENABLE -np 2 "$bin" configs/tiny.ini device=cuda \
    max_steps=1000000 eval_every=0 log_every=1 nccl_timeout_s=$timeout_s out_dir="$work" \
    run_name="$name" "$@" >"$work/$name.log" 2>&1 &
  launcher=$!
  wait_for "grep -q '^step *20/' '$work/$name.log'" 180 || fail "$name: no training steps" "$work/$name.log"
}

# alive PID: the process exists and is not a zombie (a rank mpirun left to
# init to reap is gone in every sense that matters here).
alive() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }
any_alive() { local p; for p in "$@"; do alive "$p" && return 0; done; return 1; }

# finish NAME LIMIT_S T0 PIDS: every rank (PIDS) and the launcher must be gone
# within LIMIT_S seconds of the fault (T0), the launcher with a non-zero exit.
# A rank that was killed may take a moment to release its GPU after mpirun
# returns, so the ranks are polled up to the same limit.
finish() {
  local name=$1 limit=$2 t0=$3 pids=$4 rc=0 p
  timeout "$limit" tail --pid="$launcher" -f /dev/null || true
  wait "$launcher" || rc=$?
  local rest=$(( limit - ($(date +%s) - t0) ))
  wait_for "! any_alive $pids" $(( rest > 1 ? rest : 1 )) >/dev/null || true
  local elapsed=$(( $(date +%s) - t0 ))
  for p in $pids; do  # ours only, by pid: a leftover rank is a failure
    if alive "$p"; then kill -CONT "$p"; kill -9 "$p"; fail "$name: rank pid $p still running after ${elapsed}s" "$work/$name.log"; fi
  done
  echo "$name: launcher exit $rc, every rank ended ${elapsed}s after the fault (limit ${limit}s)"
  [ "$rc" -ne 0 ] || fail "$name: expected a non-zero exit" "$work/$name.log"
  [ "$elapsed" -le "$limit" ] || fail "$name: took longer than ${limit}s" "$work/$name.log"
}

start killed comm_transport=nccl
pids=$(rank_pids "$launcher" | tr "\n" " "); victim=${pids% }; victim=${victim##* }
t0=$(date +%s); kill -9 "$victim"
finish killed 60 "$t0" "$pids"

start stopped comm_transport=nccl
pids=$(rank_pids "$launcher" | tr "\n" " "); victim=${pids% }; victim=${victim##* }
t0=$(date +%s); kill -STOP "$victim"
finish stopped $((timeout_s + 45)) "$t0" "$pids"
grep -m1 "nccl_timeout_s = $timeout_s" "$work/stopped.log" \
  || fail "stopped: no watchdog message naming nccl_timeout_s" "$work/stopped.log"

start stopped_ce comm_transport=copy_engines
grep -q "by copy engines" "$work/stopped_ce.log" || fail "stopped_ce: not on the copy engines" "$work/stopped_ce.log"
pids=$(rank_pids "$launcher" | tr "\n" " "); victim=${pids% }; victim=${victim##* }
t0=$(date +%s); kill -STOP "$victim"
finish stopped_ce $((timeout_s + 45)) "$t0" "$pids"
grep -m1 "nccl_timeout_s = $timeout_s" "$work/stopped_ce.log" \
  || fail "stopped_ce: no watchdog message naming nccl_timeout_s" "$work/stopped_ce.log"
echo "nccl abort: OK"
