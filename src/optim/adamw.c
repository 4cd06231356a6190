/* AdamW behind the optimizer seam (optimizer.h): torch.optim.AdamW's
 * update, element by element, so any tensor may be split over ranks; its
 * state is m and v beside the master weights. Weight decay applies per
 * tensor (2-D only): a flag per ADAMW_DECAY_CHUNK elements of the shard
 * says which, so that the whole shard is one launch. */
#include "kernels/adamw.h"

#include <stdlib.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "optim/adamw_chunks.h"
#include "optim/optimizer.h"

typedef struct {
    adamw_hyper hyper; /* lr and t set per step */
    /* On the backend: one byte per ADAMW_DECAY_CHUNK elements of the shard,
     * 1 where the chunk belongs to a 2-D tensor (alignment gaps: 0). */
    uint8_t *decay_chunks;
} adamw_impl;

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }
static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

static uint8_t decay_flag(const param_tensor *t) { return t->decay; }

/* Tensors start on LAYOUT_ALIGN and shards on ZERO_ALIGN, multiples of the
 * chunk, so a chunk never holds two tensors (checked). */
uint8_t *adamw_chunk_flags(const gpt2_layout *lay, const kernel_ops *ops, size_t lo, size_t hi,
                           uint8_t (*flag_of)(const param_tensor *t)) {
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
            flags[c] = flag_of(t);
        }
    }
    uint8_t *dev = ops->alloc(n_chunks ? n_chunks : 1);
    ops->upload(dev, flags, n_chunks ? n_chunks : 1);
    free(flags);
    free(owner_seen);
    return dev;
}

static void *adamw_create(const optimizer *opt, const config *cfg, const gpt2_layout *lay) {
    adamw_impl *a = xcalloc(1, sizeof *a);
    a->hyper = (adamw_hyper){.beta1 = (float)cfg->beta1,
                             .beta2 = (float)cfg->beta2,
                             .eps = (float)cfg->eps,
                             .weight_decay = (float)cfg->weight_decay};
    a->decay_chunks = adamw_chunk_flags(lay, opt->ops, opt->lo, opt->hi, decay_flag);
    return a;
}

static void adamw_destroy(void *impl, const kernel_ops *ops) {
    adamw_impl *a = impl;
    ops->release(a->decay_chunks);
    free(a);
}

static void adamw_step(optimizer *opt, void *params, const void *shard_grads,
                       const optimizer_schedule *s) {
    adamw_impl *a = opt->impl;
    a->hyper.lr = (float)s->lr;
    a->hyper.t = opt->step;
    opt->ops->adamw_update(ops_at(opt->ops, params, opt->lo), opt->master, shard_grads,
                           opt->state[0], opt->state[1], opt->hi - opt->lo, a->decay_chunks,
                           opt->grad_scale, &a->hyper);
}

/* Element-wise: any tensor may be split, and each element costs the same
 * (its update and its 12 bytes of state). */
static bool adamw_splittable(const param_tensor *t) {
    (void)t;
    return true;
}

static double adamw_cost(const param_tensor *t) { return (double)t->numel; }

const optimizer_kind optimizer_adamw = {
    .name = "adamw",
    .n_state = 2,
    .state_names = {"m", "v"},
    .state_description = "fp32 master, m, v",
    .splittable = adamw_splittable,
    .cost = adamw_cost,
    .extra_bytes = NULL,
    .create = adamw_create,
    .destroy = adamw_destroy,
    .step = adamw_step,
};
