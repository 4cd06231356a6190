/* Data-parallel step plumbing (see ddp.h). */
#include "dist/ddp.h"

#include <string.h>

#include "dist/fail.h"

void ddp_init(data_parallel *d, communicator *comm, const kernel_ops *ops, size_t n_elements,
              int zero_stage, double bucket_mb, void *grads) {
    memset(d, 0, sizeof *d);
    d->comm = comm;
    d->ops = ops;
    d->zero_stage = zero_stage;
    zero_shard_map(&d->map, n_elements, comm->world);
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

double ddp_sum_shards(data_parallel *d, double local) {
    if (d->comm->world == 1 || d->zero_stage == 0) return local;
    return d->comm->ops->sum_scalar(d->comm, local);
}

void ddp_gather_params(data_parallel *d, void *params) {
    if (d->comm->world == 1 || d->zero_stage == 0) return;
    d->comm->ops->all_gather(d->comm, params, &d->map);
}
