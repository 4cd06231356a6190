/* Data parallelism for one rank: the communicator (over the data-parallel
 * group), the ZeRO-1 shard map, the gradient buckets, and the range of the
 * flat buffer this rank's optimizer updates. One step: arm on the last
 * micro-step -> buckets reduce during backward -> finish -> clip with the
 * global norm -> the optimizer on [lo, hi) ->
 * gather the parameters (ZeRO-1), in pieces that the next forward waits for
 * one by one (ddp_params_needed). */
#ifndef GPT2_DIST_DDP_H
#define GPT2_DIST_DDP_H

#include <stdbool.h>
#include <stddef.h>

#include "dist/buckets.h"
#include "dist/comm.h"
#include "dist/zero.h"
#include "kernels/ops.h"

typedef struct {
    communicator *comm;
    int zero_stage;
    shard_map map;
    size_t lo, hi;     /* the optimizer's range on this rank */
    void *shard_grads; /* reduced gradients of [lo, hi), indexed from lo */
    bool owns_shard_grads;
    bucket_plan buckets;
    comm_range *gather_pieces; /* forward's order of use */
    int n_gather_pieces;
    const kernel_ops *ops;
    /* per completed step: communication compute could not hide (ms) */
    double *exposed_ms;
    int n_steps, cap_steps;
} data_parallel;

/* With one rank nothing is communicated and the optimizer covers everything.
 * map: the ZeRO-1 shard map over comm's ranks (the optimizer's, along whole
 * tensors: optim/optimizer.h), copied; it covers the flat buffer of
 * map->n_elements. gather_pieces: ranges covering the buffer in the order
 * forward first reads them (copied). */
void ddp_init(data_parallel *d, communicator *comm, const kernel_ops *ops, const shard_map *map,
              int zero_stage, double bucket_mb, void *grads, const comm_range *gather_pieces,
              int n_gather_pieces);
void ddp_free(data_parallel *d);

/* Before the backward of the last micro-step. */
void ddp_arm(data_parallel *d, void *grads);
/* After that backward: waits for every bucket. */
void ddp_finish_reduction(data_parallel *d);
/* Global sum over ranks of a per-shard partial sum, a double in the
 * backend's memory, in place and without waiting for the device (identity
 * for stage 0, where every rank holds every reduced gradient). */
void ddp_sum_shards(data_parallel *d, double *value);
/* After the optimizer step: every rank gets every updated parameter. Returns
 * before they arrive (NCCL): a forward waits for what it reads through
 * ddp_params_needed, anything else calls ddp_params_ready first. */
void ddp_gather_params(data_parallel *d, void *params);
/* gpt2's params_needed_fn (ctx: the data_parallel): compute waits for the
 * gathered parameters of [begin, end). */
void ddp_params_needed(void *ctx, size_t begin, size_t end);
/* Compute waits for every gathered parameter. */
void ddp_params_ready(data_parallel *d);

/* Once the host has waited for a step: records the communication it could
 * not hide (the reduction's tail after backward, the all-gather, the scalar
 * sums) for the trace (comm_trace) and the end-of-run summary. */
void ddp_step_done(data_parallel *d);
/* At the end of a run, every rank prints "param checksum <hex>" of its
 * parameters (identical on every rank, or data parallelism is broken), and
 * rank 0 the median exposed communication per step. Collective. */
void ddp_report(data_parallel *d, const void *params, size_t n_elements);
#endif
