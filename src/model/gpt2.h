/* GPT-2 forward and backward, written once over the kernel table (ops.h):
 * parameters and gradients are flat buffers in the layout of layout.h,
 * activations are kept per block for backward, and the classifier runs in
 * chunks of rows so the full logits matrix never exists. */
#ifndef GPT2_MODEL_GPT2_H
#define GPT2_MODEL_GPT2_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/ops.h"
#include "model/layout.h"

/* Called during backward whenever gradients become final: every element of
 * the flat gradient buffer below ready_end will not change again in this
 * backward. ready_end only grows. */
typedef void (*grads_ready_fn)(void *ctx, size_t ready_end);

typedef struct {
    void *res1, *ln1, *qkv, *atty, *res2, *ln2, *fch, *fch_gelu; /* storage type */
    float *ln1_mean, *ln1_rstd, *ln2_mean, *ln2_rstd, *lse;
} block_acts;

typedef struct {
    gpt2_layout lay;
    const kernel_ops *ops;
    void *params; /* flat, lay.n_elements, storage type */
    void *grads;  /* same layout */
    int B, T;     /* activation capacity: B sequences of T tokens */
    int fwd_B, fwd_T; /* shape of the last forward */
    block_acts *acts;
    void *res_final, *lnf;         /* after the last block */
    float *lnf_mean, *lnf_rstd;
    void *scratch;                 /* (B,T,C) projection outputs */
    void *logits;                  /* one chunk of classifier rows, (chunk, Vp) */
    int classifier_chunk;          /* rows per chunk */
    float *losses;                 /* (B,T) per-token losses of the last forward */
    int32_t *inputs, *targets;     /* (B,T) on the backend */
    /* backward scratch */
    void *dres, *dln, *dfch, *dqkv;
} gpt2_model;

/* Allocates parameters, gradients and activations for micro-batches of up
 * to B x T on the backend. */
void gpt2_create(gpt2_model *m, const gpt2_layout *lay, const kernel_ops *ops, int B, int T);
void gpt2_free(gpt2_model *m);

/* GPT-2 initialisation into a host fp32 buffer of lay->n_elements: N(0, 0.02)
 * weights and embeddings, residual projections N(0, 0.02/sqrt(2L)), zero
 * biases, unit LayerNorm gains; padding (vocab rows, gaps) zero. The same on
 * every rank for the same seed. */
void gpt2_init_params(const gpt2_layout *lay, uint64_t seed, float *host_params);

/* Forward over inputs/targets (host int32, B x T, B <= capacity). With
 * dloss != 0 the classifier's backward runs too (dlogits scaled by dloss,
 * d(ln_f output) kept for gpt2_backward, wte gradient accumulated).
 * targets may be NULL (no loss): then only activations are computed.
 * Returns the mean loss over the B x T tokens (0 without targets). */
float gpt2_forward(gpt2_model *m, const int32_t *inputs, const int32_t *targets, int B, int T,
                   float dloss);

/* Backward of the last gpt2_forward (which must have had dloss != 0);
 * accumulates (+=) into m->grads. on_ready (may be NULL) is told as ranges
 * of gradients become final. */
void gpt2_backward(gpt2_model *m, grads_ready_fn on_ready, void *ctx);

/* Logits (host fp32, Vp each) of the last position of each of the B
 * sequences of the last forward. */
void gpt2_last_logits(gpt2_model *m, int B, int T, float *host_logits);
#endif
