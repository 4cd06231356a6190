/* The NCCL watchdog thread (see nccl_watchdog.h). */
#include "dist/nccl_watchdog.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fail.h"
#include "kernels/cuda/cuda_check.h"

/* Drops the operations that completed, oldest first. Caller holds the lock. */
static void watchdog_retire(watchdog *w) {
    while (w->count > 0 && !w->ring[w->head].recording) {
        const cudaError_t st = cudaEventQuery(w->ring[w->head].done);
        if (st == cudaErrorNotReady) return;
        /* Another error is sticky and the host thread reports it at its next
         * CUDA call; here it only means the operation is no longer pending. */
        if (st != cudaSuccess) cudaGetLastError();
        w->head = (w->head + 1) % WATCH_RING;
        w->count--;
    }
}

[[noreturn]] static void watchdog_fire(watchdog *w, const char *why) {
    /* Backstop: should the message or the abort block (a lock the stuck host
     * thread holds), SIGALRM's default action still ends the process. */
    alarm(30);
    char host[256];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = '\0';
    fprintf(stderr,
            "gpt2_ddp [rank %d/%d %s]: error: %s. Another rank died, hangs or stopped "
            "responding (or nccl_timeout_s is too short for this job): aborting the NCCL "
            "communicator (ncclCommAbort) and exiting\n",
            w->rank, w->world, host, why);
    fflush(stderr); /* not stdout: the host thread may hold its lock */
    pthread_mutex_lock(&w->lock);
    if (w->before_abort) w->before_abort(w->before_abort_ctx);
    pthread_mutex_unlock(&w->lock);
    ncclComm_t nccl = __atomic_load_n(&w->nccl, __ATOMIC_ACQUIRE);
    if (nccl) ncclCommAbort(nccl);
    /* Not exit(): the host thread may be inside CUDA or MPI calls. A rank that
     * exits non-zero makes the launcher end the job. */
    _exit(EXIT_FATAL);
}

/* One look: the reason to give up, or "" when all is well. */
static void watchdog_check(watchdog *w, char *why, size_t len) {
    why[0] = '\0';
    const double now = clock_s();
    pthread_mutex_lock(&w->lock);
    watchdog_retire(w);
    ncclResult_t async = ncclSuccess;
    if (w->count > 0 && now - w->ring[w->head].posted_s > w->timeout_s)
        snprintf(why, len, "NCCL operation '%s' did not complete within nccl_timeout_s = %g s",
                 w->ring[w->head].what, w->timeout_s);
    else if (w->blocking_since > 0 && now - w->blocking_since > w->timeout_s)
        snprintf(why, len, "%s did not return within nccl_timeout_s = %g s", w->blocking_what,
                 w->timeout_s);
    else if (w->last_call_s > 0 && now - w->last_call_s > w->timeout_s)
        snprintf(why, len,
                 "no collective call on this rank for nccl_timeout_s = %g s: it waits for "
                 "another rank outside NCCL (an MPI call) or is stuck",
                 w->timeout_s);
    else if (w->nccl && ncclCommGetAsyncError(w->nccl, &async) == ncclSuccess &&
             async != ncclSuccess && async != ncclInProgress)
        snprintf(why, len, "NCCL reported an asynchronous error: %s (%s)",
                 ncclGetErrorString(async), ncclGetLastError(w->nccl));
    pthread_mutex_unlock(&w->lock);
}

static void *watchdog_main(void *arg) {
    watchdog *w = (watchdog *)arg;
    cudaSetDevice(w->device); /* events belong to this rank's device */
    double poll = w->timeout_s / 20;
    poll = poll < 0.01 ? 0.01 : poll > 1.0 ? 1.0 : poll;
    const struct timespec nap = {(time_t)poll, (long)((poll - (time_t)poll) * 1e9)};
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
        nanosleep(&nap, NULL);
        char why[512];
        watchdog_check(w, why, sizeof why);
        if (why[0]) watchdog_fire(w, why);
    }
    return NULL;
}

void watchdog_start(watchdog *w, double timeout_s, int device, int rank, int world) {
    w->timeout_s = timeout_s;
    w->device = device;
    w->rank = rank;
    w->world = world;
    CHECK(pthread_mutex_init(&w->lock, NULL) == 0, "pthread_mutex_init failed");
    for (int i = 0; i < WATCH_RING; i++)
        CUDA_CHECK(cudaEventCreateWithFlags(&w->ring[i].done, cudaEventDisableTiming));
    CHECK(pthread_create(&w->thread, NULL, watchdog_main, w) == 0,
          "cannot start the NCCL watchdog thread");
    w->running = true;
}

void watchdog_stop(watchdog *w) {
    if (!w->running) return;
    __atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
    pthread_join(w->thread, NULL);
    w->running = false;
    for (int i = 0; i < WATCH_RING; i++) CUDA_CHECK(cudaEventDestroy(w->ring[i].done));
    pthread_mutex_destroy(&w->lock);
}

void watchdog_attach(watchdog *w, ncclComm_t nccl) {
    pthread_mutex_lock(&w->lock);
    __atomic_store_n(&w->nccl, nccl, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&w->lock);
}

void watchdog_detach(watchdog *w) {
    pthread_mutex_lock(&w->lock);
    __atomic_store_n(&w->nccl, (ncclComm_t)NULL, __ATOMIC_RELEASE);
    w->last_call_s = 0;
    pthread_mutex_unlock(&w->lock);
}

void watchdog_set_before_abort(watchdog *w, void (*fn)(void *ctx), void *ctx) {
    pthread_mutex_lock(&w->lock);
    w->before_abort = fn;
    w->before_abort_ctx = ctx;
    pthread_mutex_unlock(&w->lock);
}

void watchdog_block(watchdog *w, const char *what) {
    pthread_mutex_lock(&w->lock);
    snprintf(w->blocking_what, sizeof w->blocking_what, "%s", what);
    w->blocking_since = clock_s();
    pthread_mutex_unlock(&w->lock);
}

void watchdog_unblock(watchdog *w) {
    pthread_mutex_lock(&w->lock);
    w->blocking_since = 0;
    pthread_mutex_unlock(&w->lock);
}

void watchdog_touch(watchdog *w) {
    pthread_mutex_lock(&w->lock);
    w->last_call_s = clock_s();
    pthread_mutex_unlock(&w->lock);
}

void watchdog_post(watchdog *w, cudaStream_t stream, const char *fmt, ...) {
    pthread_mutex_lock(&w->lock);
    watchdog_retire(w);
    while (w->count == WATCH_RING) {
        /* Full: wait for the oldest (should it hang, the thread fires). */
        cudaEvent_t oldest = w->ring[w->head].done;
        pthread_mutex_unlock(&w->lock);
        CUDA_CHECK(cudaEventSynchronize(oldest));
        pthread_mutex_lock(&w->lock);
        watchdog_retire(w);
    }
    watched_op *op = &w->ring[(w->head + w->count) % WATCH_RING];
    op->recording = true;
    op->posted_s = w->last_call_s = clock_s();
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(op->what, sizeof op->what, fmt, ap);
    va_end(ap);
    w->count++;
    pthread_mutex_unlock(&w->lock);
    /* Outside the lock: a record can block (a full launch queue on a stuck
     * stream), and the thread must still be able to look. */
    CUDA_CHECK(cudaEventRecord(op->done, stream));
    pthread_mutex_lock(&w->lock);
    op->recording = false;
    pthread_mutex_unlock(&w->lock);
}
