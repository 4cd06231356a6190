#!/usr/bin/env bash
# Runs gpt2_ddp on this machine: one rank per GPU when GPUs are present and
# the binary has the CUDA backend, otherwise RANKS CPU ranks (default 1).
# A config whose total_batch does not divide over that many ranks (tiny.ini's
# 1024 tokens on 3 or 8 ranks) is fitted unless the command line sets
# total_batch or micro_batch: a smaller micro_batch when one down to 1/8 of
# it keeps total_batch (the same run), else the nearest total_batch that
# divides; the launcher says which.
# usage: launch/local.sh [CONFIG.ini] [key=value | --key=value ...]
#   env: RANKS (CPU ranks), DEVICE=cpu (CPU ranks even where GPUs are),
#        BUILD_DIR (default build), MPIRUN_ARGS (extra mpirun flags),
#        STOP_BY_FILE=1 (pre-emption through the STOP file only, see below)
# Stopping: SIGTERM, SIGUSR1, SIGINT (Ctrl-C) or SIGHUP to this script, or
# to its process group, is passed on to every rank (SIGUSR1 as is, the others
# as SIGTERM), which save a checkpoint and exit 3, and so does this script.
# mpirun runs in a session of its own so that such signals do not reach it:
# Open MPI 4.1's mpirun, signalled itself with SIGTERM or SIGINT, sends its
# ranks SIGTERM and a second later SIGKILL (a checkpoint that takes longer
# is cut short) and exits 1 whatever they returned; and its forwarding of
# SIGUSR1 cannot be relied on (Ubuntu 24.04's 4.1.6 did not forward it).
# Where mpirun is signalled anyway (kill by its pid), rank 0 records its
# exit code in a file this script names (GPT2_EXIT_STATUS_FILE), and the
# script exits with a 3 recorded there rather than mpirun's 1. Where no rank
# is a child of mpirun (Open MPI 5's launch daemons), or with STOP_BY_FILE=1,
# the script creates the run directory's STOP file instead, which the
# trainer checks every step and removes when it stops (the script removes
# one the run did not get to).
set -euo pipefail
caller_dir=$PWD
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BIN="$BUILD_DIR/gpt2_ddp"
# --help: this script's own usage (the header above), then the trainer's keys.
if [[ " $* " == *" --help "* || " $* " == *" -h "* ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed -n 's/^# \{0,1\}//p'
  echo
  if [ -x "$BIN" ]; then "$BIN" --help; else echo "($BIN not built yet: tools/setup.sh builds it)"; fi
  exit 0
fi
[ -x "$BIN" ] || { echo "launch: $BIN not found; run tools/setup.sh first" >&2; exit 2; }

config=configs/tiny.ini
if [ $# -gt 0 ] && [[ "$1" != *=* && "$1" != -* ]]; then
  config=$1; shift
  # A config named from another folder is where the command was typed;
  # configs/... of this repository still works from anywhere.
  if [[ "$config" != /* && -e "$caller_dir/$config" ]]; then config=$caller_dir/$config; fi
  [ -f "$config" ] || { echo "launch: config file $config not found (from $caller_dir, or in $PWD)" >&2; exit 2; }
else
  # The demo (no config given) shows text from the model as it learns and ends with a sample.
  set -- sample_every=100 "$@"
fi

gpus=0
if [ "${DEVICE:-auto}" != cpu ] && command -v nvidia-smi >/dev/null && [[ "$("$BIN" --version)" == *"cuda ("* ]]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU" || true)
fi
if [ "$gpus" -gt 0 ]; then
  ranks=$gpus; device=cuda
else
  ranks=${RANKS:-1}; device=cpu
fi
# CPU ranks share the cores: split them so OpenMP threads do not oversubscribe.
cores=$(nproc)
threads=$(( cores / ranks )); [ "$threads" -ge 1 ] || threads=1

# total_batch must be a multiple of micro_batch * seq_len * ranks.
fit=()
if [[ " $* " != *[\ -]total_batch[=\ ]* && " $* " != *[\ -]micro_batch[=\ ]* ]] &&
   resolved=$("$BIN" --print-config "$config" "$@" device="$device" 2>/dev/null); then
  value() { sed -n "s/^$1 = \([0-9]*\)$/\1/p" <<<"$resolved"; }
  mb=$(value micro_batch) seq=$(value seq_len) total=$(value total_batch)
  unit=$(( mb * seq * ranks ))
  if (( total % unit != 0 )); then
    for (( m = mb - 1; m >= 1 && m * 8 >= mb; m-- )); do
      if (( total % (m * seq * ranks) == 0 )); then fit=(micro_batch="$m"); break; fi
    done
    if [ ${#fit[@]} -eq 0 ]; then
      fitted=$(( (total + unit / 2) / unit * unit ))
      (( fitted >= unit )) || fitted=$unit
      fit=(total_batch="$fitted")
    fi
    echo "launch: total_batch $total is not a multiple of micro_batch * seq_len * ranks = $mb * $seq * $ranks;" \
         "running with ${fit[*]} (set total_batch= or micro_batch= to choose)"
  fi
fi

mpi_flags=(--bind-to none -x OMP_NUM_THREADS="${OMP_NUM_THREADS:-$threads}")
[ "$(id -u)" -ne 0 ] || mpi_flags+=(--allow-run-as-root)
[ "$ranks" -le "$cores" ] || mpi_flags+=(--oversubscribe)
echo "launch: $ranks rank(s), device=$device, config $config"
args=("$config" device="$device" "${fit[@]}" "$@")

# The run directory, as the trainer resolves it (for the STOP file).
run_dir() {
  local resolved out run
  resolved=$("$BIN" --print-config "${args[@]}" 2>/dev/null) || return 1
  out=$(sed -n 's/^out_dir = //p' <<<"$resolved"); run=$(sed -n 's/^run_name = //p' <<<"$resolved")
  out=${out#\"}; out=${out%\"}; run=${run#\"}; run=${run%\"}
  echo "$out/$run"
}
made_stop=
forward() { # signal received, signal for the ranks
  interrupted=1
  local ranks_pids= how=
  [ "$1" = "$2" ] || how=" as SIG$2"
  [ "${STOP_BY_FILE:-0}" = 1 ] || ranks_pids=$(pgrep -P "$mpirun_pid" -x gpt2_ddp || true)
  if [ -n "$ranks_pids" ]; then
    echo "launch: got SIG$1: passing it on$how to the ranks ($(echo $ranks_pids))" >&2
    kill -s "$2" $ranks_pids 2>/dev/null || true
  elif dir=$(run_dir) && [ -d "$dir" ]; then
    [ -e "$dir/STOP" ] || made_stop="$dir/STOP"
    echo "launch: got SIG$1: asking the run to stop with $dir/STOP" >&2
    touch "$dir/STOP"
  else
    echo "launch: got SIG$1: passing it on$how to mpirun (pid $mpirun_pid)" >&2
    kill -s "$2" "$mpirun_pid" 2>/dev/null || true
  fi
}
# A name of this launch's own for rank 0's exit code (see above): an empty
# file until the trainer replaces it, so no earlier run's code is read.
status_file=$(mktemp "${TMPDIR:-/tmp}/gpt2_ddp-exit.XXXXXX")
trap 'rm -f "$status_file" "$status_file.tmp"' EXIT
export GPT2_EXIT_STATUS_FILE=$status_file

# setsid: mpirun and its ranks in a session of their own (see above). A
# watcher in that session ends mpirun (SIGTERM) should this script be killed
# with SIGKILL, which it cannot pass on: no run is left behind without it.
# The ranks' pid parent is mpirun: bash -c execs it.
setsid bash -c 'script=$1; shift
  (while kill -0 $$; do kill -0 "$script" || { kill -TERM $$; break; }; sleep 1; done) </dev/null >/dev/null 2>&1 &
  exec "$@"' launch-mpirun $$ \
  mpirun -np "$ranks" "${mpi_flags[@]}" ${MPIRUN_ARGS:-} "$BIN" "${args[@]}" </dev/null &
mpirun_pid=$!
trap 'forward USR1 USR1' USR1
trap 'forward TERM TERM' TERM
trap 'forward INT TERM' INT
trap 'forward HUP TERM' HUP
# wait returns early when a trapped signal arrives: wait again until mpirun
# itself has ended (127: its status was already collected).
rc=0 prev=
while :; do
  interrupted=0
  set +e
  wait "$mpirun_pid"
  rc=$?
  set -e
  if [ "$rc" -eq 127 ] && [ -n "$prev" ]; then rc=$prev; break; fi
  [ "$interrupted" -eq 1 ] || break
  prev=$rc
done
# A STOP file this script made and the run did not consume (it ended first).
[ -z "$made_stop" ] || rm -f "$made_stop"
recorded=$(cat "$status_file" 2>/dev/null || true)
if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ] && [ "$recorded" = 3 ]; then
  echo "launch: mpirun exited $rc, but the trainer saved a checkpoint and stopped (exit 3)" >&2
  rc=3
fi
exit "$rc"
