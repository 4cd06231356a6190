/* AdamW over a shard of the flat buffer (see optimizer.h). */
#include "optim/optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "kernels/adamw.h"

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }
static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* The shard's decay flags: each tensor's chunks get its flag. Tensors start
 * on LAYOUT_ALIGN and shards on ZERO_ALIGN, multiples of the chunk, so a
 * chunk never holds two tensors (checked). */
static uint8_t *build_decay_chunks(const gpt2_layout *lay, const kernel_ops *ops, size_t lo,
                                   size_t hi) {
    _Static_assert(LAYOUT_ALIGN % ADAMW_DECAY_CHUNK == 0, "tensors must start on a chunk");
    CHECK(lo % ADAMW_DECAY_CHUNK == 0, "optimizer shard starts at %zu, not on a %d-element chunk",
          lo, ADAMW_DECAY_CHUNK);
    const size_t n_chunks = (hi - lo + ADAMW_DECAY_CHUNK - 1) / ADAMW_DECAY_CHUNK;
    uint8_t *flags = xcalloc(n_chunks ? n_chunks : 1, 1);
    uint8_t *owner_seen = xcalloc(n_chunks ? n_chunks : 1, 1);
    for (int i = 0; i < lay->n_tensors; i++) {
        const param_tensor *t = &lay->tensors[i];
        const size_t b = max_sz(lo, t->offset), e = min_sz(hi, t->offset + t->numel);
        if (b >= e) continue;
        for (size_t c = (b - lo) / ADAMW_DECAY_CHUNK; c * ADAMW_DECAY_CHUNK < e - lo; c++) {
            CHECK(!owner_seen[c], "chunk %zu of the shard holds two tensors (%s)", c, t->name);
            owner_seen[c] = 1;
            flags[c] = t->decay;
        }
    }
    uint8_t *dev = ops->alloc(n_chunks ? n_chunks : 1);
    ops->upload(dev, flags, n_chunks ? n_chunks : 1);
    free(flags);
    free(owner_seen);
    return dev;
}

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
    opt->decay_chunks = build_decay_chunks(lay, ops, lo, hi);
}

void optimizer_free(adamw_state *opt, const kernel_ops *ops) {
    ops->release(opt->master);
    ops->release(opt->m);
    ops->release(opt->v);
    ops->release(opt->grad_sum_squares);
    ops->release(opt->grad_scale);
    ops->release(opt->decay_chunks);
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

void optimizer_step(adamw_state *opt, const kernel_ops *ops, void *params, const void *shard_grads,
                    const adamw_hparams *hp) {
    opt->step++;
    ops->adamw_update(ops_at(ops, params, opt->lo), opt->master, shard_grads, opt->m, opt->v,
                      opt->hi - opt->lo, opt->decay_chunks, hp->lr, hp->beta1, hp->beta2, hp->eps,
                      hp->weight_decay, opt->grad_scale, opt->step);
}
