/* The NCCL communicator (see comm.h): the collectives of data parallelism on
 * device buffers, for the CUDA backend.
 *
 * Streams. Collectives run on one communication stream of the highest
 * priority, so that their few blocks are scheduled ahead of the GEMMs they
 * overlap with. The stream never synchronises with the host: a reduction
 * waits for the kernels that produced its gradients through an event recorded
 * on the compute stream when the bucket is posted (the host enqueues backward
 * far ahead of the GPU, so the event marks exactly the kernels enqueued so
 * far), and compute waits for the reductions and the all-gather through
 * events recorded on this stream.
 *
 * ZeRO-1 shards are contiguous and may differ by 128 elements, so a bucket
 * usually lies in one or two ranks' shards: its reduction is one ncclReduce
 * per owner (root = owner, received in place into the owner's reduced shard),
 * grouped. (A ncclReduceScatter needs the bucket cut into world equal parts,
 * one per rank, which contiguous shards never give.) The parameter all-gather
 * comes in pieces, in the order forward reads them (embeddings, block 0, ...,
 * ln_f): each piece one ncclBroadcast per owner of a part of it, grouped,
 * and an event after it. Forward waits for each piece just before its first
 * use, so all but the first piece arrive while earlier layers compute. (One
 * piece over equal shards is one ncclAllGather.)
 *
 * Timing. Each wait of compute on this stream is bracketed by two events on
 * the compute stream; their distance is how long compute stood still for
 * communication (the exposed time comm_timing reports).
 *
 * Gradients are reduced in bf16 (the storage type) by default; with
 * reduce_fp32 each bucket is cast to an fp32 staging buffer on this stream,
 * reduced in fp32 and the owner's part cast back, so that the sum over ranks
 * is rounded once.
 *
 * On one node ZeRO-1's reduction and all-gather can leave NCCL for the copy
 * engines (dist/copy_engines.h): the same contracts, on the same stream,
 * without NCCL's kernels holding SMs beside backward's and forward's
 * products. Their gradient sum is always formed in fp32 and rounded once.
 *
 * Failure: nccl_watchdog.h (a collective pending too long ends the job). */
#include "dist/comm.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/fail.h"
#include "dist/copy_engines.h"
#include "dist/nccl_watchdog.h"
#include "dist/zero.h"
#include "kernels/cuda/cuda_check.h"

/* Names the failed statement, NCCL's message and its last error text. */
#define NCCL_CHECK(stmt)                                                                           \
    do {                                                                                           \
        const ncclResult_t nccl_rc_ = (stmt);                                                      \
        if (nccl_rc_ != ncclSuccess)                                                               \
            fail_at(__FILE__, __LINE__, EXIT_FATAL, "%s failed: %s (%s)", #stmt,                   \
                    ncclGetErrorString(nccl_rc_), ncclGetLastError(NULL));                         \
    } while (0)

/* ------------------------------------------------------------ casts (fp32 reduction) */

static __global__ void bf16_to_f32(float *dst, const __nv_bfloat16 *src, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __bfloat162float(src[i]);
}

static __global__ void f32_to_bf16(__nv_bfloat16 *dst, const float *src, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16_rn(src[i]);
}

static unsigned cast_blocks(size_t n) {
    const size_t b = (n + 255) / 256;
    return (unsigned)(b < 1024 ? (b ? b : 1) : 1024); /* grid-stride: a few waves suffice */
}

/* ------------------------------------------------------------ the communicator */

/* One wait of compute for communication, bracketed on the compute stream. */
typedef enum { STALL_REDUCE, STALL_GATHER, STALL_SCALAR } stall_kind;
enum { STALL_MAX = 256 }; /* per step; beyond, waits go untimed */
typedef struct {
    cudaEvent_t before, after;
    stall_kind kind;
} stall;

/* One piece of the parameter all-gather. */
typedef struct {
    comm_range range;
    cudaEvent_t done; /* recorded on the comm stream after the piece */
    bool waited;      /* compute already waits for it */
} gather_piece;

