/* Bucketed gradient reduction overlapped with backward (see buckets.h). */
#include "dist/buckets.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/fail.h"
#include "base/files.h"

size_t buckets_elements_per_bucket(double bucket_mb, size_t elem_bytes) {
    const size_t per_bucket = (size_t)(bucket_mb * 1048576.0 / (double)elem_bytes) / 128 * 128;
    return per_bucket < 128 ? 128 : per_bucket;
}

void buckets_init(bucket_plan *p, size_t n_elements, size_t elem_bytes, double bucket_mb,
                  communicator *comm, const shard_map *map) {
    memset(p, 0, sizeof *p);
    const size_t per_bucket = buckets_elements_per_bucket(bucket_mb, elem_bytes);
    p->n_buckets = (int)((n_elements + per_bucket - 1) / per_bucket);
    p->buckets = xcalloc((size_t)p->n_buckets, sizeof(grad_bucket));
    for (int i = 0; i < p->n_buckets; i++) {
        p->buckets[i].begin = (size_t)i * per_bucket;
        size_t end = (size_t)(i + 1) * per_bucket;
        p->buckets[i].end = end < n_elements ? end : n_elements;
    }
    p->comm = comm;
    p->map = map;
}

void buckets_free(bucket_plan *p) {
    free(p->buckets);
    memset(p, 0, sizeof *p);
}

void buckets_arm(bucket_plan *p, void *grads, void *shard_grads) {
    p->armed = true;
    p->next = 0;
    p->grads = grads;
    p->shard_grads = shard_grads;
    p->armed_at_ms = clock_ms();
}

void buckets_on_ready(void *ctx, size_t ready_end) {
    bucket_plan *p = ctx;
    if (!p->armed) return;
    communicator *c = p->comm;
    while (p->next < p->n_buckets && p->buckets[p->next].end <= ready_end) {
        grad_bucket *b = &p->buckets[p->next++];
        b->posted_ms = clock_ms() - p->armed_at_ms;
        if (p->map)
            c->ops->reduce_scatter_async(c, p->grads, b->begin, b->end, p->map, p->shard_grads);
        else
            c->ops->all_reduce_async(c, p->grads, b->begin, b->end);
    }
    c->ops->progress(c);
}

void buckets_finish(bucket_plan *p) {
    if (!p->armed) return;
    p->backward_end_ms = clock_ms() - p->armed_at_ms;
    CHECK(p->next == p->n_buckets, "backward ended with %d of %d buckets posted", p->next,
          p->n_buckets);
    p->comm->ops->wait_all(p->comm);
    p->armed = false;
}

void buckets_write_trace(const bucket_plan *p, const char *path, int step) {
    char why[4400];
    FILE *f = fopen_regular(path, "a", OPEN_NO_LINK, why, sizeof why);
    if (!f) FAIL("%s", why);
    for (int i = 0; i < p->n_buckets; i++)
        fprintf(f,
                "{\"type\":\"bucket_posted\",\"step\":%d,\"bucket\":%d,\"begin\":%zu,\"end\":%zu,"
                "\"ms\":%.3f}\n",
                step, i, p->buckets[i].begin, p->buckets[i].end, p->buckets[i].posted_ms);
    fprintf(f,
            "{\"type\":\"backward_end\",\"step\":%d,\"n_buckets\":%d,\"ms\":%.3f,"
            "\"reduce_tail_ms\":%.3f,\"gather_ms\":%.3f,\"scalar_ms\":%.3f}\n",
            step, p->n_buckets, p->backward_end_ms, p->timing.reduce_tail_ms, p->timing.gather_ms,
            p->timing.scalar_ms);
    fclose(f);
}
