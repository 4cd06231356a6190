#!/usr/bin/env bash
# Checkpoints saved in the background (checkpoint_async=true on CPU ranks,
# tiny config at half width, a save every 4 of 20 steps), each against an uninterrupted
# run of the same rank count whose saves waited (checkpoint_async=false):
#  (1) np = 1, 2, 3: the run killed (SIGKILL, every rank) once step 8's
#      save was published, then the same command again: it resumes from the
#      newest complete checkpoint and its losses after it and its final
#      checkpoint equal the reference bit for bit; metrics.jsonl has a
#      checkpoint record (async, stall, write time) per published save.
#  (2) np = 2, the writers held 5 s (or four of the machine's slowest
#      steps) after their files (GPT2_TEST_SAVE_DELAY_MS): one rank killed
#      (SIGKILL) while step 8's save is in flight: `latest` is the last save
#      the log published, step_00000008.tmp has no COMPLETE marker, and the
#      same command resumes from `latest` and ends equal to the reference.
#  (3) np = 2, writers held as in (2): SIGUSR1 to mpirun, and then the STOP
#      file, while step 8's save is in flight: that save is published, then the
#      stop's own, exit 3, `latest` the stop's; the resume ends equal to the
#      reference.
# Buffers that do not fit the node: ckpt_async_refused.sh.
# usage: ckpt_async.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
# What is tested is the saves, not the steps: the tiny model at half its
# width (a checkpoint of half the bytes), and total_batch divided into 1, 2
# and 3 ranks of micro_batch 1 x seq_len 64 (6, 3 and 2 micro-steps).
run=(configs/tiny.ini n_embd=32 max_steps=20 warmup_steps=2 eval_every=0 log_every=1 checkpoint_every=4
     micro_batch=1 total_batch=384 out_dir="$work")
check() { /usr/bin/python3 tests/lib/ckpt_check.py "$@"; }

# equal_to_reference NAME NP RESUMED_LOG: the resumed run's losses after
# its checkpoint and its final checkpoint equal the reference's.
equal_to_reference() {
  local name=$1 np=$2 log=$3 k
  k=$(grep -o "^resumed from $work/$name/step_0*[0-9]*" "$log" | sed 's/.*step_0*//') \
    || fail "$name: not resumed" "$log"
  check losses "$work/ref$np" "$work/$name" $((k + 1)) 20 0
  check state "$work/ref$np/step_00000020" "$work/$name/step_00000020"
}

# (1)
for np in 1 2 3; do
  mpi_run -np $np "$bin" "${run[@]}" checkpoint_async=false run_name=ref$np >"$work/ref$np.log" 2>&1 \
    || fail "reference run, np=$np" "$work/ref$np.log"
  name=killed$np
  mpirun --bind-to none -np $np "$bin" "${run[@]}" checkpoint_async=true run_name=$name >"$work/$name.log" 2>&1 &
  launcher=$!
  wait_for 'grep -qs "^checkpoint: step 8 saved" "$work/$name.log"'
  kill -KILL $(rank_pids $launcher) 2>/dev/null || true
  set +e; wait $launcher; rc=$?; set -e
  grep -q "^checkpoint: saves written in the background" "$work/$name.log" || fail "$name: saves not in the background" "$work/$name.log"
  grep -q "^step    20/20" "$work/$name.log" && fail "$name: finished before the kill (exit $rc)" "$work/$name.log"
  latest=$(readlink "$work/$name/latest")
  [ -f "$work/$name/$latest/COMPLETE" ] || fail "$name: latest -> $latest is not complete" "$work/$name.log"
  echo "np=$np: killed after step 8's save was published (exit $rc): latest -> $latest"
  /usr/bin/python3 - "$work/$name/metrics.jsonl" <<'PY' || fail "$name: checkpoint records" "$work/$name/metrics.jsonl"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if '"checkpoint"' in l]
recs = [r for r in recs if r["type"] == "checkpoint"]
assert [r["step"] for r in recs][:2] == [4, 8], recs
for r in recs:
    assert r["async"] is True and r["bytes"] > 0 and r["stall_ms"] >= 0 and r["write_s"] > 0, r
print(f"metrics.jsonl: checkpoint records of steps {[r['step'] for r in recs]}, async, "
      f"stall {max(r['stall_ms'] for r in recs):.0f} ms at most")
PY
  mpi_run -np $np "$bin" "${run[@]}" checkpoint_async=true run_name=$name >"$work/$name.resume.log" 2>&1 \
    || fail "$name: resume" "$work/$name.resume.log"
  equal_to_reference $name $np "$work/$name.resume.log"
done

# The writers' hold: step 8's save must still be in flight when step 10 is
# logged, so it outlasts a few steps of this machine (under the sanitizers on
# a loaded CI machine a step takes seconds): 5 s, or four of the slowest
# steps of the 2-rank reference run, whichever is longer.
hold_ms=$(/usr/bin/python3 - "$work/ref2/metrics.jsonl" <<'PY'
import json, sys
steps = [r for r in map(json.loads, open(sys.argv[1])) if r.get("type") == "step"]
assert steps, "no step records"
print(max(5000, int(4 * max(r["ms"] for r in steps))))
PY
) || fail "no step times in the 2-rank reference run" "$work/ref2/metrics.jsonl"
echo "writers held $hold_ms ms in the runs with a save in flight"

