/* Pre-emption: SIGTERM and SIGUSR1 (what Slurm sends before it ends or
 * requeues a job; mpirun forwards SIGUSR1 to every rank) ask the run to
 * stop. The handler only sets a flag; the loop finishes its step, all ranks
 * agree on that step (one all-reduce of the flag), save a checkpoint and
 * exit with EXIT_PREEMPTED (3). */
#ifndef GPT2_TRAIN_SIGNALS_H
#define GPT2_TRAIN_SIGNALS_H

#include <stdbool.h>

void signals_install(void);
/* The stop signal this rank received, 0 when none. */
int signals_received(void);
/* Collective (MPI_COMM_WORLD): true on every rank as soon as any rank has
 * received a stop signal, so that all stop after the same step. */
bool signals_stop_agreed(void);
#endif
