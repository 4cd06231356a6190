/* File-system helpers the readers and writers share: name suffixes,
 * regular files, mkdir -p (reporting or failing), fsync by name, rm -rf. */
#ifndef GPT2_BASE_FILES_H
#define GPT2_BASE_FILES_H

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
/* mkdir -p path (0755), ending the process naming the path on failure. */
void make_dirs_or_fail(const char *path);
/* fsync of a file or directory by name (ends the process on failure). */
void fsync_path(const char *path);
/* rm -rf path; a missing path is no error (ends the process naming what
 * could not be removed). */
void remove_tree(const char *path);
#endif
