#!/usr/bin/env bash
# A rank of a CPU run that stops answering ends the job (mpi_timeout_s, the
# watched wait of src/dist/mpi_watch.c): SIGSTOP of rank 1, then of rank 0,
# in the middle of a 2-rank run. Each time the job exits non-zero within a
# bounded time, with one message from the other rank naming the stopped one
# and its host; the stopped process is gone; and the checkpoints written
# before are intact: the run resumes from the newest and takes a step.
# usage: mpi_stall.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
cd "$(dirname "$0")/../.."
source tests/lib/mpi_env.sh
rm -rf "$work"; mkdir -p "$work"
timeout_s=5 limit=30
host=$(hostname)
args=(configs/tiny.ini device=cpu micro_batch=4 total_batch=512 warmup_steps=1 eval_every=0
      log_every=1 checkpoint_every=2 mpi_timeout_s="$timeout_s" out_dir="$work/out")

fail() { echo "FAIL: $1"; [ -z "${2:-}" ] || tail -30 "$2"; exit 1; }

# This test's processes: their command lines name its work directory.
ours() { pgrep -f -- "out_dir=$work/out" || true; }
# A failing test leaves nothing behind, stopped or not.
cleanup() { for p in $(ours); do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done; true; }
trap cleanup EXIT

# Process $1 has ended (a zombie waiting for init to reap it has too).
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ]; }

# The pid of rank $1 of this test's run.
rank_pid() {
  for p in $(ours); do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = gpt2_ddp ] || continue
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then echo "$p"; fi
  done
}

# stall RANK NAME: stops rank RANK once step 3 is logged; the other rank must end the job.
stall() {
  local victim_rank=$1 name=$2 other=$((1 - $1)) log=$work/$2.log
  mpi_run -np 2 "$bin" "${args[@]}" max_steps=100000 run_name="$name" >"$log" 2>&1 &
  local launcher=$!
  for _ in $(seq 1 300); do grep -q "^step *3/" "$log" && break; sleep 0.1; done
  grep -q "^step *3/" "$log" || fail "$name: no step 3 logged" "$log"
  local victim; victim=$(rank_pid "$victim_rank")
  [ -n "$victim" ] || fail "$name: rank $victim_rank not found" "$log"
  local start; start=$(date +%s%N)
  kill -STOP "$victim"
  set +e
  timeout "$limit" tail --pid="$launcher" -f /dev/null
  local waited=$?
  [ $waited -eq 0 ] || fail "$name: the job still runs ${limit}s after rank $victim_rank stopped" "$log"
  wait "$launcher"; local rc=$?
  set -e
  local ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "$name: SIGSTOP of rank $victim_rank (pid $victim): exit $rc after ${ms} ms"
  [ "$rc" -ne 0 ] || fail "$name: expected a non-zero exit" "$log"
  grep -m1 -A1 "has not answered" "$log" || true
  local said="\[rank $other/2 $host\]: error: rank $victim_rank/2 (host $host) has not answered for"
  grep -q "$said" "$log" || fail "$name: no message from rank $other naming rank $victim_rank and $host" "$log"
  grep -q "(mpi_timeout_s = $timeout_s): it is stopped" "$log" || fail "$name: the message lacks the timeout" "$log"
  [ "$(grep -c "has not answered" "$log")" -eq 1 ] || fail "$name: not exactly one message" "$log"
  # mpirun ends as its SIGKILL reaches the stopped rank: that one goes a moment later.
  for _ in $(seq 1 50); do gone "$victim" && break; sleep 0.1; done
  gone "$victim" || fail "$name: the stopped rank $victim is still there" "$log"
  [ -z "$(ours)" ] || fail "$name: processes left: $(ours)" "$log"

  # The newest complete checkpoint resumes and the run takes one more step.
  local newest; newest=$(readlink "$work/out/$name/latest")
  local step=$((10#${newest##*_}))
  [ "$step" -ge 2 ] || fail "$name: no checkpoint before the stop ($newest)" "$log"
  timeout 60 mpirun --bind-to none -np 2 "$bin" "${args[@]}" max_steps=$((step + 1)) allow_changed=max_steps \
    run_name="$name" >"$work/$name.resume.log" 2>&1 || fail "$name: the resume failed" "$work/$name.resume.log"
  grep -q "^resumed from .*: step $step," "$work/$name.resume.log" \
    || fail "$name: not resumed from step $step" "$work/$name.resume.log"
  grep -q "^step *$((step + 1))/" "$work/$name.resume.log" \
    || fail "$name: no step after the resume" "$work/$name.resume.log"
  echo "$name: resumed from $newest and took step $((step + 1))"
}

stall 1 rank1_stopped
stall 0 rank0_stopped
echo "mpi_stall: OK"
