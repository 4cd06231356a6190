/* The run directory's lock (see run_lock.h). */
#include "train/safety/run_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fail.h"
#include "base/files.h"

enum { MSG_MAX = 8192, RECHECK_TRIES = 20 };

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
    if (o == 0) snprintf(out, len, "its holder has not written its name yet");
}

static bool flock_unsupported(int err) {
    return err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS || err == EINVAL || err == EBADF;
}

static int refuse(const char *run_dir, const char *holder, const char *path, char *msg,
                  size_t len) {
    snprintf(msg, len,
             "run directory %s is in use by another gpt2_ddp run (%s; lock file %s). Two runs in "
             "one directory would overwrite each other's checkpoints and mix their metrics: wait "
             "for it to end, stop it (touch %s/STOP), or give this run another run_name or "
             "out_dir",
             run_dir, holder, path, run_dir);
    return EXIT_USAGE;
}

/* The directory's lock: 0 held (or not lockable there: dir_fd stays -1),
 * else the exit code with the reason in msg. Taken first, so that a holder
 * whose file was deleted is still found, and without creating the file. */
static int lock_dir(run_lock *lock, const char *run_dir, char *msg, size_t len) {
    int fd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return snprintf(msg, len, "cannot open the run directory %s: %s", run_dir, strerror(errno)),
               EXIT_FATAL;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        lock->dir_fd = fd;
        return 0;
    }
    const int err = errno;
    close(fd);
    if (flock_unsupported(err)) return 0; /* the file's lock alone */
    if (err != EWOULDBLOCK)
        return snprintf(msg, len, "cannot lock %s: %s", run_dir, strerror(err)), EXIT_FATAL;
    char holder[1024] = "its lock file was deleted while it runs";
    int file = open_regular(lock->path, O_RDONLY, 0, OPEN_NO_LINK, NULL, 0);
    if (file >= 0) {
        /* A file nobody holds is not the holder's: it was deleted and
         * recreated, and names nobody. */
        if (flock(file, LOCK_SH | LOCK_NB) == 0)
            snprintf(holder, sizeof holder,
                     "its lock file was deleted and recreated while it runs");
        else
            read_holder(file, holder, sizeof holder);
        close(file);
    }
    return refuse(run_dir, holder, lock->path, msg, len);
}

/* The path still names the file open as fd (its holder did not remove it
 * between our open and our flock). */
static bool still_at_path(int fd, const char *path) {
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* The file's lock: 0 held (or flock unsupported: warned), else the exit
 * code with the reason in msg. */
static int lock_file(run_lock *lock, const char *run_dir, char *msg, size_t len) {
    const char *path = lock->path;
    for (int tries = 0; tries < RECHECK_TRIES; tries++) {
        char why[4400];
        int fd = open_regular(path, O_RDWR | O_CREAT, 0644, OPEN_NO_LINK, why, sizeof why);
        if (fd < 0)
            return snprintf(msg, len, "cannot create the run directory's lock file: %s", why),
                   EXIT_FATAL;
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const int err = errno;
            if (err == EWOULDBLOCK) {
                char holder[1024];
                read_holder(fd, holder, sizeof holder);
                close(fd);
                return refuse(run_dir, holder, path, msg, len);
            }
            close(fd);
            if (flock_unsupported(err)) {
                printf("warning: run directory %s is not locked: this file system refuses flock on "
                       "%s (%s); Lustre needs the mount option -o flock, NFS v3 a lock manager. "
                       "A second run on this directory%s would not be refused\n",
                       run_dir, path, strerror(err), lock->dir_fd >= 0 ? " from another node" : "");
                return 0;
            }
            return snprintf(msg, len, "cannot lock %s: %s", path, strerror(err)), EXIT_FATAL;
        }
        if (still_at_path(fd, path)) {
            lock->fd = fd;
            return 0;
        }
        close(fd); /* locked a file already removed: open the path again */
    }
    return snprintf(msg, len, "cannot lock %s: the file was replaced %d times while locking it",
                    path, RECHECK_TRIES),
           EXIT_FATAL;
}

/* The holder's file goes with its run, but only while it is the holder's:
 * one deleted and recreated by someone else is left alone. */
static void remove_file(void *arg) {
    run_lock *lock = arg;
    if (lock->fd >= 0 && still_at_path(lock->fd, lock->path)) unlink(lock->path);
}

/* Rank 0: 0 with the locks held, else the exit code with the reason in msg. */
static int lock_on_root(run_lock *lock, const char *run_dir, char *msg, size_t len) {
    snprintf(lock->path, sizeof lock->path, "%s/%s", run_dir, RUN_LOCK_FILE);
    int status = lock_dir(lock, run_dir, msg, len);
    if (status == 0) status = lock_file(lock, run_dir, msg, len);
    if (status != 0 || lock->fd < 0) return status;
    char holder[512];
    describe_holder(holder, sizeof holder);
    const size_t n = strlen(holder);
    if (ftruncate(lock->fd, 0) != 0 || pwrite(lock->fd, holder, n, 0) != (ssize_t)n) {
        snprintf(msg, len, "cannot write the lock file %s: %s", lock->path, strerror(errno));
        return EXIT_FATAL;
    }
    /* A failure that ends the run (exit 1 or 2) removes the file too. */
    fail_cleanup_push(remove_file, lock);
    return 0;
}

void run_lock_acquire(run_lock *lock, const char *run_dir, const dist_group *job) {
    static char msg[MSG_MAX];
    const int rank = job->rank;
    lock->fd = -1;
    lock->dir_fd = -1;
    lock->path[0] = '\0';
    int status = 0;
    if (rank == 0) status = lock_on_root(lock, run_dir, msg, sizeof msg);
    group_bcast(job, &status, sizeof status, 0);
    if (status != 0) {
        if (rank == 0) run_lock_release(lock);
        fail_collective(status, "%s", msg);
    }
}

void run_lock_check_free(const char *run_dir, const dist_group *job) {
    const int rank = job->rank;
    static char msg[MSG_MAX];
    int status = 0;
    struct stat st;
    if (rank == 0 && stat(run_dir, &st) == 0 && S_ISDIR(st.st_mode)) {
        run_lock probe = {.fd = -1, .dir_fd = -1};
        snprintf(probe.path, sizeof probe.path, "%s/%s", run_dir, RUN_LOCK_FILE);
        status = lock_dir(&probe, run_dir, msg, sizeof msg);
        run_lock_release(&probe); /* the directory's lock only: no file was made */
    }
    group_bcast(job, &status, sizeof status, 0);
    if (status != 0) fail_collective(status, "%s", msg);
}

void run_lock_release(run_lock *lock) {
    if (lock->fd >= 0) {
        fail_cleanup_pop(remove_file, lock);
        remove_file(lock); /* while still locked: no other run can have it */
        flock(lock->fd, LOCK_UN);
        close(lock->fd);
        lock->fd = -1;
    }
    if (lock->dir_fd >= 0) {
        flock(lock->dir_fd, LOCK_UN);
        close(lock->dir_fd);
        lock->dir_fd = -1;
    }
}
