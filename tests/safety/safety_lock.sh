#!/usr/bin/env bash
# One job per run directory (CPU ranks, tiny config):
#  (1) while a 2-rank run trains, a second run (2 ranks, then 1) on the same
#      out_dir/run_name exits 2 within seconds, naming the holder (this host
#      and the pid of the first run's rank 0), and writes nothing there;
#  (2) the first run is unharmed: exit 0, every step logged once in
#      metrics.jsonl, its checkpoints complete, no partial directory;
#  (3) a lock never outlives its process: a run killed with SIGKILL leaves
#      the lock file, and the next run on the directory takes the lock at
#      once and resumes from its step-10 checkpoint (exit 0);
#  (4) the lock file goes with its run: none is left after exit 0 or after a
#      run refused with exit 2 once it held the lock (resume=none);
#  (5) deleting the lock file does not defeat the lock: with the file of a
#      live run deleted, and then deleted and recreated, a second run exits 2
#      saying so; the first run is unharmed: stopped with STOP, exit 3, every
#      step logged once, its last checkpoint complete.
# usage: safety_lock.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
run=(configs/tiny.ini max_steps=40 warmup_steps=2 eval_every=0 log_every=1 checkpoint_every=10
     out_dir="$work" run_name=shared)

mpirun --bind-to none -np 2 "$bin" "${run[@]}" >"$work/first.log" 2>&1 &
first=$!
wait_for 'grep -q "^step     3/" "$work/first.log"'
holder=$(rank_pids $first | sort -n | head -1)
for np in 2 1; do
  start=$SECONDS
  set +e
  timeout 60 mpirun --bind-to none -np $np "$bin" "${run[@]}" >"$work/second$np.log" 2>&1
  rc=$?
  set -e
  took=$((SECONDS - start))
  [ $rc -eq 2 ] || fail "second run ($np rank(s)) on a locked directory: exit $rc, expected 2" "$work/second$np.log"
  [ $took -le 30 ] || fail "the refusal took $took s"
  msg=$(grep "error: run directory $work/shared is in use by another gpt2_ddp run (host $(hostname), pid [0-9]*," "$work/second$np.log") \
    || fail "the refusal does not name the holder" "$work/second$np.log"
  echo "$msg" | cut -c1-200
  pid=$(sed 's/.*, pid \([0-9]*\),.*/\1/' <<<"$msg")
  rank_pids $first | grep -qx "$pid" || fail "pid $pid named, but the first run's ranks are $(rank_pids $first | tr '\n' ' ')"
  echo "second run with $np rank(s): exit 2 after $took s, holder pid $pid (a rank of the first run)"
done
kill -0 "$holder" 2>/dev/null || fail "the first run died" "$work/first.log"

set +e; wait $first; rc=$?; set -e
[ $rc -eq 0 ] || fail "the first run: exit $rc" "$work/first.log"
/usr/bin/python3 - "$work/shared/metrics.jsonl" <<'PY'
import json, sys
steps = [r["step"] for r in map(json.loads, open(sys.argv[1])) if r["type"] == "step"]
assert steps == list(range(1, 41)), f"metrics.jsonl steps {steps[:8]}... are not 1..40 once each"
print("metrics.jsonl: steps 1..40, each once")
PY
[ "$(readlink "$work/shared/latest")" = step_00000040 ] && [ -f "$work/shared/step_00000040/COMPLETE" ] \
  || fail "latest is not the complete step 40"
