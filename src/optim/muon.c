/* Muon behind the optimizer seam (optimizer.h): Muon (kernels/muon.h) for
 * the blocks' 2-D weights, AdamW for everything else (the embeddings, the
 * biases, the LayerNorm gains), as modded-nanogpt and nanochat split them.
 *
 * Muon orthogonalises whole matrices, so its tensors are never split over
 * ranks (the shard map keeps each on one rank) and a rank works only on
 * the matrices it owns. attn.c_attn's weight is three matrices, q, k and v
 * (rows [0, C), [C, 2C), [2C, 3C)): three maps that share a launch, each
 * orthogonalised on its own as modded-nanogpt does. Matrices of one shape
 * are orthogonalised together, in chunks that bound the workspace.
 *
 * State: "m" is Muon's momentum on its matrices and AdamW's first moment
 * elsewhere; "v" is AdamW's second moment (zero on Muon's matrices), so a
 * checkpoint has the arrays AdamW's has, under the optimizer "muon". */
#include "kernels/muon.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "kernels/adamw.h"
#include "optim/adamw_chunks.h"
#include "optim/optimizer.h"

/* The largest chunk's workspace (x and the orthogonalisation's scratch): a
 * batch larger than this gains nothing on the GPU, where 124M's 48 square
 * matrices on one rank fit in one chunk. */
#define MUON_CHUNK_BYTES ((size_t)256 << 20)
/* What one element of an element-wise update costs against one FLOP of the
 * Newton-Schulz products, for balancing the shards: an AdamW element moves
 * about 28 bytes, and an H100 does a few thousand bf16 tensor FLOPs in the
 * time it moves them. A scale, not a measurement: it only has to rank. */
#define MUON_FLOPS_PER_ELEMENT 4096.0

/* Muon's tensors: the blocks' 2-D weights ("h.<i>.<...>.weight"). */
static bool muon_owns(const param_tensor *t) {
    return t->ndim == 2 && strncmp(t->name, "h.", 2) == 0;
}

/* The matrices Muon sees in t: c_attn's weight (3C x C) is three C x C. */
static int matrices_of(const param_tensor *t, int *rows, int *cols) {
    *rows = (int)t->shape[0];
    *cols = (int)t->shape[1];
    const size_t len = strlen(t->name), suffix = strlen("attn.c_attn.weight");
    if (len >= suffix && strcmp(t->name + len - suffix, "attn.c_attn.weight") == 0 &&
        t->shape[0] == 3 * t->shape[1]) {
        *rows = (int)t->shape[1];
        return 3;
    }
    return 1;
}

/* One launch's worth: count matrices of one shape, host offsets. */
typedef struct {
    int rows, cols, count;
    int64_t *offsets; /* from the shard's start */
} chunk_plan;

typedef struct {
    chunk_plan *chunks;
    int n;
    size_t x_bytes, scratch_bytes; /* the largest chunk's */
} muon_plan;

static size_t scratch_bytes(int count, int rows, int cols, size_t elem_bytes) {
    const size_t s = rows < cols ? rows : cols;
    return (size_t)count * ((size_t)rows * cols + 2 * s * s) * elem_bytes;
}

/* The shard's matrices grouped by shape (in buffer order within a shape),
 * cut into chunks of at most MUON_CHUNK_BYTES of workspace. */
static muon_plan plan_chunks(const gpt2_layout *lay, size_t lo, size_t hi, size_t elem_bytes) {
    muon_plan p = {0};
    /* at most a chunk per matrix, at most three matrices per tensor */
    p.chunks = xcalloc(3 * (size_t)lay->n_tensors, sizeof *p.chunks);
    for (int i = 0; i < lay->n_tensors; i++) {
        const param_tensor *t = &lay->tensors[i];
        if (!muon_owns(t) || t->offset + t->numel <= lo || t->offset >= hi) continue;
        CHECK(t->offset >= lo && t->offset + t->numel <= hi,
              "Muon's %s is split by the shard [%zu, %zu): the shard map must keep it whole",
              t->name, lo, hi);
        int rows, cols;
        const int k = matrices_of(t, &rows, &cols);
        const size_t per =
            (size_t)rows * cols * elem_bytes + scratch_bytes(1, rows, cols, elem_bytes);
        const int max_count = per >= MUON_CHUNK_BYTES ? 1 : (int)(MUON_CHUNK_BYTES / per);
        for (int m = 0; m < k; m++) {
            chunk_plan *c = NULL; /* the last chunk of this shape, if it has room */
            for (int j = p.n - 1; j >= 0; j--)
                if (p.chunks[j].rows == rows && p.chunks[j].cols == cols) {
                    if (p.chunks[j].count < max_count) c = &p.chunks[j];
                    break;
                }
            if (!c) {
                c = &p.chunks[p.n++];
                *c = (chunk_plan){rows, cols, 0, xcalloc((size_t)max_count, sizeof(int64_t))};
            }
            c->offsets[c->count++] = (int64_t)(t->offset - lo) + (int64_t)m * rows * cols;
        }
    }
    for (int j = 0; j < p.n; j++) {
        const chunk_plan *c = &p.chunks[j];
        const size_t x = (size_t)c->count * c->rows * c->cols * elem_bytes;
        const size_t s = scratch_bytes(c->count, c->rows, c->cols, elem_bytes);
        if (x > p.x_bytes) p.x_bytes = x;
        if (s > p.scratch_bytes) p.scratch_bytes = s;
    }
    return p;
}