typedef struct {
    ncclComm_t nccl;
    cudaStream_t compute, stream;
    int device;
    size_t elem_bytes;       /* of the buffers: 2 (bf16) or 4 (fp32) */
    ncclDataType_t type;     /* of the buffers */
    bool reduce_fp32;        /* bf16 buffers reduced through fp32 staging */
    float *f32_in, *f32_out; /* staging of one bucket (reduce_fp32) */
    size_t f32_cap;
    cudaEvent_t ready;     /* compute -> comm: what compute enqueued so far */
    cudaEvent_t comm_done; /* comm -> compute: the reductions, the norm's sum */
    gather_piece *pieces;  /* of the last all-gather */
    int n_pieces, cap_pieces;
    stall stalls[STALL_MAX];
    int n_stalls;
    double scalar_ms; /* host time blocked in sum_scalar */
    double *dev_scalar, *host_scalar;
    copy_engines *ce; /* ZeRO-1's collectives by copy engines; NULL: NCCL's */
    char transport[640];
    watchdog wd;
} nccl_impl;

static nccl_impl *impl_of(communicator *c) { return (nccl_impl *)c->impl; }

static void *at(const nccl_impl *m, const void *base, size_t index) {
    return (char *)base + index * m->elem_bytes;
}

/* The comm stream will run after everything compute has enqueued so far. */
static void comm_after_compute(nccl_impl *m) {
    CUDA_CHECK(cudaEventRecord(m->ready, m->compute));
    CUDA_CHECK(cudaStreamWaitEvent(m->stream, m->ready, 0));
}

/* Brackets a wait of compute (stall_end after the cudaStreamWaitEvent
 * calls); -1 when the step's stall slots are used up. */
static int stall_begin(nccl_impl *m) {
    if (m->n_stalls == STALL_MAX) return -1;
    CUDA_CHECK(cudaEventRecord(m->stalls[m->n_stalls].before, m->compute));
    return m->n_stalls;
}

static void stall_end(nccl_impl *m, int slot, stall_kind kind) {
    if (slot < 0) return;
    CUDA_CHECK(cudaEventRecord(m->stalls[slot].after, m->compute));
    m->stalls[slot].kind = kind;
    m->n_stalls = slot + 1;
}

/* Compute will run after everything this stream has enqueued so far. */
static void compute_after_comm(nccl_impl *m, stall_kind kind) {
    CUDA_CHECK(cudaEventRecord(m->comm_done, m->stream));
    const int slot = stall_begin(m);
    CUDA_CHECK(cudaStreamWaitEvent(m->compute, m->comm_done, 0));
    stall_end(m, slot, kind);
}

/* fp32 staging for n elements; grows once, at the first (largest) bucket. */
static void f32_reserve(nccl_impl *m, size_t n) {
    if (n <= m->f32_cap) return;
    CUDA_CHECK(cudaStreamSynchronize(m->stream)); /* queued casts may still use it */
    CUDA_CHECK(cudaFree(m->f32_in));
    CUDA_CHECK(cudaFree(m->f32_out));
    CUDA_CHECK(cudaMalloc((void **)&m->f32_in, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void **)&m->f32_out, n * sizeof(float)));
    m->f32_cap = n;
}

static void cast_to_f32(nccl_impl *m, float *dst, const void *src, size_t n) {
    bf16_to_f32<<<cast_blocks(n), 256, 0, m->stream>>>(dst, (const __nv_bfloat16 *)src, n);
    CUDA_CHECK_LAUNCH("bf16_to_f32");
}

static void cast_to_bf16(nccl_impl *m, void *dst, const float *src, size_t n) {
    f32_to_bf16<<<cast_blocks(n), 256, 0, m->stream>>>((__nv_bfloat16 *)dst, src, n);
    CUDA_CHECK_LAUNCH("f32_to_bf16");
}

