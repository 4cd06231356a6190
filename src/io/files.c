/* File-system helpers (see files.h). */
#include "io/files.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "dist/fail.h"

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
