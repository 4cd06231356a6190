/* Groups of ranks and their host-side collectives over MPI (see group.h).
 * Each collective is the non-blocking one and a watched wait (mpi_watch.h),
 * so that on CPU ranks a rank that stops answering ends the job instead of
 * hanging it. */
#include "dist/group.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "dist/mpi_watch.h"

dist_group group_single(void) { return (dist_group){.rank = 0, .size = 1, .mpi = MPI_COMM_NULL}; }

void group_from_mpi(dist_group *g, MPI_Comm comm) {
    MPI_CHECK(MPI_Comm_dup(comm, &g->mpi));
    MPI_CHECK(MPI_Comm_rank(g->mpi, &g->rank));
    MPI_CHECK(MPI_Comm_size(g->mpi, &g->size));
}

void group_free(dist_group *g) {
    if (g->mpi != MPI_COMM_NULL) MPI_Comm_free(&g->mpi);
    *g = group_single();
}

/* A group of one talks to no one: no MPI call, so no MPI_Init needed. */
static int alone(const dist_group *g) { return g->size <= 1; }

static MPI_Op mpi_op(group_op op) {
    switch (op) {
    case GROUP_SUM: return MPI_SUM;
    case GROUP_MAX: return MPI_MAX;
    case GROUP_MIN: return MPI_MIN;
    case GROUP_BOR: return MPI_BOR;
    }
    FAIL("unknown group operation %d", (int)op);
}

/* Completes the one request of a collective over g. */
static void group_wait(const dist_group *g, MPI_Request *req, const char *what) {
    mpi_watch_wait(1, req, g->mpi, what);
}

void group_barrier(const dist_group *g) {
    if (alone(g)) return;
    MPI_Request req;
    MPI_CHECK(MPI_Ibarrier(g->mpi, &req));
    group_wait(g, &req, "a barrier");
}

void group_bcast(const dist_group *g, void *buf, size_t bytes, int root) {
    if (alone(g)) return;
    /* MPI counts are ints: the weights of the largest models go in pieces. */
    const size_t piece = (size_t)1 << 30;
    for (size_t off = 0; off < bytes; off += piece) {
        const size_t n = bytes - off < piece ? bytes - off : piece;
        MPI_Request req;
        MPI_CHECK(MPI_Ibcast((char *)buf + off, (int)n, MPI_BYTE, root, g->mpi, &req));
        group_wait(g, &req, "a broadcast");
    }
}

static void allreduce(const dist_group *g, void *values, int n, MPI_Datatype type, MPI_Op op) {
    if (alone(g)) return;
    MPI_Request req;
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, values, n, type, op, g->mpi, &req));
    group_wait(g, &req, "an all-reduce");
}

void group_allreduce_int(const dist_group *g, int *values, int n, group_op op) {
    allreduce(g, values, n, MPI_INT, mpi_op(op));
}

void group_allreduce_double(const dist_group *g, double *values, int n, group_op op) {
    CHECK(op != GROUP_BOR, "a bitwise or of doubles");
    allreduce(g, values, n, MPI_DOUBLE, mpi_op(op));
}

static void value_loc(const dist_group *g, double value, double *out, int *at_rank, MPI_Op op) {
    struct {
        double value;
        int rank;
    } res = {value, g->rank};
    allreduce(g, &res, 1, MPI_DOUBLE_INT, op);
    *out = res.value;
    *at_rank = res.rank;
}

void group_minloc(const dist_group *g, double value, double *least, int *at_rank) {
    value_loc(g, value, least, at_rank, MPI_MINLOC);
}

void group_maxloc(const dist_group *g, double value, double *most, int *at_rank) {
    value_loc(g, value, most, at_rank, MPI_MAXLOC);
}

void group_gather(const dist_group *g, const void *send, size_t bytes, void *recv, int root) {
    CHECK(bytes <= INT_MAX, "gathering %zu bytes per rank exceeds MPI's int counts", bytes);
    if (alone(g)) {
        if (recv != send) memmove(recv, send, bytes);
        return;
    }
    MPI_Request req;
    MPI_CHECK(
        MPI_Igather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, root, g->mpi, &req));
    group_wait(g, &req, "a gather");
}

void group_gatherv_float(const dist_group *g, const float *send, const size_t *counts,
                         const size_t *displs, float *recv, int root) {
    if (alone(g)) return; /* root's own part is in place */
    int *c = xcalloc((size_t)g->size, sizeof(int)), *d = xcalloc((size_t)g->size, sizeof(int));
    for (int r = 0; r < g->size; r++) {
        CHECK(counts[r] <= INT_MAX && displs[r] <= INT_MAX,
              "gathering [%zu, +%zu) exceeds MPI's int counts", displs[r], counts[r]);
        c[r] = (int)counts[r];
        d[r] = (int)displs[r];
    }
    const void *mine = g->rank == root ? MPI_IN_PLACE : (const void *)send;
    MPI_Request req;
    MPI_CHECK(MPI_Igatherv(mine, c[g->rank], MPI_FLOAT, recv, c, d, MPI_FLOAT, root, g->mpi, &req));
    group_wait(g, &req, "a gather");
    free(c);
    free(d);
}
