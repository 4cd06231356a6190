/* The communicator: the collectives data parallelism needs, behind one
 * interface that MPI (host buffers, CPU backend) and NCCL (device buffers on a
 * communication stream) both implement. Asynchronous operations return at
 * once; comm_progress lets them advance while compute continues, and
 * comm_wait_all completes them. Buffers hold `elem` elements (fp32 or bf16)
 * and are addressed by element index. */
#ifndef GPT2_DIST_COMM_H
#define GPT2_DIST_COMM_H

#include <stdbool.h>
#include <stddef.h>

#include "dist/zero.h"

typedef enum { COMM_F32, COMM_BF16 } comm_dtype;

typedef struct communicator communicator;

/* Communication time of one step that compute could not hide, in ms. */
typedef struct {
    double reduce_tail_ms; /* gradient reduction still running after backward ended */
    double gather_ms;      /* parameter all-gather (compute waits for all of it) */
    double scalar_ms;      /* blocking scalar sums (norm, loss) */
} comm_timing;

typedef struct {
    /* Sums buf[begin, end) over ranks; each rank receives the part of the
     * range that lies in its shard, at shard_out[i - lo] for element i. */
    void (*reduce_scatter_async)(communicator *c, const void *buf, size_t begin, size_t end,
                                 const shard_map *map, void *shard_out);
    /* Sums buf[begin, end) over ranks, in place. */
    void (*all_reduce_async)(communicator *c, void *buf, size_t begin, size_t end);
    /* Every rank's shard [lo, hi) of buf is copied to all ranks, in place. */
    void (*all_gather)(communicator *c, void *buf, const shard_map *map);
    /* Sum of one double over ranks (blocking). */
    double (*sum_scalar)(communicator *c, double value);
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
    int rank, world;
    comm_dtype dtype;
    void *impl;
};

/* MPI over a duplicate of MPI_COMM_WORLD (its own message space, so the
 * bucket traffic never matches other collectives). fp32 host buffers. */
communicator *comm_mpi_create(void);

#if defined(GPT2_HAVE_NCCL) && GPT2_HAVE_NCCL
#ifdef __cplusplus
extern "C" {
#endif
struct CUstream_st; /* cudaStream_t's struct, without the CUDA headers */
typedef struct {
    double timeout_s; /* a collective pending this long ends the job (watchdog) */
    bool reduce_fp32; /* reduce bf16 gradients in fp32 (cast per bucket) instead of bf16 */
} comm_nccl_options;

/* NCCL over every rank of MPI_COMM_WORLD (collective: rank 0 creates the
 * ncclUniqueId and broadcasts it over MPI), on the current CUDA device.
 * Buffers are device buffers of `dtype`; collectives run on a communication
 * stream of its own, ordered against compute_stream (a cudaStream_t) with
 * events only: no call synchronises the host but sum_scalar and barrier. */
communicator *comm_nccl_create(struct CUstream_st *compute_stream, comm_dtype dtype,
                               const comm_nccl_options *opt);
#ifdef __cplusplus
}
#endif
#endif
#endif