static void nccl_reduce_scatter_async(communicator *c, const void *buf, size_t begin, size_t end,
                                      const shard_map *map, void *shard_out) {
    nccl_impl *m = impl_of(c);
    comm_after_compute(m);
    if (m->ce) {
        copy_engines_reduce(m->ce, buf, begin, end, map, shard_out);
        watchdog_post(&m->wd, m->stream, "reduce of gradients [%zu, %zu) by copy engines", begin,
                      end);
        return;
    }
    const size_t n = end - begin, my_lo = map->lo[c->rank];
    const void *send = at(m, buf, begin);
    ncclDataType_t wire = m->type;
    size_t wire_bytes = m->elem_bytes;
    if (m->reduce_fp32) {
        f32_reserve(m, n);
        cast_to_f32(m, m->f32_in, send, n);
        send = m->f32_in;
        wire = ncclFloat32;
        wire_bytes = sizeof(float);
    }
    size_t mine_lo = 0, mine_hi = 0; /* this rank's part of the bucket */
    NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < c->world; r++) {
        size_t lo, hi;
        zero_shard_part(map, r, begin, end, &lo, &hi);
        if (lo == hi) continue;
        const void *piece = (const char *)send + (lo - begin) * wire_bytes;
        /* Only the root's receive buffer is used; others pass their send
         * buffer, which a reduce never writes on a non-root. */
        void *recv = (void *)piece;
        if (r == c->rank) {
            mine_lo = lo, mine_hi = hi;
            recv = m->reduce_fp32 ? (void *)m->f32_out : at(m, shard_out, lo - my_lo);
        }
        NCCL_CHECK(ncclReduce(piece, recv, hi - lo, wire, ncclSum, r, m->nccl, m->stream));
    }
    NCCL_CHECK(ncclGroupEnd());
    if (m->reduce_fp32 && mine_hi > mine_lo)
        cast_to_bf16(m, at(m, shard_out, mine_lo - my_lo), m->f32_out, mine_hi - mine_lo);
    watchdog_post(&m->wd, m->stream, "reduce of gradients [%zu, %zu)", begin, end);
}

static void nccl_all_reduce_async(communicator *c, void *buf, size_t begin, size_t end) {
    nccl_impl *m = impl_of(c);
    comm_after_compute(m);
    const size_t n = end - begin;
    void *data = at(m, buf, begin);
    if (m->reduce_fp32) {
        f32_reserve(m, n);
        cast_to_f32(m, m->f32_in, data, n);
        NCCL_CHECK(
            ncclAllReduce(m->f32_in, m->f32_in, n, ncclFloat32, ncclSum, m->nccl, m->stream));
        cast_to_bf16(m, data, m->f32_in, n);
    } else {
        NCCL_CHECK(ncclAllReduce(data, data, n, m->type, ncclSum, m->nccl, m->stream));
    }
    watchdog_post(&m->wd, m->stream, "all-reduce of gradients [%zu, %zu)", begin, end);
}

static bool shards_equal(const shard_map *map) {
    for (int r = 0; r < map->world; r++)
        if (map->hi[r] - map->lo[r] != map->hi[0] - map->lo[0]) return false;
    return true;
}

static void gather_pieces_reserve(nccl_impl *m, int n) {
    if (n <= m->cap_pieces) return;
    /* Queued waits keep their own reference to a recorded event, so old
     * events may go once nothing records them again. */
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
    for (int i = 0; i < m->cap_pieces; i++) CUDA_CHECK(cudaEventDestroy(m->pieces[i].done));
    free(m->pieces);
    m->pieces = (gather_piece *)xcalloc((size_t)n, sizeof(gather_piece));
    for (int i = 0; i < n; i++)
        CUDA_CHECK(cudaEventCreateWithFlags(&m->pieces[i].done, cudaEventDisableTiming));
    m->cap_pieces = n;
}

/* Every owner's part of buf[range], to every rank: one grouped broadcast per owner. */
static void broadcast_piece(communicator *c, nccl_impl *m, void *buf, const shard_map *map,
                            comm_range range) {
    NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < c->world; r++) {
        size_t lo, hi;
        zero_shard_part(map, r, range.begin, range.end, &lo, &hi);
        if (lo == hi) continue;
        void *part = at(m, buf, lo);
        NCCL_CHECK(ncclBroadcast(part, part, hi - lo, m->type, r, m->nccl, m->stream));
    }
    NCCL_CHECK(ncclGroupEnd());
}

