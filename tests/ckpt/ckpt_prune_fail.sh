#!/usr/bin/env bash
# An old checkpoint that keep_last cannot remove (an immutable directory:
# chattr +i, as another owner's would be to a user) costs no checkpoint
# (issue 61, kind 6): the new checkpoints are published as before, the run
# says so once per directory and goes on to exit 0, for the saves in the
# background (checkpoint_async) and in the loop alike. Needs chattr on an
# ext4-like file system (exit 77, reported as skipped, elsewhere).
# usage: ckpt_prune_fail.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../lib/ckpt_lib.sh"
[ ! -d "$work" ] || chattr -R -i "$work" 2>/dev/null || true # a killed earlier run's
fresh_dir "$work"
immutable=()
cleanup() { for d in "${immutable[@]}"; do chattr -i "$d" 2>/dev/null || true; done; }
trap cleanup EXIT
mkdir -p "$work/probe"
if ! chattr +i "$work/probe" 2>/dev/null; then
  echo "chattr +i does not work here (not root, or no such attribute on this file system): skipped"
  exit 77
fi
chattr -i "$work/probe"

for mode in true false; do
  name=async_$mode
  run=(configs/tiny.ini device=cpu warmup_steps=1 eval_every=0 log_every=1 checkpoint_every=2
       keep_last=1 checkpoint_async=$mode out_dir="$work" run_name=$name allow_changed=max_steps)
  "$bin" "${run[@]}" max_steps=2 >"$work/$name.first.log" 2>&1 || fail "$name: first run" "$work/$name.first.log"
  old=$work/$name/step_00000002
  chattr +i "$old" && immutable+=("$old")
  rc=0
  timeout 120 "$bin" "${run[@]}" max_steps=8 >"$work/$name.log" 2>&1 || rc=$?
  [ $rc -eq 0 ] || fail "$name: exit $rc with an old checkpoint that cannot be removed" "$work/$name.log"
  [ "$(grep -c "warning: cannot remove the old checkpoint $old (beyond keep_last = 1): cannot remove $old/.*Operation not permitted. The run goes on" "$work/$name.log")" -eq 1 ] \
    || fail "$name: the warning is not said exactly once" "$work/$name.log"
  [ "$(readlink "$work/$name/latest")" = step_00000008 ] || fail "$name: latest is not step 8" "$work/$name.log"
  for s in 4 6; do
    [ ! -e "$work/$name/step_0000000$s" ] || fail "$name: step $s was not pruned" "$work/$name.log"
  done
  [ -f "$old/COMPLETE" ] || fail "$name: the immutable checkpoint lost its marker"
  echo "$name: exit 0, step 8 published, one warning: $(grep -o 'warning: cannot remove.*' "$work/$name.log" | cut -c1-120)"
done
echo "ckpt_prune_fail: OK"
