/* AdamW over a shard of the flat buffer (see optimizer.h). */
#include "train/optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dist/fail.h"

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }
static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

void optimizer_init(adamw_state *opt, const gpt2_layout *lay, const kernel_ops *ops, size_t lo,
                    size_t hi, const float *host_params) {
    memset(opt, 0, sizeof *opt);
    CHECK(lo <= hi && hi <= lay->n_elements, "bad optimizer shard [%zu, %zu)", lo, hi);
    opt->lo = lo;
    opt->hi = hi;
    size_t n = hi - lo;
    opt->master = ops->alloc(n * sizeof(float));
    opt->m = ops->alloc(n * sizeof(float));
    opt->v = ops->alloc(n * sizeof(float));
    ops->upload(opt->master, host_params + lo, n * sizeof(float));
    ops->zero(opt->m, n * sizeof(float));
    ops->zero(opt->v, n * sizeof(float));
    opt->grad_sum_squares = ops->alloc(sizeof(double));
    opt->grad_scale = ops->alloc(sizeof(float));
    ops->zero(opt->grad_sum_squares, sizeof(double));
    optimizer_clip(opt, ops, 0.0); /* a factor of 1 until the first step's */
    /* Segments: each tensor's intersection with the shard; alignment gaps
     * between tensors are skipped (their gradients are always zero). */
    opt->segments = xcalloc((size_t)lay->n_tensors, sizeof(opt_segment));
    for (int i = 0; i < lay->n_tensors; i++) {
        const param_tensor *t = &lay->tensors[i];
        size_t b = max_sz(lo, t->offset), e = min_sz(hi, t->offset + t->numel);
        if (b >= e) continue;
        opt->segments[opt->n_segments++] = (opt_segment){.begin = b, .end = e, .decay = t->decay};
    }
}

void optimizer_free(adamw_state *opt, const kernel_ops *ops) {
    ops->release(opt->master);
    ops->release(opt->m);
    ops->release(opt->v);
    ops->release(opt->grad_sum_squares);
    ops->release(opt->grad_scale);
    free(opt->segments);
    memset(opt, 0, sizeof *opt);
}

void optimizer_grad_sum_squares(adamw_state *opt, const kernel_ops *ops, const void *shard_grads) {
    /* One pass over the whole shard, not one per tensor: the gaps between
     * tensors hold zero gradients, so the sum is the same, for one launch. */
    ops->grad_sum_squares(opt->grad_sum_squares, shard_grads, opt->hi - opt->lo);
}

void optimizer_clip(adamw_state *opt, const kernel_ops *ops, double clip) {
    ops->clip_scale(opt->grad_scale, opt->grad_sum_squares, clip);
}

double optimizer_grad_norm(const adamw_state *opt, const kernel_ops *ops) {
    double sum = 0.0;
    ops->download(&sum, opt->grad_sum_squares, sizeof sum);
    return sqrt(sum);
}

void optimizer_step(adamw_state *opt, const kernel_ops *ops, void *params,
                    const void *shard_grads, const adamw_hparams *hp) {
    opt->step++;
    for (int i = 0; i < opt->n_segments; i++) {
        const opt_segment *s = &opt->segments[i];
        size_t k = s->begin - opt->lo, n = s->end - s->begin;
        ops->adamw_update(ops_at(ops, params, s->begin), opt->master + k,
                          ops_at(ops, shard_grads, k), opt->m + k, opt->v + k, n, hp->lr,
                          hp->beta1, hp->beta2, hp->eps, s->decay ? hp->weight_decay : 0.0f,
                          opt->grad_scale, opt->step);
    }
}
