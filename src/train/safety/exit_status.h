/* The trainer's exit code, recorded for a launch script whose launcher
 * cannot pass it on. Open MPI's mpirun exits 1 whenever it was signalled
 * itself (SIGTERM, SIGINT), whatever its ranks returned, so a run that
 * stopped with a checkpoint (exit 3) would look failed to a scheduler.
 * launch/local.sh and launch/slurm.sbatch set GPT2_EXIT_STATUS_FILE to a
 * path of their own for each launch; rank 0 writes its exit code there
 * (one line, "3\n") as it ends, and the script prefers that code to
 * mpirun's. Nothing is written when the variable is not set. */
#ifndef GPT2_TRAIN_SAFETY_EXIT_STATUS_H
#define GPT2_TRAIN_SAFETY_EXIT_STATUS_H

#include <stdbool.h>

#define EXIT_STATUS_ENV "GPT2_EXIT_STATUS_FILE"

/* Rank 0 (the others return): writes code to $GPT2_EXIT_STATUS_FILE
 * (through a temporary file and a rename, so a reader sees all of it or
 * nothing); a path that cannot be written gets a warning, not an error. */
void exit_status_record(int rank, int code);

/* Open MPI's mpirun started this process with no launch script of ours
 * around it (no GPT2_EXIT_STATUS_FILE, no Slurm job): Ctrl-C then reaches
 * mpirun, which kills the ranks about two seconds later, and a clean stop's
 * exit 3 is announced by mpirun's "non-zero exit code" banner. Rank 0 says
 * both in one line each (at the start, at the stop). */
bool exit_status_plain_mpirun(void);
#endif
