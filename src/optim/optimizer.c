/* What every optimizer shares behind the seam (see optimizer.h): its
 * arrays, the shard map it asks for, global-norm clipping, the dispatch to
 * its kind. */
#include "optim/optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"

static const optimizer_kind *const KINDS[] = {&optimizer_adamw, &optimizer_muon};

const optimizer_kind *optimizer_kind_for(const config *cfg) {
    const optimizer_kind *kind = optimizer_kind_named(cfg->optimizer);
    CHECK(kind, "optimizer = %s has no implementation", cfg->optimizer);
    return kind;
}

const optimizer_kind *optimizer_kind_named(const char *name) {
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (strcmp(KINDS[i]->name, name) == 0) return KINDS[i];
    return NULL;
}

int optimizer_n_arrays(const optimizer_kind *kind) { return 1 + kind->n_state; }

const char *optimizer_array_name(const optimizer_kind *kind, int i) {
    CHECK(i >= 0 && i <= kind->n_state, "optimizer array %d of %d", i, 1 + kind->n_state);
    return i == 0 ? "master" : kind->state_names[i - 1];
}

float *optimizer_array(const optimizer *opt, int i) {
    CHECK(i >= 0 && i <= opt->kind->n_state, "optimizer array %d of %d", i, 1 + opt->kind->n_state);
    return i == 0 ? opt->master : opt->state[i - 1];
}

size_t optimizer_state_bytes(const optimizer_kind *kind, const gpt2_layout *lay, size_t lo,
                             size_t hi, size_t elem_bytes) {
    const size_t arrays = (size_t)optimizer_n_arrays(kind) * sizeof(float) * (hi - lo);
    return arrays + (kind->extra_bytes ? kind->extra_bytes(lay, lo, hi, elem_bytes) : 0);
}

void optimizer_shard_map(const optimizer_kind *kind, const gpt2_layout *lay, int world,
                         shard_map *map) {
    shard_tensor *t = xcalloc((size_t)lay->n_tensors, sizeof *t);
    for (int i = 0; i < lay->n_tensors; i++) {
        const param_tensor *p = &lay->tensors[i];
        t[i] = (shard_tensor){.offset = p->offset,
                              .numel = p->numel,
                              .cost = kind->cost(p),
                              .splittable = kind->splittable(p)};
    }
    zero_shard_map_tensors(map, lay->n_elements, world, t, lay->n_tensors);
    free(t);
}

optimizer *optimizer_create(const optimizer_kind *kind, const config *cfg, const gpt2_layout *lay,
                            const kernel_ops *ops, size_t lo, size_t hi, const float *host_params) {
    CHECK(lo <= hi && hi <= lay->n_elements, "bad optimizer shard [%zu, %zu)", lo, hi);
    optimizer *opt = xcalloc(1, sizeof *opt);
    opt->kind = kind;
    opt->ops = ops;
    opt->lo = lo;
    opt->hi = hi;
    const size_t bytes = (hi - lo) * sizeof(float);
    opt->master = ops->alloc(bytes);
    ops->upload(opt->master, host_params + lo, bytes);
    for (int i = 0; i < kind->n_state; i++) {
        opt->state[i] = ops->alloc(bytes);
        ops->zero(opt->state[i], bytes);
    }
    opt->grad_sum_squares = ops->alloc(sizeof(double));
    opt->grad_scale = ops->alloc(sizeof(float));
    ops->zero(opt->grad_sum_squares, sizeof(double));
    optimizer_clip(opt, 0.0); /* a factor of 1 until the first step's */
    opt->impl = kind->create(opt, cfg, lay);
    return opt;
}

void optimizer_free(optimizer *opt) {
    if (!opt) return;
    const kernel_ops *ops = opt->ops;
    opt->kind->destroy(opt->impl, ops);
    ops->release(opt->master);
    for (int i = 0; i < opt->kind->n_state; i++) ops->release(opt->state[i]);
    ops->release(opt->grad_sum_squares);
    ops->release(opt->grad_scale);
    free(opt);
}

void optimizer_grad_sum_squares(optimizer *opt, const void *shard_grads) {
    /* One pass over the whole shard, not one per tensor: the gaps between
     * tensors hold zero gradients, so the sum is the same, for one launch. */
    opt->ops->grad_sum_squares(opt->grad_sum_squares, shard_grads, opt->hi - opt->lo);
}

void optimizer_clip(optimizer *opt, double clip) {
    opt->ops->clip_scale(opt->grad_scale, opt->grad_sum_squares, clip);
}

double optimizer_grad_norm(const optimizer *opt) {
    double sum = 0.0;
    opt->ops->download(&sum, opt->grad_sum_squares, sizeof sum);
    return sqrt(sum);
}

void optimizer_step(optimizer *opt, void *params, const void *shard_grads,
                    const optimizer_schedule *s) {
    opt->step++;
    opt->kind->step(opt, params, shard_grads, s);
}
