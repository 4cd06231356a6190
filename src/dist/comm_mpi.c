/* The MPI communicator (see comm.h): non-blocking collectives on host fp32
 * buffers. Requests are kept until comm_wait_all; progress tests them, which
 * is what moves Open MPI's non-blocking collectives forward while backward
 * runs (it has no progress thread by default). Every wait is a watched one
 * (mpi_watch.h): a rank that stops answering ends the job. */
#include "dist/comm.h"

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/fail.h"
#include "dist/mpi_watch.h"

typedef struct {
    MPI_Comm comm;
    MPI_Request *requests;
    int n_requests, cap_requests;
    int *counts; /* scratch: per-rank counts and displacements */
    int *displs;
    /* The host blocks in every wait here, so host time is exposed time. */
    comm_timing timing;
} mpi_impl;

static mpi_impl *impl_of(communicator *c) { return c->impl; }

static MPI_Request *new_request(mpi_impl *m) {
    if (m->n_requests == m->cap_requests) {
        m->cap_requests = m->cap_requests ? 2 * m->cap_requests : 64;
        m->requests = realloc(m->requests, (size_t)m->cap_requests * sizeof(MPI_Request));
        CHECK(m->requests, "out of memory for MPI requests");
    }
    return &m->requests[m->n_requests++];
}

static int to_count(size_t n) {
    CHECK(n <= (size_t)INT32_MAX, "MPI message of %zu elements exceeds an int count", n);
    return (int)n;
}

static void mpi_reduce_scatter_async(communicator *c, const void *buf, size_t begin, size_t end,
                                     const shard_map *map, void *shard_out) {
    mpi_impl *m = impl_of(c);
    for (int r = 0; r < c->world; r++) {
        size_t lo = map->lo[r] > begin ? map->lo[r] : begin;
        size_t hi = map->hi[r] < end ? map->hi[r] : end;
        m->counts[r] = hi > lo ? to_count(hi - lo) : 0;
    }
    size_t my_lo = map->lo[c->rank];
    size_t first = begin > my_lo ? begin : my_lo;
    /* When this rank's shard misses the range, the receive count is 0 and
     * the pointer is never written. */
    float *recv = (float *)shard_out + (first > my_lo ? first - my_lo : 0);
    MPI_CHECK(MPI_Ireduce_scatter((const float *)buf + begin, recv, m->counts, MPI_FLOAT, MPI_SUM,
                                  m->comm, new_request(m)));
}

static void mpi_all_reduce_async(communicator *c, void *buf, size_t begin, size_t end) {
    mpi_impl *m = impl_of(c);
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, (float *)buf + begin, to_count(end - begin), MPI_FLOAT,
                             MPI_SUM, m->comm, new_request(m)));
}

/* The pieces only matter where the gather can overlap compute: here the
 * host would do both, so it gathers everything at once. */
static void mpi_all_gather_async(communicator *c, void *buf, const shard_map *map,
                                 const comm_range *pieces, int n_pieces) {
    (void)pieces;
    (void)n_pieces;
    mpi_impl *m = impl_of(c);
    const double t0 = clock_ms();
    for (int r = 0; r < c->world; r++) {
        m->counts[r] = to_count(map->hi[r] - map->lo[r]);
        m->displs[r] = to_count(map->lo[r]);
    }
    MPI_Request req;
    MPI_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, m->counts, m->displs,
                              MPI_FLOAT, m->comm, &req));
    mpi_watch_wait(1, &req, m->comm, "the parameter all-gather");
    m->timing.gather_ms = clock_ms() - t0;
}

static void mpi_gather_wait(communicator *c, size_t begin, size_t end) {
    (void)c; /* complete already */
    (void)begin;
    (void)end;
}

static double mpi_sum_scalar(communicator *c, double value) {
    const double t0 = clock_ms();
    double sum = 0.0;
    MPI_Request req;
    MPI_CHECK(MPI_Iallreduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, impl_of(c)->comm, &req));
    mpi_watch_wait(1, &req, impl_of(c)->comm, "a sum over ranks (the gradient norm, the loss)");
    impl_of(c)->timing.scalar_ms += clock_ms() - t0;
    return sum;
}

static void mpi_sum_in_place(communicator *c, double *value) {
    *value = mpi_sum_scalar(c, *value); /* the CPU backend's memory is host memory */
}

static bool mpi_progress(communicator *c) {
    mpi_impl *m = impl_of(c);
    if (m->n_requests == 0) return true;
    int done = 0;
    MPI_CHECK(MPI_Testall(m->n_requests, m->requests, &done, MPI_STATUSES_IGNORE));
    if (done) m->n_requests = 0;
    return done;
}

static void mpi_wait_all(communicator *c) {
    mpi_impl *m = impl_of(c);
    const double t0 = clock_ms();
    mpi_watch_wait(m->n_requests, m->requests, m->comm, "the gradient reduction");
    m->n_requests = 0;
    m->timing.reduce_tail_ms = clock_ms() - t0;
}

static bool mpi_timing(communicator *c, comm_timing *out) {
    mpi_impl *m = impl_of(c);
    *out = m->timing;
    m->timing.scalar_ms = 0.0;
    return true;
}

static void mpi_barrier(communicator *c) {
    MPI_Request req;
    MPI_CHECK(MPI_Ibarrier(impl_of(c)->comm, &req));
    mpi_watch_wait(1, &req, impl_of(c)->comm, "a barrier");
}

static void mpi_abort(communicator *c, int exit_code) {
    MPI_Abort(impl_of(c)->comm, exit_code);
    exit(exit_code);
}

static void mpi_destroy(communicator *c) {
    mpi_impl *m = impl_of(c);
    if (m->n_requests) mpi_wait_all(c);
    MPI_Comm_free(&m->comm);
    free(m->requests);
    free(m->counts);
    free(m->displs);
    free(m);
    free(c);
}

static const comm_ops MPI_COMM_OPS = {
    .reduce_scatter_async = mpi_reduce_scatter_async,
    .all_reduce_async = mpi_all_reduce_async,
    .all_gather_async = mpi_all_gather_async,
    .gather_wait = mpi_gather_wait,
    .sum_scalar = mpi_sum_scalar,
    .sum_in_place = mpi_sum_in_place,
    .progress = mpi_progress,
    .wait_all = mpi_wait_all,
    .barrier = mpi_barrier,
    .abort = mpi_abort,
    .destroy = mpi_destroy,
    .timing = mpi_timing,
};

communicator *comm_mpi_create(const dist_group *group) {
    communicator *c = xcalloc(1, sizeof *c);
    mpi_impl *m = xcalloc(1, sizeof *m);
    c->group = group;
    c->rank = group->rank;
    c->world = group->size;
    CHECK(group->mpi != MPI_COMM_NULL, "an MPI communicator over a group without MPI");
    MPI_CHECK(MPI_Comm_dup(group->mpi, &m->comm));
    m->counts = xcalloc((size_t)c->world, sizeof(int));
    m->displs = xcalloc((size_t)c->world, sizeof(int));
    c->ops = &MPI_COMM_OPS;
    c->dtype = COMM_F32;
    c->impl = m;
    return c;
}
