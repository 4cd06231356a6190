/* AdamW over one contiguous shard [lo, hi) of the flat parameter buffer: fp32
 * master weights, m and v exist only for the shard (ZeRO-1: each rank owns
 * one shard; a single rank owns everything). Weight decay applies per tensor
 * (2-D only): a flag per ADAMW_DECAY_CHUNK elements of the shard says which,
 * so that the whole shard is one update. */
#ifndef GPT2_OPTIM_OPTIMIZER_H
#define GPT2_OPTIM_OPTIMIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/ops.h"
#include "model/layout.h"

typedef struct {
    size_t lo, hi;
    float *master, *m, *v; /* hi - lo fp32 each, on the backend */
    /* On the backend, so that clipping never waits for the host: the sum of
     * squares of the step's gradients (summed over ranks by the caller) and
     * the factor AdamW multiplies them by. */
    double *grad_sum_squares;
    float *grad_scale;
    /* On the backend: one byte per ADAMW_DECAY_CHUNK elements of the shard,
     * 1 where the chunk belongs to a 2-D tensor (alignment gaps: 0). */
    uint8_t *decay_chunks;
    int step; /* updates applied so far (AdamW's t - 1) */
} adamw_state;

typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
} adamw_hparams;

/* host_params: the full fp32 initial parameters; the shard's slice becomes
 * the master copy. */
void optimizer_init(adamw_state *opt, const gpt2_layout *lay, const kernel_ops *ops, size_t lo,
                    size_t hi, const float *host_params);
void optimizer_free(adamw_state *opt, const kernel_ops *ops);

/* grad_sum_squares = the sum of squares of the shard's gradients;
 * shard_grads[k] is the gradient of element lo + k (the reduced shard, or
 * the full buffer when lo = 0). Queued on the backend: nothing waits. */
void optimizer_grad_sum_squares(adamw_state *opt, const kernel_ops *ops, const void *shard_grads);

/* grad_scale = torch.nn.utils.clip_grad_norm_'s factor for the global norm
 * sqrt(grad_sum_squares) (kernels/norm.h: clip_factor); 1 when clip <= 0. */
void optimizer_clip(adamw_state *opt, const kernel_ops *ops, double clip);

/* sqrt(grad_sum_squares) on the host: waits for the backend (for logging). */
double optimizer_grad_norm(const adamw_state *opt, const kernel_ops *ops);

/* One AdamW update of the shard from shard_grads (indexed from lo) times
 * grad_scale; writes the new values into params (the full flat buffer,
 * storage type) at [lo, hi). */
void optimizer_step(adamw_state *opt, const kernel_ops *ops, void *params, const void *shard_grads,
                    const adamw_hparams *hp);
#endif
