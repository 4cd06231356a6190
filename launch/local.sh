#!/usr/bin/env bash
# Runs gpt2_ddp on this machine: one rank per GPU when GPUs are present and
# the binary has the CUDA backend, otherwise RANKS CPU ranks (default 1).
# A config whose total_batch does not divide over that many ranks (tiny.ini's
# 1024 tokens on 3 or 8 ranks) is fitted unless the command line sets
# total_batch or micro_batch: a smaller micro_batch when one down to 1/8 of
# it keeps total_batch (the same run), else the nearest total_batch that
# divides; the launcher says which.
# usage: launch/local.sh [CONFIG.ini] [key=value ...]
#   env: RANKS (CPU ranks), DEVICE=cpu (CPU ranks even where GPUs are),
#        BUILD_DIR (default build), MPIRUN_ARGS (extra mpirun flags)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BIN="$BUILD_DIR/gpt2_ddp"
[ -x "$BIN" ] || { echo "launch: $BIN not found; run tools/setup.sh first" >&2; exit 2; }

config=configs/tiny.ini
if [ $# -gt 0 ] && [[ "$1" != *=* ]]; then
  config=$1; shift
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
if [[ " $* " != *" total_batch="* && " $* " != *" micro_batch="* ]] &&
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
exec mpirun -np "$ranks" "${mpi_flags[@]}" ${MPIRUN_ARGS:-} "$BIN" "$config" device="$device" "${fit[@]}" "$@"
