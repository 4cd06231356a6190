/* Pre-emption: SIGTERM and SIGUSR1 (what Slurm sends before it ends or
 * requeues a job; Debian's mpirun 4.1.4 forwards SIGUSR1 to every rank,
 * Ubuntu's 4.1.6 did not: launch/ scripts forward it themselves), SIGINT
 * (Ctrl-C; a second one ends the process at once) and SIGHUP (the terminal
 * closed) ask the run to stop. SIGPIPE is ignored (see streams.h).
 * mpirun itself, on SIGTERM or SIGINT, sends its ranks SIGCONT, SIGTERM a
 * second later and SIGKILL a second after that (Open MPI 4.1's
 * odls_base_sigkill_timeout), then exits 1: launch/local.sh keeps such
 * signals from mpirun and passes them to the ranks. The handler only sets a
 * flag; the loop finishes its step, all ranks agree on that step
 * (run_stop.h, with the STOP file and the time limit), save a checkpoint and
 * exit with EXIT_PREEMPTED (3). */
#ifndef GPT2_TRAIN_SAFETY_SIGNALS_H
#define GPT2_TRAIN_SAFETY_SIGNALS_H

void signals_install(void);
/* The stop signal this rank received, 0 when none. */
int signals_received(void);
#endif
