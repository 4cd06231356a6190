/* One job per run directory. Rank 0 holds an exclusive flock(2) on
 * <run_dir>/gpt2_ddp.lock for the whole run; the file says who holds it
 * (host, pid, start time, Slurm job). A second run on the same directory
 * finds the lock taken and every one of its ranks exits 2 at once, naming the
 * holder, before it has touched anything there. The kernel drops the lock
 * when the holder's process ends, however it ends (exit, crash, SIGKILL), so
 * a lock never outlives its run; the descriptor is close-on-exec, so no child
 * process can inherit it. A file system without flock (Lustre mounted
 * without -o flock) gets a warning and the run goes on unlocked. */
#ifndef GPT2_TRAIN_SAFETY_RUN_LOCK_H
#define GPT2_TRAIN_SAFETY_RUN_LOCK_H

#define RUN_LOCK_FILE "gpt2_ddp.lock"

typedef struct {
    int fd; /* rank 0 while it holds the lock, else -1 */
} run_lock;

/* Collective (MPI_COMM_WORLD). run_dir must exist. Returns with the lock
 * held by rank 0, or ends every rank: exit 2 when another run holds it, 1
 * when the lock file cannot be created or written. */
void run_lock_acquire(run_lock *lock, const char *run_dir, int rank);
/* Releases the lock (also done by the process ending). */
void run_lock_release(run_lock *lock);
#endif
