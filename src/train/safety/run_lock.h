/* One job per run directory. Rank 0 holds an exclusive flock(2) on the run
 * directory itself and on <run_dir>/gpt2_ddp.lock for the whole run; the
 * file says who holds it (host, pid, start time, Slurm job). A second run on
 * the same directory finds a lock taken and every one of its ranks exits 2
 * at once, naming the holder, before it has touched anything there.
 *
 * The directory's lock cannot be fooled by deleting the file: a live holder
 * is found even when its file was deleted and recreated (on NFS, Lustre and
 * GPFS a directory's flock is seen on its own node only; across nodes the
 * file's lock is what holds, see docs/failure-modes.md). The file's lock is
 * re-checked after it is taken: if the path no longer names the locked file
 * (its holder removed it while ending), it is taken again.
 *
 * The kernel drops both locks when the holder's process ends, however it
 * ends (exit, crash, SIGKILL), so a lock never outlives its run; the
 * descriptors are close-on-exec, so no child process can inherit them. The
 * holder removes the file when it ends (a clean end, a stop, exit 2 or 4,
 * and any failure that ends it through base/fail.h); a file that stays
 * (SIGKILL, a crash) holds a dead pid and no lock. A file system without
 * flock (Lustre mounted without -o flock) gets a warning and the run goes on
 * unlocked. */
#ifndef GPT2_TRAIN_SAFETY_RUN_LOCK_H
#define GPT2_TRAIN_SAFETY_RUN_LOCK_H

#include "dist/group.h"

#define RUN_LOCK_FILE "gpt2_ddp.lock"

typedef struct {
    int fd;          /* rank 0 while it holds the file's lock, else -1 */
    int dir_fd;      /* rank 0 while it holds the directory's lock, else -1 */
    char path[2048]; /* the lock file */
} run_lock;

/* Collective over the job. run_dir must exist. Returns with the lock
 * held by rank 0, or ends every rank: exit 2 when another run holds it, 1
 * when the lock file cannot be created or written. */
void run_lock_acquire(run_lock *lock, const char *run_dir, const dist_group *job);
/* Collective, touches nothing: ends every rank with the message of
 * run_lock_acquire (exit 2) when a live run holds run_dir's lock, so that
 * a start decided before the lock is taken (what the directory holds)
 * first hears of the run that holds it. Nothing when run_dir does not
 * exist. The lock is taken only by run_lock_acquire. */
void run_lock_check_free(const char *run_dir, const dist_group *job);
/* Removes the lock file and releases the lock (also done by the process
 * ending, but for the file). */
void run_lock_release(run_lock *lock);
#endif
