# Sourced by the multi-rank tests: mpirun as root in CI containers, and a
# launcher that oversubscribes the two cores of a CI machine.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
mpi_run() { mpirun --bind-to none "$@"; }
