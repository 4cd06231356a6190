/* File-system helpers the readers and writers share: name suffixes,
 * regular files, mkdir -p (reporting or failing), fsync by name, rm -rf. */
#ifndef GPT2_BASE_FILES_H
#define GPT2_BASE_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* s ends with suffix. */
bool path_ends_with(const char *s, const char *suffix);
/* path names a regular file (after links). */
bool is_regular_file(const char *path);
/* What a stat mode is, for messages: "a FIFO", "a directory", ... */
const char *file_kind_name(mode_t mode);
/* Flags of open_regular besides open(2)'s. */
enum { OPEN_NO_LINK = 1, OPEN_REPLACE = 2 };
/* open(2) that only ever yields a regular file and never blocks in the open
 * itself: a FIFO (which would wait for a writer), a device, a socket or a
 * directory is refused with -1 and err naming the path and what it is. With
 * OPEN_NO_LINK a symbolic link as the last component is refused too (files
 * the run writes in its own directory: a link there must not redirect a
 * write elsewhere). OPEN_REPLACE creates the file afresh (O_CREAT | O_EXCL,
 * never through a link): whatever is at path that is not a directory is
 * removed first, as remove_stale_file does. The descriptor is close-on-exec
 * and blocking. */
int open_regular(const char *path, int flags, mode_t mode, int how, char *err, size_t err_len);
/* Makes room for a file to be created at path: a file, link, FIFO or socket
 * there is removed (a link itself, not its target); 0, or -1 with err naming
 * path when it is a directory or cannot be removed. */
int remove_stale_file(const char *path, char *err, size_t err_len);
/* fopen(3) over open_regular ("r", "w", "a", with an optional "+"). */
FILE *fopen_regular(const char *path, const char *fmode, int how, char *err, size_t err_len);
/* Why open_regular (or fopen_regular) just failed on path with errno
 * err_no, without the path, for messages that name it themselves: "a FIFO
 * (named pipe), not a regular file", or strerror(err_no). Returns buf. */
const char *open_regular_reason(const char *path, int err_no, char *buf, size_t len);
/* mkdir -p with mode (under the umask): 0, or -1 with the reason in err
 * ("cannot create P: ...", or "P exists and is not a directory"). */
int make_dirs(const char *path, mode_t mode, char *err, size_t err_len);
/* mkdir -p path (0755), ending the process naming the path on failure. */
void make_dirs_or_fail(const char *path);
/* fsync of a file or directory by name (ends the process on failure). */
void fsync_path(const char *path);
/* rm -rf path (a link is removed, not followed); a missing path is no
 * error: 0, or -1 with err naming what could not be removed. */
int try_remove_tree(const char *path, char *err, size_t err_len);
/* The same, ending the process naming what could not be removed. */
void remove_tree(const char *path);
#endif
