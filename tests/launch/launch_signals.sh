#!/usr/bin/env bash
# Every way a user stops a run of launch/local.sh ends with exit 3 and a
# complete checkpoint (2 CPU ranks, tiny config, signal after step 3):
# SIGTERM, SIGUSR1, SIGINT to the script; SIGTERM and SIGINT to its process
# group (what Ctrl-C in a terminal does: the test runs with job control, so
# the script has a group of its own and SIGINT is not ignored); SIGTERM to
# its mpirun (which itself exits 1: the script reads the trainer's recorded
# 3; or 1 when the ranks were killed before they said so, Open MPI giving
# them 1-2 s, with latest then absent or complete); SIGTERM and SIGINT to
# one rank. Then: SIGKILL to the script leaves no mpirun or rank behind;
# plain mpirun signalled itself exits 1 (Open MPI 4.1: it kills its ranks
# a second or two later), as the docs say.
# usage: launch_signals.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
mkdir -p "$work/tmp"
export BUILD_DIR DEVICE=cpu RANKS=2 OMP_NUM_THREADS=1 TMPDIR=$work/tmp
BUILD_DIR=$(dirname "$bin")
run=(configs/tiny.ini max_steps=100000 warmup_steps=5 eval_every=0 log_every=1
     checkpoint_every=100000 out_dir="$work")
set -m # background jobs in process groups of their own, SIGINT not ignored
# A failed check leaves no run behind (each job is a process group).
trap 'for j in $(jobs -p); do kill -TERM -- "-$j" 2>/dev/null || true; done' EXIT

complete_latest() { # run dir
  local l
  l=$(readlink "$1/latest") && [ -f "$1/$l/COMPLETE" ] || return 1
  echo "$l"
}
# The mpirun of launch script $1 and the ranks of that mpirun.
mpirun_of() { pgrep -P "$1" -x mpirun; }
ranks_of() { pgrep -P "$(mpirun_of "$1")" -x gpt2_ddp; }

# case TARGET SIGNAL: launch/local.sh, signal TARGET after step 3, expect 3.
stop_case() {
  local target=$1 sig=$2 name=$1_$2 pid
  local log=$work/$name.log
  launch/local.sh "${run[@]}" run_name="$name" >"$log" 2>&1 &
  local script=$!
  wait_for "grep -q '^step     3/' '$log'" || fail "$name: no step 3" "$log"
  case $target in
    script) pid=$script ;;
    group) pid=-$script ;;
    mpirun) pid=$(mpirun_of "$script") ;;
    rank) pid=$(ranks_of "$script" | tail -n 1) ;; # rank 1, most likely: not rank 0
  esac
  kill -s "$sig" -- "$pid"
  set +e; wait "$script"; rc=$?; set -e
  if [ "$target" = mpirun ] && [ $rc -eq 1 ] && ! grep -q "^stopped by" "$log"; then
    # Open MPI sent the ranks SIGTERM 1 s after, SIGKILL 2 s after the
    # signal: the step and the save did not fit (a loaded machine), or the
    # save did and the kill came before the stop message. Either way latest
    # is absent or a complete checkpoint, never a torn one.
    latest=$(readlink "$work/$name/latest" || true)
    [ -z "$latest" ] || complete_latest "$work/$name" >/dev/null ||
      fail "killed mid-run, and latest -> $latest is not a complete checkpoint" "$log"
    echo "SIG$sig to the mpirun: the ranks were killed before they could report (Open MPI's 1-2 s): exit 1, latest -> ${latest:-none}"
    return
  fi
  [ $rc -eq 3 ] || fail "SIG$sig to the $target ($pid): launch/local.sh exit $rc, expected 3" "$log"
  l=$(complete_latest "$work/$name") || fail "$name: latest is not a complete checkpoint" "$log"
  grep -q "^stopped by a pre-emption signal .* after step $(sed 's/step_0*//' <<<"$l"): checkpoint saved, exit code 3" "$log" ||
    fail "$name: no stop message for $l" "$log"
  echo "SIG$sig to the $target: exit 3, latest -> $l (complete); $(grep -m1 -E '^launch: (got|mpirun exited)' "$log" || echo 'the script was not signalled')"
}
for sig in TERM USR1 INT; do stop_case script $sig; done
for sig in TERM INT; do stop_case group $sig; done
stop_case mpirun TERM
for sig in TERM INT; do stop_case rank $sig; done
[ -z "$(ls -A "$work/tmp")" ] || fail "files left in TMPDIR: $(ls "$work/tmp")"

# SIGKILL cannot be passed on: the watcher in mpirun's session ends the run.
log=$work/killed.log
launch/local.sh "${run[@]}" run_name=killed >"$log" 2>&1 &
script=$!
wait_for "grep -q '^step     3/' '$log'" || fail "killed: no step 3" "$log"
launcher=$(mpirun_of "$script")
kill -KILL "$script"
wait "$script" || true
wait_for "! kill -0 $launcher 2>/dev/null && ! pgrep -f 'run_name=killed' >/dev/null" 20 ||
  fail "mpirun $launcher or a rank still runs 20 s after SIGKILL to its script" "$log"
echo "SIGKILL to the script: mpirun and its ranks gone"

# Plain mpirun, signalled itself: Open MPI exits 1 whatever its ranks did.
for sig in TERM INT; do
  log=$work/plain_$sig.log
  GPT2_EXIT_STATUS_FILE=$work/plain_$sig.status \
    mpirun --bind-to none -np 2 "$bin" "${run[@]}" run_name=plain_$sig >"$log" 2>&1 &
  launcher=$!
  wait_for "grep -q '^step     3/' '$log'" || fail "plain_$sig: no step 3" "$log"
  kill -s "$sig" "$launcher"
  set +e; wait "$launcher"; rc=$?; set -e
  [ $rc -eq 1 ] || fail "SIG$sig to a plain mpirun: exit $rc (Open MPI 4.1 exits 1)" "$log"
  if grep -q "^stopped by" "$log"; then
    [ "$(cat "$work/plain_$sig.status")" = 3 ] || fail "stopped, but no 3 recorded" "$log"
    what="the ranks saved a checkpoint in time (latest -> $(complete_latest "$work/plain_$sig")), recorded 3"
  else
    what="the ranks were killed before they saved"
  fi
  echo "SIG$sig to a plain mpirun: exit 1; $what"
done
echo "launch_signals: OK"
