/* The run directory's lock (see run_lock.h). */
#include "train/safety/run_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "base/fail.h"

enum { MSG_MAX = 3072 };

/* What the holder writes into the lock file, one "key value" per line. */
static void describe_holder(char *buf, size_t len) {
    char host[256] = "?", when[64] = "?";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    const char *job = getenv("SLURM_JOB_ID");
    snprintf(buf, len, "host %s\npid %ld\nstarted %s\n%s%s%s", host, (long)getpid(), when,
             job ? "slurm_job " : "", job ? job : "", job ? "\n" : "");
}

/* "host vm, pid 123, started ..., Slurm job 42" from the holder's file. */
static void read_holder(int fd, char *out, size_t len) {
    char text[1024];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0) {
        snprintf(out, len, "its holder has not written its name yet");
        return;
    }
    text[n] = '\0';
    size_t o = 0;
    out[0] = '\0';
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && o < len;
         line = strtok_r(NULL, "\n", &save)) {
        char *space = strchr(line, ' ');
        if (!space) continue;
        *space = '\0';
        const char *key = strcmp(line, "slurm_job") == 0 ? "Slurm job" : line;
        o += snprintf(out + o, len - o, "%s%s %s", o ? ", " : "", key, space + 1);
    }
}

/* Rank 0: 0 with the lock held (or flock unsupported: warned), else the
 * exit code with the reason in msg. */
static int lock_on_root(run_lock *lock, const char *run_dir, char *msg, size_t len) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", run_dir, RUN_LOCK_FILE);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return snprintf(msg, len, "cannot create the run directory's lock file %s: %s", path,
                        strerror(errno)),
               EXIT_FATAL;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        if (err == EWOULDBLOCK) {
            char holder[1024];
            read_holder(fd, holder, sizeof holder);
            close(fd);
            snprintf(msg, len,
                     "run directory %s is in use by another gpt2_ddp run (%s; lock file %s). Two "
                     "runs in one directory would overwrite each other's checkpoints and mix "
                     "their metrics: wait for it to end, stop it (touch %s/STOP), or give this "
                     "run another run_name or out_dir",
                     run_dir, holder, path, run_dir);
            return EXIT_USAGE;
        }
        close(fd);
        if (err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS || err == EINVAL) {
            printf("warning: cannot lock %s (%s): this file system does not support flock "
                   "(Lustre needs -o flock, NFS a lock manager), so a second run on this "
                   "directory would not be refused\n",
                   path, strerror(err));
            return 0;
        }
        return snprintf(msg, len, "cannot lock %s: %s", path, strerror(err)), EXIT_FATAL;
    }
    char holder[512];
    describe_holder(holder, sizeof holder);
    const size_t n = strlen(holder);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, holder, n, 0) != (ssize_t)n) {
        snprintf(msg, len, "cannot write the lock file %s: %s", path, strerror(errno));
        close(fd);
        return EXIT_FATAL;
    }
    lock->fd = fd;
    return 0;
}

void run_lock_acquire(run_lock *lock, const char *run_dir, int rank) {
    static char msg[MSG_MAX];
    lock->fd = -1;
    int status = 0;
    if (rank == 0) status = lock_on_root(lock, run_dir, msg, sizeof msg);
    MPI_CHECK(MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (status != 0) fail_collective(status, "%s", msg);
}

void run_lock_release(run_lock *lock) {
    if (lock->fd < 0) return;
    flock(lock->fd, LOCK_UN);
    close(lock->fd);
    lock->fd = -1;
}
