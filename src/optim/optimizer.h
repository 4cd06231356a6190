/* The optimizer seam: what the rest of the trainer knows of an optimizer.
 *
 * An optimizer updates the shard [lo, hi) of the flat parameter buffer that
 * this rank owns (ZeRO-1; a single rank owns everything). Every optimizer
 * keeps fp32 master weights of its shard, and names what else it keeps:
 * fp32 arrays of the shard's length, element by element (AdamW: m and v),
 * which checkpoints store under those names and reshard by range on resume,
 * and bytes of its own beyond them (a workspace), for the memory estimate
 * and the pre-flight. It says which tensors it may split over ranks and
 * what each costs it, and the shard map (dist/zero.h) follows: a tensor it
 * needs whole lives on one rank. Nothing outside optim/ assumes master + m
 * + v; an implementation is an optimizer_kind (adamw.c).
 *
 * The global-norm clipping around the step is the same for every
 * optimizer and lives here: the sum of squares of the shard's gradients,
 * summed over ranks by the caller, gives the factor the step multiplies the
 * gradients by, all on the backend (no round trip to the host). */
#ifndef GPT2_OPTIM_OPTIMIZER_H
#define GPT2_OPTIM_OPTIMIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "dist/zero.h"
#include "kernels/ops.h"
#include "model/layout.h"

#define OPTIMIZER_MAX_STATE 4

typedef struct optimizer optimizer;

/* What one step is told by the schedule (optim/schedule.h). */
typedef struct {
    double lr;     /* the schedule's learning rate for this step (cfg->lr scaled) */
    double factor; /* the schedule's multiplier, lr / cfg->lr: for groups with their own lr */
} optimizer_schedule;

typedef struct optimizer_kind {
    const char *name; /* "adamw": what checkpoints record */
    /* fp32 arrays kept per element of the shard besides the master weights,
     * by their names in checkpoints (AdamW: "m", "v"), and how a dry run
     * describes the whole state ("fp32 master, m, v"). */
    int n_state;
    const char *state_names[OPTIMIZER_MAX_STATE];
    const char *state_description;
    /* Whether the optimizer may split t over ranks (it works element by
     * element), and t's share of its work and state, for balancing shards. */
    bool (*splittable)(const param_tensor *t);
    double (*cost)(const param_tensor *t);
    /* Bytes it keeps on the backend for the shard [lo, hi) beyond the
     * arrays above, with parameters of elem_bytes each (NULL: none, as
     * AdamW). */
    size_t (*extra_bytes)(const gpt2_layout *lay, size_t lo, size_t hi, size_t elem_bytes);
    /* Its own state for opt's shard (opt's arrays are allocated; the
     * hyper-parameters come from cfg), and its release. */
    void *(*create)(const optimizer *opt, const config *cfg, const gpt2_layout *lay);
    void (*destroy)(void *impl, const kernel_ops *ops);
    /* One update of the shard from shard_grads (indexed from lo) times
     * opt->grad_scale, queued on the backend; opt->step already counts it.
     * Writes the new values into params (the full flat buffer, storage
     * type) at [lo, hi). A negative *grad_scale (CLIP_SKIP_STEP) must
     * change nothing. */
    void (*step)(optimizer *opt, void *params, const void *shard_grads,
                 const optimizer_schedule *s);
} optimizer_kind;

struct optimizer {
    const optimizer_kind *kind;
    const kernel_ops *ops;
    size_t lo, hi;
    float *master;                     /* hi - lo fp32, on the backend */
    float *state[OPTIMIZER_MAX_STATE]; /* kind->n_state arrays of hi - lo fp32 */
    /* On the backend, so that clipping never waits for the host: the sum of
     * squares of the step's gradients (summed over ranks by the caller) and
     * the factor the step multiplies them by. */
    double *grad_sum_squares;
    float *grad_scale;
    int step; /* updates applied so far (AdamW's t - 1) */
    void *impl;
};

extern const optimizer_kind optimizer_adamw;
extern const optimizer_kind optimizer_muon; /* optim/muon.c */

/* The optimizer a config asks for. */
const optimizer_kind *optimizer_kind_for(const config *cfg);
/* The kind of this name, or NULL. */
const optimizer_kind *optimizer_kind_named(const char *name);

/* The arrays a checkpoint stores: 0 is "master", then the kind's state. */
int optimizer_n_arrays(const optimizer_kind *kind);
const char *optimizer_array_name(const optimizer_kind *kind, int i);
float *optimizer_array(const optimizer *opt, int i);
/* What the kind keeps on the backend for the shard [lo, hi), with
 * parameters of elem_bytes each. */
size_t optimizer_state_bytes(const optimizer_kind *kind, const gpt2_layout *lay, size_t lo,
                             size_t hi, size_t elem_bytes);

/* ZeRO-1's shard map for world ranks, along whole tensors where the kind
 * needs them whole (dist/zero.h), balanced by the kind's cost. */
void optimizer_shard_map(const optimizer_kind *kind, const gpt2_layout *lay, int world,
                         shard_map *map);

/* host_params: the full fp32 initial parameters; the shard's slice becomes
 * the master copy, the state starts at zero. */
optimizer *optimizer_create(const optimizer_kind *kind, const config *cfg, const gpt2_layout *lay,
                            const kernel_ops *ops, size_t lo, size_t hi, const float *host_params);
void optimizer_free(optimizer *opt);

/* grad_sum_squares = the sum of squares of the shard's gradients;
 * shard_grads[k] is the gradient of element lo + k (the reduced shard, or
 * the full buffer when lo = 0). Queued on the backend: nothing waits. */
void optimizer_grad_sum_squares(optimizer *opt, const void *shard_grads);
/* grad_scale = torch.nn.utils.clip_grad_norm_'s factor for the global norm
 * sqrt(grad_sum_squares) (kernels/norm.h: clip_factor); 1 when clip <= 0. */
void optimizer_clip(optimizer *opt, double clip);
/* sqrt(grad_sum_squares) on the host: waits for the backend (for logging). */
double optimizer_grad_norm(const optimizer *opt);
/* One update of the shard (the kind's step), counted in opt->step. A
 * negative grad_scale (CLIP_SKIP_STEP) changes nothing; the caller then
 * takes the count back (train/safety/nonfinite.h). */
void optimizer_step(optimizer *opt, void *params, const void *shard_grads,
                    const optimizer_schedule *s);
#endif
