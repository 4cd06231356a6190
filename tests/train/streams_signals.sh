#!/usr/bin/env bash
# Signals and streams of a plain terminal (issue 61, kind 7): a standard
# output whose reader ends (`gpt2_ddp ... | head -3`) no longer kills the
# run by SIGPIPE: it says so once on standard error and trains to the end,
# exit 0, every record in metrics.jsonl. SIGHUP (the terminal closed) stops
# a directly started run like SIGTERM, with a checkpoint and exit 3, and the
# same command continues it.
# usage: streams_signals.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
fresh_dir "$work"
run=(configs/tiny.ini device=cpu warmup_steps=1 eval_every=0 log_every=1 out_dir="$work")

# | head -3: the pipe's reader is gone after three lines.
set +o pipefail
timeout 120 "$bin" "${run[@]}" max_steps=8 checkpoint_every=4 run_name=pipe 2>"$work/pipe.err" | head -3 >"$work/pipe.out"
rc=${PIPESTATUS[0]}
set -o pipefail
[ "$rc" -eq 0 ] || fail "| head -3: the run exited $rc (141 is death by SIGPIPE)" "$work/pipe.err"
[ "$(grep -c "note: standard output is gone" "$work/pipe.err")" -eq 1 ] || fail "| head -3: the note is not said once" "$work/pipe.err"
grep -q "its records are in $work/pipe/metrics.jsonl" "$work/pipe.err" || fail "| head -3: the note does not name metrics.jsonl" "$work/pipe.err"
[ "$(grep -c '"type":"step"' "$work/pipe/metrics.jsonl")" -eq 8 ] || fail "| head -3: metrics.jsonl lacks steps"
[ -f "$work/pipe/model.h5" ] && [ "$(readlink "$work/pipe/latest")" = step_00000008 ] || fail "| head -3: no final weights or checkpoint"
echo "| head -3: exit 0, 8 steps recorded, $(grep -o 'note: standard output is gone' "$work/pipe.err")"

# SIGHUP to a run started from a terminal (no mpirun, no launch script).
hup=(max_steps=400 checkpoint_every=1000 run_name=hup)
"$bin" "${run[@]}" "${hup[@]}" >"$work/hup.log" 2>&1 &
pid=$!
wait_for "grep -q '^step *3/' '$work/hup.log'" 60 || { kill -9 $pid; fail "SIGHUP: no third step" "$work/hup.log"; }
kill -HUP $pid
rc=0
wait $pid || rc=$?
[ $rc -eq 3 ] || fail "SIGHUP: exit $rc, expected 3 (a checkpoint and a stop)" "$work/hup.log"
grep -q "stopped by a pre-emption signal (SIGTERM, SIGUSR1, SIGINT or SIGHUP) after step" "$work/hup.log" \
  || fail "SIGHUP: no stop line" "$work/hup.log"
step=$(readlink "$work/hup/latest" | sed 's/step_0*//')
[ -n "$step" ] && [ "$step" -ge 3 ] || fail "SIGHUP: no checkpoint" "$work/hup.log"
"$bin" "${run[@]}" max_steps=$((step + 2)) checkpoint_every=1000 run_name=hup allow_changed=max_steps \
  >"$work/hup2.log" 2>&1 || fail "SIGHUP: the same command does not continue" "$work/hup2.log"
grep -q "resumed from $work/hup/step_0*$step" "$work/hup2.log" || fail "SIGHUP: not resumed from step $step" "$work/hup2.log"
echo "SIGHUP: exit 3 after step $step with its checkpoint; resumed from it"
echo "streams_signals: OK"
