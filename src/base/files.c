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
    int fd = open(path, O_RDONLY);
    if (fd < 0) FAIL("cannot open %s to flush it: %s", path, strerror(errno));
    /* Some file systems refuse fsync on directories (EINVAL): nothing to do there. */
    if (fsync(fd) != 0 && errno != EINVAL) FAIL("fsync %s: %s", path, strerror(errno));
    close(fd);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    if (remove(path) != 0) FAIL("cannot remove %s: %s", path, strerror(errno));
    return 0;
}

void remove_tree(const char *path) {
    if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        FAIL("cannot remove %s: %s", path, strerror(errno));
}