! ls -d "$work"/shared/*.tmp 2>/dev/null || fail "a partial checkpoint directory was left"
echo "the first run is unharmed: exit 0, latest -> step_00000040 (complete)"
[ ! -e "$work/shared/gpt2_ddp.lock" ] || fail "the lock file is left after exit 0"
echo "no lock file left after exit 0"
set +e
mpi_run -np 2 "$bin" "${run[@]}" resume=none >"$work/refused.log" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "resume = none, but" "$work/refused.log" || fail "resume=none: exit $rc, expected 2" "$work/refused.log"
[ ! -e "$work/shared/gpt2_ddp.lock" ] || fail "the lock file is left after exit 2" "$work/refused.log"
echo "no lock file left after exit 2 (resume=none refused)"

mpirun --bind-to none -np 2 "$bin" "${run[@]}" max_steps=400 run_name=killed >"$work/killed.log" 2>&1 &
victim=$!
wait_for 'grep -q "^step    12/" "$work/killed.log"'
kill -KILL $(rank_pids $victim)
set +e; wait $victim; set -e
[ -f "$work/killed/gpt2_ddp.lock" ] || fail "no lock file left to test with"
start=$SECONDS
mpi_run -np 2 "$bin" "${run[@]}" max_steps=14 allow_changed=max_steps run_name=killed \
  >"$work/after.log" 2>&1 \
  || fail "a run after SIGKILL of the holder" "$work/after.log"
grep "^resumed from $work/killed/step_00000010" "$work/after.log" || fail "did not resume from step 10" "$work/after.log"
echo "after SIGKILL of the holder the next run took the lock, resumed and finished in $((SECONDS - start)) s"

# (5) the lock file of a live run deleted (DAMAGE), then a second run
deleted_case() { # name damage regex
  local name=$1 damage=$2 regex=$3
  mpirun --bind-to none -np 2 "$bin" "${run[@]}" max_steps=4000 run_name="$name" >"$work/$name.log" 2>&1 &
  local first=$!
  wait_for "grep -q '^step     3/' '$work/$name.log'"
  [ -f "$work/$name/gpt2_ddp.lock" ] || fail "$name: no lock file while the run is live" "$work/$name.log"
  (cd "$work/$name" && eval "$damage")
  set +e
  timeout 60 mpirun --bind-to none -np 2 "$bin" "${run[@]}" run_name="$name" >"$work/${name}_second.log" 2>&1
  rc=$?
  set -e
  [ $rc -eq 2 ] || fail "$name: second run exit $rc, expected 2" "$work/${name}_second.log"
  grep -q "error: run directory $work/$name is in use by another gpt2_ddp run ($regex" "$work/${name}_second.log" \
    || fail "$name: the refusal does not say '$regex'" "$work/${name}_second.log"
  echo "$name: second run exit 2: $(grep -o "in use by another gpt2_ddp run ([^;]*" "$work/${name}_second.log")"
  kill -0 $first 2>/dev/null || fail "$name: the first run ended before the second was refused" "$work/$name.log"
  touch "$work/$name/STOP"
  set +e; wait $first; rc=$?; set -e
  [ $rc -eq 3 ] || fail "$name: the first run: exit $rc, expected 3 (STOP)" "$work/$name.log"
  local last
  last=$(/usr/bin/python3 - "$work/$name/metrics.jsonl" <<'PY'
import json, sys
steps = [r["step"] for r in map(json.loads, open(sys.argv[1])) if r["type"] == "step"]
assert steps == list(range(1, len(steps) + 1)), f"metrics.jsonl steps {steps[:8]}... are not 1..N once each"
print(len(steps))
PY
) || fail "$name: metrics.jsonl"
  [ "$(readlink "$work/$name/latest")" = "$(printf step_%08d "$last")" ] && [ -f "$work/$name/latest/COMPLETE" ] \
    || fail "$name: latest is not the complete step $last" "$work/$name.log"
  ! ls -d "$work/$name"/*.tmp 2>/dev/null || fail "$name: a partial checkpoint directory was left"
  echo "$name: the first run is unharmed: STOP -> exit 3 after step $last, steps 1..$last once each in metrics.jsonl, latest complete"
}
deleted_case deleted 'rm gpt2_ddp.lock' "its lock file was deleted while it runs"
deleted_case recreated 'rm gpt2_ddp.lock && echo "host elsewhere" >gpt2_ddp.lock' \
  "its lock file was deleted and recreated while it runs"
[ -f "$work/recreated/gpt2_ddp.lock" ] || fail "the first run removed a lock file it did not create"
echo "one job per run directory: OK"
