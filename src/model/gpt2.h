/* GPT-2 forward and backward, written once over the kernel table (ops.h):
 * parameters and gradients are flat buffers in the layout of layout.h,
 * activations are kept per block for backward, and the classifier runs in
 * chunks of rows so the full logits matrix never exists. */
#ifndef GPT2_MODEL_GPT2_H
#define GPT2_MODEL_GPT2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/ops.h"
#include "model/layout.h"

/* Called during backward whenever gradients become final: every element of
 * the flat gradient buffer below ready_end will not change again in this
 * backward. ready_end only grows. */
typedef void (*grads_ready_fn)(void *ctx, size_t ready_end);

/* Called during forward before parameters [begin, end) of the flat buffer
 * are first read, in forward's order: the embeddings, block 0, ..., ln_f.
 * Lets parameters still arriving from other ranks (ZeRO-1's all-gather)
 * arrive under the compute of the layers before them. */
typedef void (*params_needed_fn)(void *ctx, size_t begin, size_t end);

typedef struct {
    /* storage type; with recompute_gelu every block's fch_gelu is the one
     * shared buffer gelu_shared; with opt.fp8 ln1, ln2 and fch_gelu are NULL
     * (the linear layers read FP8 copies of them) */
    void *res1, *ln1, *qkv, *atty, *res2, *ln2, *fch, *fch_gelu;
    float *ln1_mean, *ln1_rstd, *ln2_mean, *ln2_rstd, *lse;
} block_acts;

/* Choices that trade memory for compute; all off gives gpt2_create. */
typedef struct {
    /* Keep no per-block gelu(fch) (4 C per token per block, a fifth of the
     * activations): backward recomputes it from fch, one elementwise pass per
     * block. The CPU backend's results are bitwise the same either way. With
     * fp8 (which keeps no bf16 gelu(fch)): no block keeps its transposed FP8
     * copy either; backward casts it again, the same bytes. */
    bool recompute_gelu;
    /* The blocks' linear layers in FP8 (model/fp8_layers.h), with the
     * delayed-scaling recipe's amax history (steps, >= 1) and margin, and
     * the products that accumulate fast. */
    bool fp8;
    int fp8_history, fp8_margin;
    fp8_fast_accum fp8_fast_accum;
    /* With fp8: attn.c_proj stays bf16 (the other three in FP8). */
    bool fp8_attn_proj_bf16;
    /* With fp8: the tied lm head's products in FP8 too in training forwards
     * (fp8_layers.h's fp8_lm_head; evaluation keeps them bf16). */
    bool fp8_lm_head;
} gpt2_options;

typedef struct {
    gpt2_layout lay;
    const kernel_ops *ops;
    gpt2_options opt;
    void *params;     /* flat, lay.n_elements, storage type */
    void *grads;      /* same layout */
    int B, T;         /* activation capacity: B sequences of T tokens */
    int fwd_B, fwd_T; /* shape of the last forward */
    block_acts *acts;
    void *res_final, *lnf; /* after the last block */
    float *lnf_mean, *lnf_rstd;
    void *attproj_out;         /* (B,T,C) with opt.fp8: attn.c_proj's output (gpt2.c) */
    void *logits;              /* one chunk of classifier rows, (chunk, Vp) */
    int classifier_chunk;      /* rows per chunk */
    float *losses;             /* (B,T) per-token losses of the last forward */
    float *loss_acc;           /* (B,T) per-token loss sums since gpt2_loss_reset */
    int64_t loss_tokens;       /* tokens those sums cover */
    double *loss_sum;          /* one double on the backend: gpt2_loss_sum_async */
    void *gelu_shared;         /* (B,T,4C) with recompute_gelu, else NULL */
    int32_t *inputs, *targets; /* (B,T) on the backend */
    /* backward scratch */
    void *dres, *dln, *dfch, *dqkv;
    struct fp8_layers_s *fp8;       /* with opt.fp8, else NULL */
    params_needed_fn params_needed; /* NULL: parameters are always in place */
    void *params_needed_ctx;
} gpt2_model;

/* Allocates parameters, gradients and activations for micro-batches of up
 * to B x T on the backend. */
void gpt2_create(gpt2_model *m, const gpt2_layout *lay, const kernel_ops *ops, int B, int T);
/* The same with options (opt may be NULL: all off). */
void gpt2_create_with(gpt2_model *m, const gpt2_layout *lay, const kernel_ops *ops, int B, int T,
                      const gpt2_options *opt);
/* The bytes of the bf16 activations (ln_1's and ln_2's outputs, the GELU's)
 * that a model with opt.fp8 does not allocate, less its attproj_out (none
 * with attn_proj_bf16), against the same model without it: what a memory
 * estimate laid out without FP8 subtracts. */
size_t gpt2_fp8_saved_bytes(const gpt2_layout *lay, size_t elem_bytes, int B, int T,
                            bool recompute_gelu, bool attn_proj_bf16);
void gpt2_free(gpt2_model *m);
/* Every later forward tells fn (may be NULL) which parameters it is about to read. */
void gpt2_set_params_needed(gpt2_model *m, params_needed_fn fn, void *ctx);

/* GPT-2 initialisation into a host fp32 buffer of lay->n_elements: N(0, 0.02)
 * weights and embeddings, residual projections N(0, 0.02/sqrt(2L)), zero
 * biases, unit LayerNorm gains; padding (vocab rows, gaps) zero. The same on
 * every rank for the same seed. */
void gpt2_init_params(const gpt2_layout *lay, uint64_t seed, float *host_params);

/* Forward over inputs/targets (host int32, B x T, B <= capacity). With
 * dloss != 0 the classifier's backward runs too (dlogits scaled by dloss,
 * d(ln_f output) kept for gpt2_backward, wte gradient accumulated).
 * targets may be NULL (no loss): then only activations are computed.
 * With targets, the per-token losses are added to the loss accumulator on
 * the backend: nothing waits for the device (a training step reads its loss
 * only when it is logged). */
void gpt2_forward_async(gpt2_model *m, const int32_t *inputs, const int32_t *targets, int B, int T,
                        float dloss);
/* The parameters are those of the last forward (a later micro-step of the
 * same optimizer step, another batch of an evaluation): the next forward
 * may reuse what it derived from them instead of deriving it again (with
 * fp8, the weights' FP8 copies: fp8_layers_hold_weights). One forward
 * only. */
void gpt2_params_unchanged(gpt2_model *m);
/* Empties the loss accumulator (asynchronously). */
void gpt2_loss_reset(gpt2_model *m);
/* Mean loss per token over the forwards since the last reset (0 when none),
 * then resets: waits for the device and downloads one double. */
double gpt2_loss_take(gpt2_model *m);
/* The sum of the per-token losses since the last reset, queued into the
 * returned double on the backend (m->loss_sum: a caller may sum it over
 * ranks in place before reading it with gpt2_loss_sum_read). No reset. */
double *gpt2_loss_sum_async(gpt2_model *m);
/* *m->loss_sum on the host (waits for the device). */
double gpt2_loss_sum_read(gpt2_model *m);
/* One forward on its own: reset, gpt2_forward_async, and the mean loss over
 * its B x T tokens (0 without targets). */
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
