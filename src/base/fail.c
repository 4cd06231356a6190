/* Fatal error reporting shared by the trainer and the tools (see fail.h). */
#define _GNU_SOURCE /* program_invocation_short_name */
#include "base/fail.h"

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void where_am_i(int *rank, int *size, char *host, size_t host_len) {
    int initialized = 0, finalized = 0;
    *rank = 0;
    *size = 1;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) {
        MPI_Comm_rank(MPI_COMM_WORLD, rank);
        MPI_Comm_size(MPI_COMM_WORLD, size);
    }
    if (gethostname(host, host_len) != 0) snprintf(host, host_len, "?");
    host[host_len - 1] = '\0';
}

_Noreturn void fail_at(const char *file, int line, int exit_code, const char *fmt, ...) {
    int rank, size;
    char host[256];
    where_am_i(&rank, &size, host, sizeof host);
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s [rank %d/%d %s]: %s:%d: error: %s\n", program_invocation_short_name, rank,
            size, host, file, line, msg);
    fflush(stderr);
    fflush(stdout);
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized && size > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
    exit(exit_code);
}

_Noreturn void fail_collective(int exit_code, const char *fmt, ...) {
    int rank, size;
    char host[256];
    where_am_i(&rank, &size, host, sizeof host);
    if (rank == 0) {
        /* One write: stderr is unbuffered, and pieces written one by one can
         * be split by stdout's lines where the launcher merges the two. */
        char msg[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fflush(stdout);
        fprintf(stderr, "%s: error: %s\n", program_invocation_short_name, msg);
        fflush(stderr);
    }
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Finalize();
    exit(exit_code);
}

void fail_collective_any(int exit_code, const char *msg) {
    int rank, size;
    char host[256];
    where_am_i(&rank, &size, host, sizeof host);
    int first = msg ? rank : size;
    if (size > 1) MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == size) return;
    if (rank == first) {
        fflush(stdout);
        if (rank == 0)
            fprintf(stderr, "%s: error: %s\n", program_invocation_short_name, msg);
        else
            fprintf(stderr, "%s: error [rank %d/%d %s]: %s\n", program_invocation_short_name, rank,
                    size, host, msg);
        fflush(stderr);
    }
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Finalize();
    exit(exit_code);
}

int set_error(char *err, size_t err_len, const char *fmt, ...) {
    if (err && err_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return -1;
}