# in_flight_run NAME: 2 ranks, writers held hold_ms; returns once step 10 is
# logged with step 8's save still in flight (step 4's published).
in_flight_run() {
  cur=$1
  GPT2_TEST_SAVE_DELAY_MS=$hold_ms mpirun --bind-to none -np 2 "$bin" "${run[@]}" checkpoint_async=true \
    run_name=$1 >"$work/$1.log" 2>&1 &
  launcher=$!
  wait_for 'grep -qs "^step    10/" "$work/$cur.log"'
  grep -q "^checkpoint: step 8 saved" "$work/$1.log" && fail "$1: step 8's save was published before step 10 (too slow a machine for this test)" "$work/$1.log"
  grep -q "^checkpoint: step 4 saved" "$work/$1.log" || fail "$1: step 4's save not published by step 10" "$work/$1.log"
  return 0
}

# (2)
in_flight_run inflight
kill -KILL "$(rank_pids $launcher | tail -1)"
set +e; wait $launcher; rc=$?; set -e
[ $rc -ne 0 ] || fail "inflight: exit 0 after a rank was killed" "$work/inflight.log"
latest=$(readlink "$work/inflight/latest")
[ "$latest" = step_00000004 ] && [ -f "$work/inflight/step_00000004/COMPLETE" ] \
  || fail "inflight: latest -> $latest, expected the complete step_00000004" "$work/inflight.log"
[ -d "$work/inflight/step_00000008.tmp" ] && [ ! -e "$work/inflight/step_00000008.tmp/COMPLETE" ] \
  && [ ! -e "$work/inflight/step_00000008" ] || fail "inflight: step 8 is not an unmarked step_00000008.tmp" "$work/inflight.log"
echo "inflight: a rank killed during step 8's background write (exit $rc): latest -> $latest; step_00000008.tmp unmarked"
mpi_run -np 2 "$bin" "${run[@]}" checkpoint_async=true run_name=inflight >"$work/inflight.resume.log" 2>&1 \
  || fail "inflight: resume" "$work/inflight.resume.log"
grep -q "^removed partial checkpoint directories" "$work/inflight.resume.log" || fail "inflight: partial save not removed" "$work/inflight.resume.log"
equal_to_reference inflight 2 "$work/inflight.resume.log"

# (3)
in_flight_run stopped
kill -USR1 $launcher
set +e; wait $launcher; rc=$?; set -e
[ $rc -eq 3 ] || fail "stopped: SIGUSR1 to mpirun: exit code $rc, expected 3" "$work/stopped.log"
latest=$(readlink "$work/stopped/latest")
k=$(sed 's/step_0*//' <<<"$latest")
grep -q "^checkpoint: step 8 saved" "$work/stopped.log" || fail "stopped: the in-flight save of step 8 was not published" "$work/stopped.log"
grep -q "^checkpoint: step $k saved" "$work/stopped.log" && [ -f "$work/stopped/$latest/COMPLETE" ] && [ "$k" -gt 8 ] \
  || fail "stopped: latest -> $latest is not the stop's complete checkpoint" "$work/stopped.log"
echo "stopped: SIGUSR1 with step 8 in flight: step 8 published, then the stop's step $k; exit 3"
mpi_run -np 2 "$bin" "${run[@]}" checkpoint_async=true run_name=stopped >"$work/stopped.resume.log" 2>&1 \
  || fail "stopped: resume" "$work/stopped.resume.log"
equal_to_reference stopped 2 "$work/stopped.resume.log"

# (3b) the STOP file, the same way
in_flight_run stopfile
touch "$work/stopfile/STOP"
set +e; wait $launcher; rc=$?; set -e
[ $rc -eq 3 ] || fail "stopfile: STOP with a save in flight: exit code $rc, expected 3" "$work/stopfile.log"
latest=$(readlink "$work/stopfile/latest")
k=$(sed 's/step_0*//' <<<"$latest")
grep -q "^checkpoint: step 8 saved" "$work/stopfile.log" && grep -q "^checkpoint: step $k saved" "$work/stopfile.log" \
  && [ -f "$work/stopfile/$latest/COMPLETE" ] && [ "$k" -gt 8 ] && [ ! -e "$work/stopfile/STOP" ] \
  || fail "stopfile: step 8 and the stop's checkpoint not both published (latest -> $latest)" "$work/stopfile.log"
echo "stopfile: STOP with step 8 in flight: step 8 published, then the stop's step $k; exit 3"
mpi_run -np 2 "$bin" "${run[@]}" checkpoint_async=true run_name=stopfile >"$work/stopfile.resume.log" 2>&1 \
  || fail "stopfile: resume" "$work/stopfile.resume.log"
equal_to_reference stopfile 2 "$work/stopfile.resume.log"

echo "checkpoint_async: OK"
