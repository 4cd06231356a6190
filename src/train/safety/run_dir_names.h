/* The names a run writes in its run directory, checked before it starts:
 * something else under one of them (a directory named `latest`, a FIFO
 * named `metrics.jsonl`, a symbolic link where the run appends) would fail
 * the run at its first save, after the training time is spent, or redirect
 * a write out of the directory. The writers themselves never follow a link
 * (base/files.h, open_regular); this check says what is wrong, and the fix,
 * before anything is read or written, with exit 2 on every rank. */
#ifndef GPT2_TRAIN_SAFETY_RUN_DIR_NAMES_H
#define GPT2_TRAIN_SAFETY_RUN_DIR_NAMES_H

#include <stddef.h>

#include "dist/group.h"

/* 0, or -1 with the first problem and its fix in msg (no MPI). */
int run_dir_names_check(const char *run_dir, char *msg, size_t len);
/* Rank 0 checks; every rank of job exits 2 on a problem. */
void run_dir_names_check_or_fail(const dist_group *job, const char *run_dir);
#endif