static void nccl_all_gather_async(communicator *c, void *buf, const shard_map *map,
                                  const comm_range *pieces, int n_pieces) {
    nccl_impl *m = impl_of(c);
    CHECK(n_pieces >= 1, "all-gather of no pieces");
    gather_pieces_reserve(m, n_pieces);
    comm_after_compute(m); /* this rank's optimizer has written its shard */
    if (m->ce) {
        copy_engines_gather(m->ce, buf, map, pieces, n_pieces);
        for (int k = 0; k < n_pieces; k++) {
            m->pieces[k].range = pieces[k]; /* the event is not recorded: waits go by counter */
            m->pieces[k].waited = false;
        }
        m->n_pieces = n_pieces;
        watchdog_post(&m->wd, m->stream, "all-gather of the parameters by copy engines");
        return;
    }
    for (int k = 0; k < n_pieces; k++) {
        if (n_pieces == 1 && shards_equal(map)) {
            const size_t count = map->hi[0] - map->lo[0];
            NCCL_CHECK(ncclAllGather(at(m, buf, map->lo[c->rank]), buf, count, m->type, m->nccl,
                                     m->stream));
        } else {
            broadcast_piece(c, m, buf, map, pieces[k]);
        }
        m->pieces[k].range = pieces[k];
        m->pieces[k].waited = false;
        CUDA_CHECK(cudaEventRecord(m->pieces[k].done, m->stream));
    }
    m->n_pieces = n_pieces;
    watchdog_post(&m->wd, m->stream, "all-gather of the parameters (%d pieces)", n_pieces);
}

static void nccl_gather_wait(communicator *c, size_t begin, size_t end) {
    nccl_impl *m = impl_of(c);
    int slot = -2; /* not begun */
    for (int k = 0; k < m->n_pieces; k++) {
        gather_piece *p = &m->pieces[k];
        if (p->waited || p->range.end <= begin || p->range.begin >= end) continue;
        if (slot == -2) slot = stall_begin(m);
        if (m->ce)
            copy_engines_gather_wait(m->ce, m->compute, p->range, k);
        else
            CUDA_CHECK(cudaStreamWaitEvent(m->compute, p->done, 0));
        p->waited = true;
    }
    if (slot != -2) stall_end(m, slot, STALL_GATHER);
}

/* A host value through the device and back: the one place the host waits
 * for this stream (the watchdog bounds the wait). */
static double scalar_all_reduce(nccl_impl *m, double value, const char *what) {
    *m->host_scalar = value;
    CUDA_CHECK(cudaMemcpyAsync(m->dev_scalar, m->host_scalar, sizeof(double),
                               cudaMemcpyHostToDevice, m->stream));
    NCCL_CHECK(
        ncclAllReduce(m->dev_scalar, m->dev_scalar, 1, ncclFloat64, ncclSum, m->nccl, m->stream));
    CUDA_CHECK(cudaMemcpyAsync(m->host_scalar, m->dev_scalar, sizeof(double),
                               cudaMemcpyDeviceToHost, m->stream));
    watchdog_post(&m->wd, m->stream, "%s", what);
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
    return *m->host_scalar;
}

static double nccl_sum_scalar(communicator *c, double value) {
    nccl_impl *m = impl_of(c);
    const double t0 = clock_s();
    const double sum = scalar_all_reduce(m, value, "sum of a scalar");
    m->scalar_ms += (clock_s() - t0) * 1e3;
    return sum;
}

static void nccl_sum_in_place(communicator *c, double *value) {
    nccl_impl *m = impl_of(c);
    comm_after_compute(m);
    NCCL_CHECK(ncclAllReduce(value, value, 1, ncclFloat64, ncclSum, m->nccl, m->stream));
    watchdog_post(&m->wd, m->stream, "sum of the gradient norm");
    compute_after_comm(m, STALL_SCALAR);
}

static bool nccl_progress(communicator *c) {
    /* NCCL progresses on its own; this only says whether work is left. */
    watchdog_touch(&impl_of(c)->wd);
    const cudaError_t st = cudaStreamQuery(impl_of(c)->stream);
    if (st == cudaErrorNotReady) return false;
    CUDA_CHECK(st);
    return true;
}

static void nccl_wait_all(communicator *c) { compute_after_comm(impl_of(c), STALL_REDUCE); }

static void nccl_barrier(communicator *c) { scalar_all_reduce(impl_of(c), 0.0, "barrier"); }

