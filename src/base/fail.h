/* Fatal errors: one place that names the problem (with rank and host when
 * there are several ranks, file:line under GPT2_DEBUG=1), then ends every
 * rank (MPI_Abort) so that no rank is left hanging. */
#ifndef GPT2_BASE_FAIL_H
#define GPT2_BASE_FAIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
#define FAIL_NORETURN [[noreturn]]
extern "C" {
#else
#define FAIL_NORETURN _Noreturn
#endif

/* Exit codes the trainer and tools document. */
enum {
    EXIT_FATAL = 1,     /* runtime error: I/O, data, a failed library call */
    EXIT_USAGE = 2,     /* bad config, bad command line */
    EXIT_PREEMPTED = 3, /* stopped (signal, STOP file, time limit) after saving a checkpoint */
    EXIT_NONFINITE = 4, /* max_bad_steps steps in a row had a NaN/Inf loss or gradient norm */
};

/* Prints "prog: error: message" to stderr and ends the process (and, under
 * MPI with more than one rank, the whole job). With more than one rank the
 * line names the rank: "prog [rank R/N host]: error: message"; with
 * GPT2_DEBUG=1 it also names the source: "prog: file:line: error: message". */
FAIL_NORETURN void fail_at(const char *file, int line, int exit_code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* An error every rank detects identically (a bad config): rank 0 prints the
 * message once, every rank finalizes MPI and exits with exit_code. */
FAIL_NORETURN void fail_collective(int exit_code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Collective, for an error that may differ between ranks (their
 * environments): each rank passes its own message, or NULL. When some rank
 * has one, the lowest such rank prints it (naming itself when it is not rank
 * 0, as "gpt2_ddp [rank 1/2 host]: error: ..."), and every rank finalizes
 * MPI and exits with exit_code; otherwise it returns. */
void fail_collective_any(int exit_code, const char *msg);

/* This process's rank in the job (0 before dist_init names the job,
 * base/fail_job.h, and after MPI_Finalize): for notes every rank would give alike, which rank 0 alone
 * prints. */
int fail_world_rank(void);

/* Whether GPT2_DEBUG is set (and not "0"): fail_at then names file:line. */
int fail_debug(void);

#define FAIL(...) fail_at(__FILE__, __LINE__, EXIT_FATAL, __VA_ARGS__)

/* Checks for the libraries we call; each names the failed statement. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) fail_at(__FILE__, __LINE__, EXIT_FATAL, __VA_ARGS__);                         \
    } while (0)

#define MPI_CHECK(stmt)                                                                            \
    do {                                                                                           \
        int mpi_rc_ = (stmt);                                                                      \
        if (mpi_rc_ != MPI_SUCCESS) {                                                              \
            char mpi_msg_[MPI_MAX_ERROR_STRING];                                                   \
            int mpi_len_ = 0;                                                                      \
            MPI_Error_string(mpi_rc_, mpi_msg_, &mpi_len_);                                        \
            fail_at(__FILE__, __LINE__, EXIT_FATAL, "%s failed: %s", #stmt, mpi_msg_);             \
        }                                                                                          \
    } while (0)

#define H5_CHECK(stmt)                                                                             \
    do {                                                                                           \
        if ((stmt) < 0) fail_at(__FILE__, __LINE__, EXIT_FATAL, "%s failed", #stmt);               \
    } while (0)

/* What the user can do if the work under way fails (which checkpoint to
 * fall back to, ...): while set, fail_at and fail_collective print it on a
 * line after their message. The text is copied; NULL clears it. */
void fail_set_hint(const char *hint);

/* What must not outlive a failure (a half-written .tmp file, the run's lock
 * file): fail_at, fail_collective and fail_collective_any call each
 * function pushed, newest first, before the process ends. pop removes the pair again. */
typedef void (*fail_cleanup_fn)(void *arg);
void fail_cleanup_push(fail_cleanup_fn fn, void *arg);
void fail_cleanup_pop(fail_cleanup_fn fn, void *arg);

/* A thread that must not end the process (a checkpoint's background
 * writer): while a catcher is set on the calling thread, fail_at (FAIL,
 * CHECK, H5_CHECK) writes its message into the catcher and longjmps to it
 * instead of printing and ending the process; the thread's owner then
 * reports the message collectively. It calls no MPI and runs no cleanups.
 *   fail_catcher c;
 *   if (setjmp(c.env) == 0) { fail_catch_set(&c); work(); fail_catch_set(NULL); }
 *   else { ... c.msg ... }  (the catcher is cleared before the jump) */
typedef struct {
    jmp_buf env;
    char msg[2048];
} fail_catcher;
void fail_catch_set(fail_catcher *catcher);

/* For functions that return an error to their caller instead of ending the
 * process: writes the message into err (when err is not NULL) and returns -1. */
int set_error(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif
#endif
