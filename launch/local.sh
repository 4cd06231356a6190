#!/usr/bin/env bash
# Runs gpt2_ddp on this machine: one rank per GPU when GPUs are present and
# the binary has the CUDA backend, otherwise RANKS CPU ranks (default 1).
# usage: launch/local.sh [CONFIG.ini] [key=value ...]
#   env: RANKS (CPU ranks), BUILD_DIR (default build), MPIRUN_ARGS (extra mpirun flags)
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
if command -v nvidia-smi >/dev/null && [[ "$("$BIN" --version)" == *"cuda ("* ]]; then
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

mpi_flags=(--bind-to none -x OMP_NUM_THREADS="${OMP_NUM_THREADS:-$threads}")
[ "$(id -u)" -ne 0 ] || mpi_flags+=(--allow-run-as-root)
[ "$ranks" -le "$cores" ] || mpi_flags+=(--oversubscribe)
echo "launch: $ranks rank(s), device=$device, config $config"
exec mpirun -np "$ranks" "${mpi_flags[@]}" ${MPIRUN_ARGS:-} "$BIN" "$config" device="$device" "$@"
