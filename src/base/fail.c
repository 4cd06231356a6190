/* Fatal error reporting shared by the trainer and the tools (see fail.h). */
#define _GNU_SOURCE /* program_invocation_short_name */
#include "base/fail.h"

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fail_job.h"

static MPI_Comm job_comm = MPI_COMM_NULL;

static fail_wait_fn job_wait;

void fail_set_job(MPI_Comm job) { job_comm = job; }

void fail_set_job_wait(fail_wait_fn wait) { job_wait = wait; }

/* The job's communicator while MPI is up and dist_init named it. */
static int job_is_up(void) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    return initialized && !finalized && job_comm != MPI_COMM_NULL;
}

static void where_am_i(int *rank, int *size, char *host, size_t host_len) {
    *rank = 0;
    *size = 1;
    if (job_is_up()) {
        MPI_Comm_rank(job_comm, rank);
        MPI_Comm_size(job_comm, size);
    }
    if (gethostname(host, host_len) != 0) snprintf(host, host_len, "?");
    host[host_len - 1] = '\0';
}

/* " [rank 1/2 host]": how an error line names the rank that tells it, after
 * the program's name and before "error:" (fail_at, fail_collective_any). */
static void rank_tag(char *tag, size_t tag_len, int rank, int size, const char *host) {
    snprintf(tag, tag_len, " [rank %d/%d %s]", rank, size, host);
}

enum { HINT_MAX = 4096, CLEANUP_MAX = 8 };
static char fail_hint[HINT_MAX];
static struct {
    fail_cleanup_fn fn;
    void *arg;
} cleanups[CLEANUP_MAX];
static int n_cleanups;

void fail_set_hint(const char *hint) {
    snprintf(fail_hint, sizeof fail_hint, "%s", hint ? hint : "");
}

void fail_cleanup_push(fail_cleanup_fn fn, void *arg) {
    if (n_cleanups == CLEANUP_MAX) {
        fprintf(stderr, "fail_cleanup_push: more than %d at once\n", CLEANUP_MAX);
        abort();
    }
    cleanups[n_cleanups].fn = fn;
    cleanups[n_cleanups++].arg = arg;
}

void fail_cleanup_pop(fail_cleanup_fn fn, void *arg) {
    for (int i = n_cleanups - 1; i >= 0; i--) {
        if (cleanups[i].fn != fn || cleanups[i].arg != arg) continue;
        for (int j = i + 1; j < n_cleanups; j++) cleanups[j - 1] = cleanups[j];
        n_cleanups--;
        return;
    }
}

/* Each cleanup runs once, even if it fails itself. */
static void run_cleanups(void) {
    while (n_cleanups > 0) {
        n_cleanups--;
        cleanups[n_cleanups].fn(cleanups[n_cleanups].arg);
    }
}

int fail_world_rank(void) {
    int rank, size;
    char host[256];
    where_am_i(&rank, &size, host, sizeof host);
    return rank;
}

int fail_debug(void) {
    const char *v = getenv("GPT2_DEBUG");
    return v && v[0] && strcmp(v, "0") != 0;
}

static _Thread_local fail_catcher *thread_catcher;

void fail_catch_set(fail_catcher *catcher) { thread_catcher = catcher; }

_Noreturn void fail_at(const char *file, int line, int exit_code, const char *fmt, ...) {
    if (thread_catcher) {
        fail_catcher *c = thread_catcher;
        thread_catcher = NULL;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->msg, sizeof c->msg, fmt, ap);
        va_end(ap);
        (void)file, (void)line, (void)exit_code;
        longjmp(c->env, 1);
    }
    int rank, size;
    char host[256];
    where_am_i(&rank, &size, host, sizeof host);
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* The rank prefix only says something when there are ranks to tell
     * apart; the source position is for whoever debugs the program, not for
     * its user (GPT2_DEBUG=1 shows it). One write, as in fail_collective. */
    char who[320] = "";
    if (size > 1) rank_tag(who, sizeof who, rank, size, host);
    char where[512] = "";
    if (fail_debug()) snprintf(where, sizeof where, " %s:%d:", file, line);
    fflush(stdout);
    fprintf(stderr, "%s%s:%s error: %s\n%s%s%s", program_invocation_short_name, who, where, msg,
            fail_hint[0] ? "  " : "", fail_hint, fail_hint[0] ? "\n" : "");
    fflush(stderr);
    run_cleanups();
    fflush(stdout);
    if (job_is_up() && size > 1) MPI_Abort(job_comm, exit_code);
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
        fprintf(stderr, "%s: error: %s\n%s%s%s", program_invocation_short_name, msg,
                fail_hint[0] ? "  " : "", fail_hint, fail_hint[0] ? "\n" : "");
        fflush(stderr);
    }
    run_cleanups();
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
    if (size > 1) {
        MPI_Request req;
        MPI_Iallreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, job_comm, &req);
        if (job_wait)
            job_wait(1, &req, job_comm, "the check whether any rank failed");
        else
            MPI_Waitall(1, &req, MPI_STATUSES_IGNORE);
    }
    if (first == size) return;
    if (rank == first) {
        /* Rank 0 speaks for the job; another rank names itself as fail_at
         * does, so that every error line holds "error: ". */
        char who[320] = "";
        if (rank != 0) rank_tag(who, sizeof who, rank, size, host);
        fflush(stdout);
        fprintf(stderr, "%s%s: error: %s\n", program_invocation_short_name, who, msg);
        fflush(stderr);
    }
    run_cleanups(); /* as fail_collective: a refused start leaves no lock file */
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
