/* The job a failure ends: every rank that fail_at, fail_collective and
 * fail_collective_any (fail.h) reach. dist_init names it once MPI is up
 * (base knows no groups of ranks: dist does); until then, and after
 * MPI_Finalize, a process is a job of its own. Apart from fail.h so that
 * the kernels, which include fail.h, need no MPI headers. */
#ifndef GPT2_BASE_FAIL_JOB_H
#define GPT2_BASE_FAIL_JOB_H

#include <mpi.h>

void fail_set_job(MPI_Comm job);

/* How fail_collective_any waits for its agreement over the job: dist's
 * watched wait (dist/mpi_watch.h), so that a stopped rank cannot hang it
 * either; NULL (the default): MPI_Waitall. */
typedef void (*fail_wait_fn)(int n, MPI_Request *reqs, MPI_Comm comm, const char *what);
void fail_set_job_wait(fail_wait_fn wait);
#endif
