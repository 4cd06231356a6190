/* Gradient buckets: the flat gradient buffer cut into contiguous ranges of
 * about bucket_mb. Backward finalises gradients front to back (layout.h), so
 * a bucket is posted for reduction as soon as the ready edge passes its end,
 * while backward goes on with the layers below. Only the last micro-step of
 * an accumulation is armed: earlier ones reduce nothing. */
#ifndef GPT2_DIST_BUCKETS_H
#define GPT2_DIST_BUCKETS_H

#include <stdbool.h>
#include <stddef.h>

#include "dist/comm.h"

typedef struct {
    size_t begin, end;
    double posted_ms; /* since the bucket plan was armed */
} grad_bucket;

typedef struct {
    grad_bucket *buckets;
    int n_buckets;
    int next; /* first bucket not yet posted */
    bool armed;
    communicator *comm;
    const shard_map *map; /* NULL: all-reduce (zero_stage 0); else reduce-scatter */
    void *grads, *shard_grads;
    double armed_at_ms, backward_end_ms;
    comm_timing timing; /* of the last completed step (ddp_step_done) */
} bucket_plan;

/* Elements in one bucket of bucket_mb MiB (the last may hold fewer). */
size_t buckets_elements_per_bucket(double bucket_mb, size_t elem_bytes);

/* Buckets of bucket_mb MiB (a multiple of 128 elements, at least 128) over
 * n_elements of elem_bytes each. */
void buckets_init(bucket_plan *p, size_t n_elements, size_t elem_bytes, double bucket_mb,
                  communicator *comm, const shard_map *map);
void buckets_free(bucket_plan *p);

/* Arms the plan for the next backward: its buckets will be reduced. */
void buckets_arm(bucket_plan *p, void *grads, void *shard_grads);

/* grads_ready_fn for gpt2_backward (ctx is the bucket_plan): posts every
 * bucket that ends at or below ready_end, then lets communication progress. */
void buckets_on_ready(void *ctx, size_t ready_end);

/* Completes every posted reduction and disarms; records the end of backward
 * (the call's time) for the trace. */
void buckets_finish(bucket_plan *p);

/* Appends one JSON line per bucket and one for the end of backward, with the
 * step's exposed communication (timing). */
void buckets_write_trace(const bucket_plan *p, const char *path, int step);

#endif
