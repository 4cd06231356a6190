/* Data-parallel step plumbing (see ddp.h). */
#include "dist/ddp.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"

void ddp_init(data_parallel *d, communicator *comm, const kernel_ops *ops, const shard_map *map,
              int zero_stage, double bucket_mb, void *grads, const comm_range *gather_pieces,
              int n_gather_pieces) {
    memset(d, 0, sizeof *d);
    const size_t n_elements = map->n_elements;
    CHECK(map->world == comm->world, "a shard map for %d ranks on a communicator of %d", map->world,
          comm->world);
    size_t covered = 0;
    for (int k = 0; k < n_gather_pieces; k++)
        covered += gather_pieces[k].end - gather_pieces[k].begin;
    CHECK(n_gather_pieces > 0 && covered == n_elements,
          "the all-gather's %d pieces cover %zu of %zu elements", n_gather_pieces, covered,
          n_elements);
    d->gather_pieces = xmalloc((size_t)n_gather_pieces * sizeof(comm_range));
    memcpy(d->gather_pieces, gather_pieces, (size_t)n_gather_pieces * sizeof(comm_range));
    d->n_gather_pieces = n_gather_pieces;
    d->comm = comm;
    d->ops = ops;
    d->zero_stage = zero_stage;
    zero_shard_map_copy(&d->map, map);
    if (zero_stage == 1 && comm->world > 1) {
        d->lo = d->map.lo[comm->rank];
        d->hi = d->map.hi[comm->rank];
        d->shard_grads = ops->alloc((d->hi - d->lo) * ops->elem_bytes);
        d->owns_shard_grads = true;
    } else {
        d->lo = 0;
        d->hi = n_elements;
        d->shard_grads = grads; /* all-reduce works in place */
    }
    buckets_init(&d->buckets, n_elements, ops->elem_bytes, bucket_mb, comm,
                 zero_stage == 1 ? &d->map : NULL);
}

void ddp_free(data_parallel *d) {
    if (d->owns_shard_grads) d->ops->release(d->shard_grads);
    free(d->exposed_ms);
    free(d->gather_pieces);
    buckets_free(&d->buckets);
    zero_shard_map_free(&d->map);
    memset(d, 0, sizeof *d);
}

void ddp_arm(data_parallel *d, void *grads) {
    if (d->comm->world == 1) return;
    buckets_arm(&d->buckets, grads, d->shard_grads);
}

void ddp_finish_reduction(data_parallel *d) {
    if (d->comm->world == 1) return;
    buckets_finish(&d->buckets);
}

static bool sharded(const data_parallel *d) { return d->comm->world > 1 && d->zero_stage == 1; }

void ddp_sum_shards(data_parallel *d, double *value) {
    if (sharded(d)) d->comm->ops->sum_in_place(d->comm, value);
}

void ddp_gather_params(data_parallel *d, void *params) {
    if (sharded(d))
        d->comm->ops->all_gather_async(d->comm, params, &d->map, d->gather_pieces,
                                       d->n_gather_pieces);
}

void ddp_params_needed(void *ctx, size_t begin, size_t end) {
    data_parallel *d = ctx;
    if (sharded(d)) d->comm->ops->gather_wait(d->comm, begin, end);
}

void ddp_params_ready(data_parallel *d) { ddp_params_needed(d, 0, SIZE_MAX); }

void ddp_step_done(data_parallel *d) {
    if (d->comm->world == 1) return;
    comm_timing t;
    if (!d->comm->ops->timing(d->comm, &t)) return; /* the host did not wait: unknown */
    d->buckets.timing = t;
    if (d->n_steps == d->cap_steps) {
        d->cap_steps = d->cap_steps ? 2 * d->cap_steps : 256;
        d->exposed_ms = realloc(d->exposed_ms, (size_t)d->cap_steps * sizeof(double));
        CHECK(d->exposed_ms, "out of memory for communication timings");
    }
    d->exposed_ms[d->n_steps++] = t.reduce_tail_ms + t.gather_ms + t.scalar_ms;
}

static int compare_doubles(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* FNV-1a over the parameters' bytes as stored (bf16 on GPUs, fp32 on CPUs). */
static uint64_t params_checksum(const kernel_ops *ops, const void *params, size_t n_elements) {
    const size_t bytes = n_elements * ops->elem_bytes;
    unsigned char *host = xmalloc(bytes);
    ops->download(host, params, bytes);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < bytes; i++) h = (h ^ host[i]) * 1099511628211ull;
    free(host);
    return h;
}

void ddp_report(data_parallel *d, const void *params, size_t n_elements) {
    if (d->comm->world == 1) return;
    /* Rank 0 prints every rank's checksum: lines written by each rank
     * interleave with rank 0's wherever the launcher merges them. */
    unsigned long long sum = params_checksum(d->ops, params, n_elements);
    unsigned long long *sums =
        d->comm->rank == 0 ? xmalloc((size_t)d->comm->world * sizeof *sums) : NULL;
    group_gather(d->comm->group, &sum, sizeof sum, sums, 0);
    if (sums) {
        for (int r = 0; r < d->comm->world; r++)
            printf("param checksum rank %d: %016llx\n", r, sums[r]);
        free(sums);
    }
    fflush(stdout);
    /* Warm-up steps (NCCL connects lazily, buffers grow) are left out. */
    const int skip = d->n_steps > 4 ? 2 : 0, n = d->n_steps - skip;
    if (d->comm->rank != 0 || n <= 0) return;
    double *sorted = xmalloc((size_t)n * sizeof(double));
    memcpy(sorted, d->exposed_ms + skip, (size_t)n * sizeof(double));
    qsort(sorted, (size_t)n, sizeof(double), compare_doubles);
    printf("communication not hidden by compute, median of %d steps: %.3f ms per step (last "
           "step: reduction tail %.3f ms, parameter all-gather %.3f ms, scalar sums %.3f ms)\n",
           n, sorted[n / 2], d->buckets.timing.reduce_tail_ms, d->buckets.timing.gather_ms,
           d->buckets.timing.scalar_ms);
    free(sorted);
}
