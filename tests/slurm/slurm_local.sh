#!/usr/bin/env bash
# launch/slurm_local.sh, the quick start for launch/slurm.sbatch on one
# machine, run as its docs say from another folder: a one-node Slurm comes
# up, the tiny job runs to COMPLETED with its final weights, the script
# exits 0 and leaves no daemon or temporary directory behind.
# usage: slurm_local.sh GPT2_DDP WORK_DIR
set -euo pipefail
bin=$1 work=$2
repo=$(cd "$(dirname "$0")/../.." && pwd)
source "$repo/launch/slurm_cluster.sh"
slurm_skip_unless_available 1
rm -rf "$work"; mkdir -p "$work"
cd "$work"
rc=0
BUILD_DIR=$(dirname "$bin") OUT_DIR=$work/out JOB_NAME=quick timeout 300 "$repo/launch/slurm_local.sh" \
  configs/tiny.ini max_steps=4 eval_every=0 log_every=2 >"$work/log" 2>&1 || rc=$?
fail() { echo "FAIL: $1"; cat "$work/log"; exit 1; }
[ $rc -eq 0 ] || fail "launch/slurm_local.sh exited $rc"
grep -qE "slurm_local: job [0-9]+ COMPLETED, exit code 0" "$work/log" || fail "no COMPLETED job"
grep -q "step     4/4" "$work/log" || fail "the job's log was not followed"
[ -f "$work/out/quick/model.h5" ] || fail "no final weights"
! pgrep -f "slurmctld -D -i" >/dev/null || fail "slurmctld left running"
grep -q "slurm: daemons stopped" "$work/log" || fail "the daemons were not stopped"
echo "slurm_local: OK ($(grep -oE 'job [0-9]+ COMPLETED' "$work/log"))"