[[noreturn]] static void nccl_abort(communicator *c, int exit_code) {
    if (impl_of(c)->ce) copy_engines_unblock(impl_of(c)->ce);
    ncclCommAbort(impl_of(c)->nccl);
    MPI_Abort(c->group->mpi, exit_code);
    exit(exit_code);
}

/* ms from a to b, both recorded; false while b has not happened yet. */
static bool elapsed_ms(cudaEvent_t a, cudaEvent_t b, double *ms) {
    float t = 0.0f;
    const cudaError_t st = cudaEventElapsedTime(&t, a, b);
    if (st == cudaErrorNotReady) {
        cudaGetLastError();
        return false;
    }
    CUDA_CHECK(st);
    *ms = t > 0.0f ? t : 0.0;
    return true;
}

static bool nccl_timing(communicator *c, comm_timing *out) {
    nccl_impl *m = impl_of(c);
    watchdog_touch(&m->wd);
    double by_kind[3] = {0.0, 0.0, 0.0};
    for (int i = 0; i < m->n_stalls; i++) {
        double ms = 0.0;
        if (!elapsed_ms(m->stalls[i].before, m->stalls[i].after, &ms)) return false;
        by_kind[m->stalls[i].kind] += ms;
    }
    *out = (comm_timing){by_kind[STALL_REDUCE], by_kind[STALL_GATHER],
                         by_kind[STALL_SCALAR] + m->scalar_ms};
    m->n_stalls = 0;
    m->scalar_ms = 0.0;
    return true;
}

static void nccl_destroy(communicator *c) {
    nccl_impl *m = impl_of(c);
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
    watchdog_block(&m->wd, "the copy engines' shutdown");
    watchdog_set_before_abort(&m->wd, nullptr, nullptr);
    copy_engines_destroy(m->ce); /* collective, as the NCCL destroy below */
    watchdog_unblock(&m->wd);
    /* Destroy finalises: it waits for the peers to be quiescent too. From
     * here on the watchdog only ends the process, it never touches the comm. */
    watchdog_detach(&m->wd);
    watchdog_block(&m->wd, "ncclCommDestroy");
    NCCL_CHECK(ncclCommDestroy(m->nccl));
    watchdog_unblock(&m->wd);
    watchdog_stop(&m->wd);
    CUDA_CHECK(cudaEventDestroy(m->ready));
    CUDA_CHECK(cudaEventDestroy(m->comm_done));
    for (int i = 0; i < STALL_MAX; i++) {
        CUDA_CHECK(cudaEventDestroy(m->stalls[i].before));
        CUDA_CHECK(cudaEventDestroy(m->stalls[i].after));
    }
    for (int i = 0; i < m->cap_pieces; i++) CUDA_CHECK(cudaEventDestroy(m->pieces[i].done));
    free(m->pieces);
    CUDA_CHECK(cudaFree(m->f32_in));
    CUDA_CHECK(cudaFree(m->f32_out));
    CUDA_CHECK(cudaFree(m->dev_scalar));
    CUDA_CHECK(cudaFreeHost(m->host_scalar));
    CUDA_CHECK(cudaStreamDestroy(m->stream));
    free(m);
    free(c);
}

static const comm_ops NCCL_COMM_OPS = {
    .reduce_scatter_async = nccl_reduce_scatter_async,
    .all_reduce_async = nccl_all_reduce_async,
    .all_gather_async = nccl_all_gather_async,
    .gather_wait = nccl_gather_wait,
    .sum_scalar = nccl_sum_scalar,
    .sum_in_place = nccl_sum_in_place,
    .progress = nccl_progress,
    .wait_all = nccl_wait_all,
    .barrier = nccl_barrier,
    .abort = nccl_abort,
    .destroy = nccl_destroy,
    .timing = nccl_timing,
};

/* The group's rank 0's ncclUniqueId, broadcast over MPI, makes every rank's
 * communicator. */
