/* The NCCL watchdog: a thread that ends this rank when the job cannot go on.
 *
 * A rank that dies or stops responding leaves the others' NCCL kernels
 * waiting forever, and their host blocked in some stream synchronisation, or
 * in an MPI call of the loop (the per-step stop agreement, checkpoint
 * barriers). The watchdog keeps an event after every collective and the host
 * time it was posted. It gives up when an operation is still pending after
 * timeout_s, when a blocking call (init, destroy) lasts as long, when the host
 * has not called the communicator for as long (every step calls it several
 * times: a longer silence is a wait on a peer outside NCCL), or on an
 * asynchronous NCCL error: it prints which and why, aborts the communicator
 * (ncclCommAbort) and ends the process with EXIT_FATAL; the launcher (mpirun,
 * srun --kill-on-bad-exit) then ends the other ranks. timeout_s must
 * therefore exceed the longest stretch between two steps' collectives: a step
 * with its accumulation, a checkpoint save. */
#ifndef GPT2_DIST_NCCL_WATCHDOG_H
#define GPT2_DIST_NCCL_WATCHDOG_H

#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>

enum { WATCH_RING = 256, WHAT_MAX = 96 };

typedef struct {
    cudaEvent_t done; /* recorded on the comm stream after the operation */
    bool recording;   /* reserved, event not recorded yet: counts as pending */
    double posted_s;
    char what[WHAT_MAX];
} watched_op;

typedef struct {
    pthread_t thread;
    bool running;
    pthread_mutex_t lock;
    watched_op ring[WATCH_RING]; /* pending operations: [head, head + count) */
    int head, count;
    double blocking_since; /* host time a blocking call began; 0 when none */
    double last_call_s;    /* host time of the last call into the communicator; 0: unarmed */
    char blocking_what[WHAT_MAX];
    double timeout_s;
    int stop;        /* read and written with __atomic builtins */
    ncclComm_t nccl; /* NULL before init and from destroy on (__atomic, set under lock) */
    int device, rank, world;
    /* Called when it fires, before the abort: releases waits outside NCCL
     * that would keep the device busy, and with it NCCL's abort (under lock) */
    void (*before_abort)(void *ctx);
    void *before_abort_ctx;
} watchdog;

/* Starts the thread for this rank's device; nothing is watched until the
 * first post or touch. */
void watchdog_start(watchdog *w, double timeout_s, int device, int rank, int world);
void watchdog_stop(watchdog *w);

/* The communicator to abort when the watchdog fires (after init), and its
 * removal before destroy: from then on the watchdog only ends the process,
 * and the host's silence no longer counts. */
void watchdog_attach(watchdog *w, ncclComm_t nccl);
void watchdog_detach(watchdog *w);

/* fn(ctx) runs on the watchdog's thread when it fires, before ncclCommAbort
 * (NULL: nothing). For streams that wait on other ranks outside NCCL
 * (dist/copy_engines.h): NCCL's abort waits for the device, and such a wait
 * would never end. */
void watchdog_set_before_abort(watchdog *w, void (*fn)(void *ctx), void *ctx);

/* Brackets a call that blocks the host (init, destroy) with the same limit. */
void watchdog_block(watchdog *w, const char *what);
void watchdog_unblock(watchdog *w);

/* Every call into the communicator: the host is alive and in step. */
void watchdog_touch(watchdog *w);

/* After an operation was enqueued on `stream`: watch it until it completes. */
__attribute__((format(printf, 3, 4))) void watchdog_post(watchdog *w, cudaStream_t stream,
                                                         const char *fmt, ...);
#endif
