/* The job a failure ends: every rank that fail_at, fail_collective and
 * fail_collective_any (fail.h) reach. dist_init names it once MPI is up
 * (base knows no groups of ranks: dist does); until then, and after
 * MPI_Finalize, a process is a job of its own. Apart from fail.h so that
 * the kernels, which include fail.h, need no MPI headers. */
#ifndef GPT2_BASE_FAIL_JOB_H
#define GPT2_BASE_FAIL_JOB_H

#include <mpi.h>

void fail_set_job(MPI_Comm job);
#endif
