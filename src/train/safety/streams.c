/* A closed standard output, noticed once (see streams.h). */
#include "train/safety/streams.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool closed;

void streams_check(const char *run_dir) {
    if (closed) return;
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return;
    const int err = errno;
    closed = true;
    /* Standard error may be the same closed pipe: then this is lost too. */
    fprintf(stderr,
            "gpt2_ddp: note: standard output is gone (%s%sthe reader of a pipe ended, or the "
            "terminal closed); the run goes on without it, its records are in %s/metrics.jsonl\n",
            err ? strerror(err) : "", err ? ": " : "", run_dir);
    fflush(stderr);
    if (!freopen("/dev/null", "w", stdout)) clearerr(stdout);
}
