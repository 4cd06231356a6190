# Sourced by the multi-rank tests: mpirun as root in CI containers, and a
# launcher that oversubscribes the two cores of a CI machine.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
mpi_run() { mpirun --bind-to none "$@"; }
# The start of an error line whichever rank tells it, for grep -E: rank 0's
# collective errors read "gpt2_ddp: error:", while one that only some ranks
# saw (a read, a write of their own) comes from the first of them
# (fail_collective_any) as "gpt2_ddp [rank R/N host]: error:", and which
# rank that is can depend on timing.
# shellcheck disable=SC2034 # read by the scripts that source this one
ERROR_ANY_RANK='gpt2_ddp( \[rank [0-9]+/[0-9]+ [^]]+\])?: error:'
