/* File-system helpers the readers and writers share: name suffixes,
 * regular files, and mkdir -p that reports instead of ending the process. */
#ifndef GPT2_IO_FILES_H
#define GPT2_IO_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* s ends with suffix. */
bool path_ends_with(const char *s, const char *suffix);
/* path names a regular file (after links). */
bool is_regular_file(const char *path);
/* mkdir -p with mode (under the umask): 0, or -1 with the reason in err
 * ("cannot create P: ...", or "P exists and is not a directory"). */
int make_dirs(const char *path, mode_t mode, char *err, size_t err_len);
#endif
