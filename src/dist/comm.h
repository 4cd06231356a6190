/* The communicator: the collectives data parallelism needs over one group of
 * ranks (group.h: the data-parallel group), behind one interface that MPI
 * (host buffers, CPU backend) and NCCL (device buffers on a communication
 * stream) both implement. Asynchronous operations return at
 * once; comm_progress lets them advance while compute continues, and
 * comm_wait_all completes them. Buffers hold `elem` elements (fp32 or bf16)
 * and are addressed by element index. */
#ifndef GPT2_DIST_COMM_H
#define GPT2_DIST_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "dist/group.h"
#include "dist/zero.h"

typedef enum { COMM_F32, COMM_BF16 } comm_dtype;

typedef struct communicator communicator;

/* Communication time of one step that compute could not hide, in ms: how
 * long compute waited for it (NCCL: CUDA events around each wait) or the
 * host blocked in it (MPI). */
typedef struct {
    double reduce_tail_ms; /* gradient reduction still running after backward ended */
    double gather_ms;      /* parameter all-gather pieces the forward waited for */
    double scalar_ms;      /* scalar sums (the gradient norm; the loss when logged) */
} comm_timing;

/* A range [begin, end) of elements of a flat buffer. */
typedef struct {
    size_t begin, end;
} comm_range;

typedef struct {
    /* Sums buf[begin, end) over ranks; each rank receives the part of the
     * range that lies in its shard, at shard_out[i - lo] for element i. */
    void (*reduce_scatter_async)(communicator *c, const void *buf, size_t begin, size_t end,
                                 const shard_map *map, void *shard_out);
    /* Sums buf[begin, end) over ranks, in place. */
    void (*all_reduce_async)(communicator *c, void *buf, size_t begin, size_t end);
    /* Every rank's shard [lo, hi) of buf is copied to all ranks, in place,
     * piece by piece in the order given (the pieces cover the buffer; the
     * order is the one forward reads them in). NCCL returns at once and
     * gather_wait orders compute after the pieces it needs, so the gather
     * runs under the next forward; MPI completes the gather before returning. */
    void (*all_gather_async)(communicator *c, void *buf, const shard_map *map,
                             const comm_range *pieces, int n_pieces);
    /* Compute waits for every piece of the last all-gather that intersects
     * [begin, end) ([0, SIZE_MAX): all of them). */
    void (*gather_wait)(communicator *c, size_t begin, size_t end);
    /* Sum of one double over ranks (blocking). */
    double (*sum_scalar)(communicator *c, double value);
    /* Sum over ranks of one double in the compute backend's memory, in
     * place: NCCL queues it between compute's kernels (compute waits for it,
     * the host does not); MPI sums the host value before returning. */
    void (*sum_in_place)(communicator *c, double *value);
    /* Drives outstanding operations; true when none is left. */
    bool (*progress)(communicator *c);
    void (*wait_all)(communicator *c);
    void (*barrier)(communicator *c);
    /* Ends every rank of the job (never returns). */
    void (*abort)(communicator *c, int exit_code);
    void (*destroy)(communicator *c);
    /* The timing of the last step, once the host has waited for it; false
     * while it is not known yet. Resets the scalar-sum accumulator. */
    bool (*timing)(communicator *c, comm_timing *out);
} comm_ops;

struct communicator {
    const comm_ops *ops;
    const dist_group *group; /* the ranks it connects; rank and world are its */
    int rank, world;
    comm_dtype dtype;
    void *impl;
};

/* MPI over a duplicate of the group's communicator (its own message space,
 * so the bucket traffic never matches other collectives). fp32 host
 * buffers. Collective over the group, which must outlive it. */
communicator *comm_mpi_create(const dist_group *group);

/* What moves ZeRO-1's gradients to their owners and the parameters back
 * (declared in every build: the memory estimate plans for it). */
typedef enum {
    COMM_TRANSPORT_NCCL,         /* ncclReduce and ncclBroadcast per shard owner */
    COMM_TRANSPORT_AUTO,         /* copy engines for up to COPY_ENGINES_AUTO_RANKS ranks that
                                    can use them, else NCCL */
    COMM_TRANSPORT_COPY_ENGINES, /* copy engines (dist/copy_engines.h), or a collective error */
} comm_transport;

/* The config's comm_transport name ("auto", "nccl", "copy_engines", checked
 * by the config's validation) as the enum; NCCL for any other. */
static inline comm_transport comm_transport_named(const char *name) {
    return strcmp(name, "copy_engines") == 0 ? COMM_TRANSPORT_COPY_ENGINES
           : strcmp(name, "auto") == 0       ? COMM_TRANSPORT_AUTO
                                             : COMM_TRANSPORT_NCCL;
}

#if defined(GPT2_HAVE_NCCL) && GPT2_HAVE_NCCL
#ifdef __cplusplus
extern "C" {
#endif
struct CUstream_st; /* cudaStream_t's struct, without the CUDA headers */

typedef struct {
    double timeout_s;         /* a collective pending this long ends the job (watchdog) */
    bool reduce_fp32;         /* reduce bf16 gradients in fp32 (cast per bucket) instead of bf16 */
    comm_transport transport; /* for ZeRO-1's collectives (zero_stage 0 all-reduces by NCCL) */
    size_t bucket_elements;   /* the most elements of one bucket (the copy engines' inboxes) */
} comm_nccl_options;

/* NCCL over the ranks of group (collective: its rank 0 creates the
 * ncclUniqueId and broadcasts it over MPI), on the current CUDA device.
 * Buffers are device buffers of `dtype`; collectives run on a communication
 * stream of its own, ordered against compute_stream (a cudaStream_t) with
 * events only: no call synchronises the host but sum_scalar and barrier. */
communicator *comm_nccl_create(const dist_group *group, struct CUstream_st *compute_stream,
                               comm_dtype dtype, const comm_nccl_options *opt);
/* What moves ZeRO-1's data, for the start-up report: "NCCL", "copy
 * engines", or "NCCL (copy engines not usable: why)". */
const char *comm_nccl_transport(const communicator *c);
#ifdef __cplusplus
}
#endif
#endif
#endif
