# Sourced by the multi-GPU tests (tests/dist/nccl_*.sh): how many GPUs there
# are, skipping (exit 77) when too few, mpirun with NCCL's environment, and a
# python3 that has h5py and numpy.
source tests/lib/mpi_env.sh
source tests/lib/ckpt_lib.sh
# NVLink multicast (NVLS) stays off: on shared machines a program using it can
# take the host's GPUs out of service. mpirun -x hands it to every rank.
export NCCL_NVLS_ENABLE=0

gpus_visible() { nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true; }

# need_gpus N: exit 77 (ctest: skipped) when fewer than N GPUs are visible.
need_gpus() {
  local n; n=$(gpus_visible)
  if [ "${n:-0}" -lt "$1" ]; then echo "SKIP: needs $1 GPUs, ${n:-0} visible"; exit 77; fi
}

# gpu_run -np N BIN ARGS...: one rank per GPU (each picks its node-local one).
gpu_run() { mpirun --bind-to none -x NCCL_NVLS_ENABLE "$@"; }

# The python3 that can read HDF5 (the device image's venv, or Debian's).
py() {
  local p
  for p in python3 /usr/bin/python3; do
    if "$p" -c 'import h5py, numpy' 2>/dev/null; then "$p" "$@"; return; fi
  done
  echo "no python3 with h5py and numpy"; return 1
}
