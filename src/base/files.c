/* File-system helpers (see files.h). */
#define _GNU_SOURCE /* nftw */
#include "base/files.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fail.h"

bool path_ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

bool is_regular_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

const char *file_kind_name(mode_t mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

int remove_stale_file(const char *path, char *err, size_t err_len) {
    struct stat st;
    if (lstat(path, &st) != 0) return 0;
    if (S_ISDIR(st.st_mode))
        return set_error(err, err_len,
                         "%s is a directory where a file is to be written: remove or rename it",
                         path);
    if (unlink(path) != 0 && errno != ENOENT)
        return set_error(err, err_len, "cannot remove the stale %s: %s", path, strerror(errno));
    return 0;
}

int open_regular(const char *path, int flags, mode_t mode, int how, char *err, size_t err_len) {
    if (how & OPEN_REPLACE) {
        if (remove_stale_file(path, err, err_len) != 0) return -1;
        flags |= O_CREAT | O_EXCL;
        how |= OPEN_NO_LINK;
    }
    /* O_NONBLOCK: opening a FIFO would otherwise wait for its other end
     * (forever, and a signal's handler restarts the call); cleared below. */
    int extra = O_NONBLOCK | O_CLOEXEC | ((how & OPEN_NO_LINK) ? O_NOFOLLOW : 0);
    int fd = open(path, flags | extra, mode);
    if (fd < 0) {
        const int e = errno;
        struct stat st;
        if (e == ELOOP && (how & OPEN_NO_LINK) && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
            set_error(err, err_len,
                      "%s is a symbolic link: the run writes only its own files there "
                      "(remove the link)",
                      path);
        else if ((e == ENXIO || e == EISDIR) && stat(path, &st) == 0)
            set_error(err, err_len, "%s is %s, not a regular file", path,
                      file_kind_name(st.st_mode));
        else
            set_error(err, err_len, "cannot open %s: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const int e = errno;
        set_error(err, err_len, "%s is %s, not a regular file", path,
                  fstat(fd, &st) == 0 ? file_kind_name(st.st_mode) : strerror(e));
        close(fd);
        errno = EINVAL;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        set_error(err, err_len, "cannot open %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

FILE *fopen_regular(const char *path, const char *fmode, int how, char *err, size_t err_len) {
    const bool plus = strchr(fmode, '+') != NULL;
    int flags;
    switch (fmode[0]) {
    case 'r': flags = plus ? O_RDWR : O_RDONLY; break;
    case 'w': flags = (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC; break;
    case 'a': flags = (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_APPEND; break;
    default: set_error(err, err_len, "fopen_regular: bad mode %s", fmode); return NULL;
    }
    const int fd = open_regular(path, flags, 0644, how, err, err_len);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, fmode);
    if (!f) {
        set_error(err, err_len, "cannot open %s: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

const char *open_regular_reason(const char *path, int err_no, char *buf, size_t len) {
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        snprintf(buf, len, "%s, not a regular file", file_kind_name(st.st_mode));
    else
        snprintf(buf, len, "%s", strerror(err_no));
    return buf;
}

int make_dirs(const char *path, mode_t mode, char *err, size_t err_len) {
    char buf[4200];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return set_error(err, err_len, "path too long: %s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return set_error(err, err_len, "cannot create %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, mode) != 0 && errno != EEXIST)
        return set_error(err, err_len, "cannot create %s: %s", buf, strerror(errno));
    struct stat st;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
        return set_error(err, err_len, "%s exists and is not a directory", buf);
    return 0;
}

void make_dirs_or_fail(const char *path) {
    char err[4096 + 256];
    if (make_dirs(path, 0755, err, sizeof err) != 0) FAIL("%s", err);
}

void fsync_path(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not block it */
    if (fd < 0) FAIL("cannot open %s to flush it: %s", path, strerror(errno));
    /* Some file systems refuse fsync on directories (EINVAL): nothing to do there. */
    if (fsync(fd) != 0 && errno != EINVAL) FAIL("fsync %s: %s", path, strerror(errno));
    close(fd);
}

/* nftw's callback has no argument of its own: the first failure of this
 * thread's walk is kept here. */
static _Thread_local char remove_failure[4400];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    if (remove(path) == 0 || errno == ENOENT) return 0;
    snprintf(remove_failure, sizeof remove_failure, "cannot remove %s: %s", path, strerror(errno));
    return 1;
}

int try_remove_tree(const char *path, char *err, size_t err_len) {
    remove_failure[0] = '\0';
    const int rc = nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (rc == 0 || (rc < 0 && errno == ENOENT)) return 0;
    if (remove_failure[0]) return set_error(err, err_len, "%s", remove_failure);
    return set_error(err, err_len, "cannot remove %s: %s", path, strerror(errno));
}

void remove_tree(const char *path) {
    char err[4400];
    if (try_remove_tree(path, err, sizeof err) != 0) FAIL("%s", err);
}