static void nccl_init_group(nccl_impl *m, const dist_group *g) {
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (g->rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    group_bcast(g, &id, sizeof id, 0);
    watchdog_block(&m->wd, "ncclCommInitRank (NCCL start-up)");
    NCCL_CHECK(ncclCommInitRank(&m->nccl, g->size, id, g->rank));
    watchdog_unblock(&m->wd);
    watchdog_attach(&m->wd, m->nccl);
}

static void create_stream_and_events(nccl_impl *m) {
    int least = 0, greatest = 0;
    CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    /* Non-blocking: the compute stream is a blocking one, and this stream
     * must not be serialised with the legacy default stream through it. */
    CUDA_CHECK(cudaStreamCreateWithPriority(&m->stream, cudaStreamNonBlocking, greatest));
    CUDA_CHECK(cudaEventCreateWithFlags(&m->ready, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&m->comm_done, cudaEventDisableTiming));
    /* Timed: a few dozen records per step cost nothing measurable. */
    for (int i = 0; i < STALL_MAX; i++) {
        CUDA_CHECK(cudaEventCreate(&m->stalls[i].before));
        CUDA_CHECK(cudaEventCreate(&m->stalls[i].after));
    }
    CUDA_CHECK(cudaMalloc((void **)&m->dev_scalar, sizeof(double)));
    CUDA_CHECK(cudaMallocHost((void **)&m->host_scalar, sizeof(double)));
}

/* The watchdog's hook before an abort (copy_engines_unblock). */
static void unblock_peers(void *ce) { copy_engines_unblock(static_cast<copy_engines *>(ce)); }

/* Collective: the copy engines when asked for (or allowed, with auto) and
 * every rank can use them; NCCL otherwise. */
static void choose_transport(nccl_impl *m, const dist_group *g, comm_dtype dtype,
                             const comm_nccl_options *opt) {
    snprintf(m->transport, sizeof m->transport, "NCCL");
    if (opt->transport == COMM_TRANSPORT_NCCL) return;
    const int world = g->size;
    if (!copy_engines_planned(opt->transport, world)) {
        snprintf(m->transport, sizeof m->transport,
                 "NCCL (auto uses the copy engines up to %d ranks, where they were measured; "
                 "comm_transport = copy_engines for more)",
                 (int)COPY_ENGINES_AUTO_RANKS);
        return;
    }
    char why[512] = "";
    if (dtype == COMM_BF16)
        m->ce = copy_engines_create(g, m->stream, opt->bucket_elements, why, sizeof why);
    else
        snprintf(why, sizeof why, "they move bf16 buffers only");
    if (m->ce) {
        snprintf(m->transport, sizeof m->transport, "copy engines");
        watchdog_set_before_abort(&m->wd, unblock_peers, m->ce);
        return;
    }
    if (opt->transport == COMM_TRANSPORT_COPY_ENGINES)
        fail_collective(EXIT_USAGE,
                        "comm_transport = copy_engines, but %s: set comm_transport = auto (copy "
                        "engines where they can be used, NCCL elsewhere) or nccl",
                        why);
    snprintf(m->transport, sizeof m->transport, "NCCL (copy engines not usable: %s)", why);
}

extern "C" const char *comm_nccl_transport(const communicator *c) {
    return static_cast<const nccl_impl *>(c->impl)->transport;
}

extern "C" communicator *comm_nccl_create(const dist_group *group,
                                          struct CUstream_st *compute_stream, comm_dtype dtype,
                                          const comm_nccl_options *opt) {
    communicator *c = (communicator *)xcalloc(1, sizeof *c);
    nccl_impl *m = (nccl_impl *)xcalloc(1, sizeof *m);
    c->group = group;
    c->rank = group->rank;
    c->world = group->size;
    CHECK(opt->timeout_s > 0, "nccl_timeout_s must be positive, got %g", opt->timeout_s);
    CUDA_CHECK(cudaGetDevice(&m->device));
    m->compute = compute_stream;
    m->elem_bytes = dtype == COMM_BF16 ? 2 : 4;
    m->type = dtype == COMM_BF16 ? ncclBfloat16 : ncclFloat32;
    m->reduce_fp32 = opt->reduce_fp32 && dtype == COMM_BF16;
    /* Started first, so that a start-up that never completes ends too. */
    watchdog_start(&m->wd, opt->timeout_s, m->device, c->rank, c->world);
    nccl_init_group(m, group);
    create_stream_and_events(m);
    choose_transport(m, group, dtype, opt);
    c->ops = &NCCL_COMM_OPS;
    c->dtype = dtype;
    c->impl = m;
    return c;
}
