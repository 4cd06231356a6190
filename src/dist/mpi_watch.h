/* The watched wait: how CPU ranks wait for each other in MPI, so that a rank
 * that stops answering (SIGSTOP, a debugger, a hang) ends the job with a
 * message naming it and its host instead of leaving the others waiting
 * forever. On GPUs the NCCL watchdog (nccl_watchdog.h) does this job: there
 * the watch stays unarmed and a wait is a plain MPI_Waitall.
 *
 * MPI is called from the main thread only (plain MPI_Init), so the watch
 * lives inside the wait instead of in a thread. A wait polls its requests;
 * once it has lasted a second it tells every other rank, once a second, that
 * it is alive and waiting (one byte on the watch's own communicator), and
 * reads what the others tell it. A rank busy outside MPI says nothing, as a
 * stopped one: the timeout must exceed the longest such stretch (a step, an
 * evaluation, rank 0's checkpoint save while the others wait at its barrier).
 * When the operation has been pending for the timeout, the lowest rank that
 * still answers names the silent ones with their hosts and ends the job
 * (fail.h: MPI_Abort, exit 1); the others do the same a few seconds later
 * should it not manage. Short waits send nothing.
 *
 * One watch per process, the job's (as fail.c's job): base's failure path
 * reaches it through fail_set_job_wait (fail_job.h). */
#ifndef GPT2_DIST_MPI_WATCH_H
#define GPT2_DIST_MPI_WATCH_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The least timeout: a waiting rank needs a few seconds to hear who else
 * still answers. */
#define MPI_WATCH_MIN_TIMEOUT_S 5.0

/* Collective over job (dist_init, a world of more than one): the watch's
 * communicator and every rank's host name. Unarmed until mpi_watch_arm. */
void mpi_watch_init(MPI_Comm job, const char *host);

/* Local, alike on every rank (the end of the run then exchanges a last
 * message): from now on a wait pending for timeout_s ends the job. */
void mpi_watch_arm(double timeout_s);

/* What the run is doing, for the message ("step 12"); "" for nothing. */
void mpi_watch_phase(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Completes reqs[0..n), requests of an operation over comm; `what` names it
 * in the message ("a barrier", "the gradient reduction"). Watched when armed. */
void mpi_watch_wait(int n, MPI_Request *reqs, MPI_Comm comm, const char *what);

/* Collective (dist_free, before MPI_Finalize): reads every message still on
 * its way, so none is left over, and frees the communicator. */
void mpi_watch_free(void);

#ifdef __cplusplus
}
#endif
#endif