static void plan_free(muon_plan *p) {
    for (int j = 0; j < p->n; j++) free(p->chunks[j].offsets);
    free(p->chunks);
}

typedef struct {
    muon_batch batch; /* offsets on the backend */
    float scale;
} muon_chunk;

typedef struct {
    adamw_hyper adamw; /* lr and t set per step */
    uint8_t *chunk_flags;
    double lr;
    float momentum, weight_decay;
    muon_chunk *chunks;
    int n_chunks;
    void *x; /* the largest chunk's look-ahead, orthogonalised in place */
} muon_impl;

static uint8_t adamw_flag(const param_tensor *t) {
    return muon_owns(t) ? ADAMW_CHUNK_SKIP : (uint8_t)t->decay;
}

static void *muon_create(const optimizer *opt, const config *cfg, const gpt2_layout *lay) {
    const kernel_ops *ops = opt->ops;
    muon_impl *u = xcalloc(1, sizeof *u);
    u->adamw = (adamw_hyper){.beta1 = (float)cfg->beta1,
                             .beta2 = (float)cfg->beta2,
                             .eps = (float)cfg->eps,
                             .weight_decay = (float)cfg->weight_decay};
    u->chunk_flags = adamw_chunk_flags(lay, ops, opt->lo, opt->hi, adamw_flag);
    u->lr = cfg->muon_lr;
    u->momentum = (float)cfg->muon_momentum;
    u->weight_decay = (float)cfg->muon_weight_decay;
    muon_plan p = plan_chunks(lay, opt->lo, opt->hi, ops->elem_bytes);
    u->n_chunks = p.n;
    u->chunks = xcalloc(p.n ? (size_t)p.n : 1, sizeof *u->chunks);
    for (int j = 0; j < p.n; j++) {
        const chunk_plan *c = &p.chunks[j];
        const size_t bytes = (size_t)c->count * sizeof(int64_t);
        int64_t *offsets = ops->alloc(bytes);
        ops->upload(offsets, c->offsets, bytes);
        u->chunks[j] =
            (muon_chunk){{c->rows, c->cols, c->count, offsets}, muon_shape_scale(c->rows, c->cols)};
    }
    u->x = p.n ? ops->alloc(p.x_bytes) : NULL;
    plan_free(&p);
    return u;
}

static void muon_destroy(void *impl, const kernel_ops *ops) {
    muon_impl *u = impl;
    for (int j = 0; j < u->n_chunks; j++) ops->release((void *)u->chunks[j].batch.offsets);
    free(u->chunks);
    if (u->x) ops->release(u->x);
    ops->release(u->chunk_flags);
    free(u);
}

static void muon_step(optimizer *opt, void *params, const void *shard_grads,
                      const optimizer_schedule *s) {
    muon_impl *u = opt->impl;
    const kernel_ops *ops = opt->ops;
    void *shard_params = ops_at(ops, params, opt->lo);
    u->adamw.lr = (float)s->lr;
    u->adamw.t = opt->step;
    ops->adamw_update(shard_params, opt->master, shard_grads, opt->state[0], opt->state[1],
                      opt->hi - opt->lo, u->chunk_flags, opt->grad_scale, &u->adamw);
    for (int j = 0; j < u->n_chunks; j++) {
        const muon_chunk *c = &u->chunks[j];
        const muon_hyper h = {.momentum = u->momentum,
                              .lr = (float)(u->lr * s->factor),
                              .weight_decay = u->weight_decay,
                              .scale = c->scale};
        ops->muon_momentum(u->x, opt->state[0], shard_grads, &c->batch, opt->grad_scale,
                           u->momentum);
        ops->muon_orthogonalize(u->x, c->batch.count, c->batch.rows, c->batch.cols);
        ops->muon_apply(shard_params, opt->master, u->x, &c->batch, opt->grad_scale, &h);
    }
}

static bool muon_splittable(const param_tensor *t) { return !muon_owns(t); }

static double muon_cost(const param_tensor *t) {
    if (!muon_owns(t)) return (double)t->numel;
    int rows, cols;
    const int k = matrices_of(t, &rows, &cols);
    return (double)t->numel + k * muon_newton_schulz_flops(rows, cols) / MUON_FLOPS_PER_ELEMENT;
}

static size_t muon_extra_bytes(const gpt2_layout *lay, size_t lo, size_t hi, size_t elem_bytes) {
    muon_plan p = plan_chunks(lay, lo, hi, elem_bytes);
    const size_t bytes = p.x_bytes + p.scratch_bytes;
    plan_free(&p);
    return bytes;
}

const optimizer_kind optimizer_muon = {
    .name = "muon",
    .n_state = 2,
    .state_names = {"m", "v"},
    .state_description = "fp32 master, Muon momentum / AdamW m, AdamW v",
    .splittable = muon_splittable,
    .cost = muon_cost,
    .extra_bytes = muon_extra_bytes,
    .create = muon_create,
    .destroy = muon_destroy,
    .step = muon_step,
};
