/* FP8 for the transformer blocks' linear layers (gpt2_options.fp8): the
 * four products of each block (attn.c_attn, attn.c_proj, mlp.c_fc,
 * mlp.c_proj), forward, input gradient and weight gradient, read FP8
 * copies of their operands (E4M3 activations and weights, E5M2 output
 * gradients); everything else (embeddings, LayerNorm, attention, the
 * classifier, the residual stream, the optimizer) stays as it was.
 *
 * Each operand is a tensor of its own with a per-tensor scale from
 * delayed scaling (kernels/fp8.h: Transformer Engine's recipe over an amax
 * history), updated at the start of every forward on the backend, with
 * no host synchronisation. The operands are written by the passes that
 * produce them where the backend fuses that (the LayerNorms before
 * attn.c_attn and mlp.c_fc, the GELU before mlp.c_proj and its backward,
 * a block's weights in one batched cast), by a cast of their own
 * otherwise. The weights' copies are cast once per optimizer step, not
 * once per micro-step: the trainer tells the later micro-steps' forwards
 * that the weights have not changed (fp8_layers_hold_weights), as
 * Transformer Engine's is_first_microbatch does. Before a tensor's first
 * cast (a new run) its
 * scale comes from its own amax (one extra pass, that step only), so that
 * the first steps do not underflow: weights of 0.02 and gradients of
 * 1e-5 sit below E4M3's and E5M2's normal ranges at scale 1.
 *
 * Memory: the forward keeps each product's input transposed in FP8 for
 * the weight gradient (7 C bytes per token per block; 3 C with
 * recompute_gelu, where mlp.c_proj's is cast again from the GELU's input
 * in the backward, into one buffer for all blocks), and the weights' FP8
 * copies and their transposes (24 C^2 bytes per block); the output
 * gradients' copies are scratch shared by all blocks. The bf16 outputs of
 * the LayerNorms and the GELU are never stored (12 C bytes per token per
 * block less than BF16: gpt2_fp8_saved_bytes). */
#ifndef GPT2_MODEL_FP8_LAYERS_H
#define GPT2_MODEL_FP8_LAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kernels/ops.h"
#include "model/layout.h"

#ifdef __cplusplus
extern "C" { /* the FP8 benchmark parses a mode too */
#endif
/* fp8_fast_accum's modes by name, in the enum's order, NULL-terminated:
 * the choices of the config key fp8_fast_accum. */
extern const char *const fp8_fast_accum_names[];
/* The mode of that name; false, *out untouched, for any other name. */
bool fp8_fast_accum_named(const char *name, fp8_fast_accum *out);
#ifdef __cplusplus
}
#endif

/* A block's linear layers, in forward order. */
typedef enum { FP8_QKV, FP8_ATTPROJ, FP8_FC, FP8_FCPROJ, FP8_LINEARS } fp8_linear;

/* The tied lm head in FP8 (gpt2_options.fp8_lm_head): its three products
 * over each chunk of the classifier's rows, logits = x wte^T, dx =
 * dlogits wte and dwte += dlogits^T x, read E4M3 copies of x (ln_f's
 * output) and wte, and an E5M2 copy of dlogits that the classifier writes
 * itself. x and wte are scaled by their own amax in every forward that
 * casts them (current scaling: one pass over each for its amax first;
 * wte's copies are held as the blocks' weights are), so the state is not
 * carried from step to step nor checkpointed; dlogits, which is
 * at most |dloss| in size, by a fixed power of two that puts |dloss| at
 * 2^15 (E5M2 goes to 57344, and down to 2^-31 of that). */
typedef struct {
    int rows, C, Vp;    /* rows: the classifier's chunk, a multiple of 16; 0: no FP8 lm head */
    fp8_scaling s;      /* backend arrays: x and wte, history of one */
    float *g_scale;     /* backend: dlogits' scale and dequant (STRIDE floats apart) */
    float g_dloss;      /* the dloss g_scale is for (0: none yet) */
    uint8_t *w8, *w8_t; /* wte (Vp, C) and its transpose */
    uint8_t *x8, *x8_t; /* a chunk of x (rows, C) and its transpose */
    uint8_t *g8, *g8_t; /* a chunk of dlogits (rows, Vp) and its transpose */
    bool w_fresh;       /* w8, w8_t hold this forward's wte */
} fp8_lm_head;

typedef struct fp8_layers_s {
    int n_layer, C, N; /* N: capacity, tokens per forward */
    fp8_fast_accum fast_accum;
    bool attn_proj_bf16; /* attn.c_proj is bf16: its w8, w8_t, x8_t are NULL, its tensors unused */
    uint8_t *gelu_t_shared; /* recompute_gelu: mlp.c_proj's transposed input, every block's */
    int64_t forwards;
    fp8_scaling s;                /* backend arrays: 3 tensors (inp, weight, dout) per linear */
    bool *bootstrapped;           /* host: the tensor's scale has come from its own amax */
    uint8_t **w8, **w8_t, **x8_t; /* per block and linear */
    uint8_t *x8, *g8, *g8_t;      /* scratch: the forward's input, the backward's dout */
    uint8_t *amax_scratch;        /* the bootstrap pass's throwaway output */
    int dout_ready;   /* the linear (block * FP8_LINEARS + id) whose output gradient g8, g8_t
                       already hold (cast fused into the GELU or LayerNorm backward), or -1 */
    int inp_ready;    /* the linear whose input x8 (and x8_t) already hold (cast fused into
                       the LayerNorm or GELU before it), or -1 */
    bool *w_fresh;    /* host, per linear: w8, w8_t hold this forward's weights */
    float *w_dequant; /* backend, per linear (STRIDE apart): the factor w8, w8_t were cast at */
    bool hold_next;   /* fp8_layers_hold_weights: the next forward keeps the copies */
    fp8_lm_head lm;   /* the lm head's products (fp8_lm_head_create), or lm.rows == 0 */
} fp8_layers;

/* Allocates the state for up to N tokens per forward; history and margin
 * are the recipe's (fp8_amax_history, fp8_margin), fast_accum the products
 * that accumulate fast (fp8_fast_accum); recompute_gelu: no block keeps
 * mlp.c_proj's transposed input (fp8_recompute_gelu_input); attn_proj_bf16:
 * attn.c_proj is not one of the FP8 layers (no copies of its operands; the
 * functions below fail if asked for it). Fails unless the backend has FP8
 * ops and N is a multiple of 16 (the transposed copies). */
void fp8_layers_create(fp8_layers *f, const kernel_ops *ops, const gpt2_layout *lay, int N,
                       int history, int margin, fp8_fast_accum fast_accum, bool recompute_gelu,
                       bool attn_proj_bf16);
void fp8_layers_free(fp8_layers *f, const kernel_ops *ops);
/* The backend bytes fp8_layers_create allocates. */
size_t fp8_layers_bytes(const gpt2_layout *lay, int N, int history, bool recompute_gelu,
                        bool attn_proj_bf16);

/* The scaling state on the host, for checkpoints: n tensors (three per
 * linear layer, block by block: input, weight, output gradient), each
 * with its scale, the amax of the casts since the last update, its
 * history of len amaxes, and whether its first cast has happened;
 * forwards: the updates so far. */
typedef struct {
    int n, len;
    int64_t forwards;
    float *scale, *amax, *history, *bootstrapped; /* bootstrapped: 0 or 1 */
} fp8_layers_state;
/* A copy of f's state (malloc'd: fp8_layers_state_free); waits for the
 * device. */
void fp8_layers_state_get(const fp8_layers *f, const kernel_ops *ops, fp8_layers_state *out);
/* f's state from a copy of the same n and len (dequant = 1 / scale, as
 * the update computes it), so that a resumed run casts as the
 * uninterrupted one would have. */
void fp8_layers_state_set(fp8_layers *f, const kernel_ops *ops, const fp8_layers_state *in);
void fp8_layers_state_free(fp8_layers_state *s);

/* Called once per forward, before its first fp8_linear_forward: the
 * previous forward's amaxes go into the history and the scales follow. */
void fp8_layers_begin_forward(fp8_layers *f, const kernel_ops *ops);
/* The weights (the blocks' and wte) are those of the last forward (the
 * micro-steps of one optimizer step): the next forward keeps that
 * forward's FP8 copies of them instead of casting them again, each with
 * the factor it was cast at, and adds no amax of them to the history.
 * One forward only; a forward not told so casts every weight. */
void fp8_layers_hold_weights(fp8_layers *f);

/* Casts the weights of block l (in FP8_LINEARS order) that this forward
 * does not hold yet in one pass (after an amax pass over each whose scale
 * is not known yet); the block's linear forwards then skip their own
 * weight casts. */
void fp8_block_weights(fp8_layers *f, const kernel_ops *ops, int l,
                       const void *const weights[FP8_LINEARS]);

/* out = inp @ weight^T + bias for linear `id` of block l, N tokens,
 * C -> OC, with FP8 operands (plus residual where not NULL: a layer whose
 * output joins the residual stream, as ops->matmul_residual_forward).
 * for_backward: keep what fp8_linear_backward needs (N a multiple of 16).
 * mlp.c_fc (FP8_FC) takes pre: the product goes there, out is not written,
 * and gelu(pre) goes straight into mlp.c_proj's FP8 input, which that
 * layer's forward (next, with the same N) takes. */
void fp8_linear_forward(fp8_layers *f, const kernel_ops *ops, int l, fp8_linear id, void *out,
                        const void *residual, void *pre, const void *inp, const void *weight,
                        const void *bias, int N, int C, int OC, bool for_backward);
/* The LayerNorm whose output is the input of linear `id` of block l
 * (FP8_QKV: ln_1, FP8_FC: ln_2), as ops->residual_layernorm_forward
 * (residual NULL: ops->layernorm_forward of a), with its output going
 * straight into that linear's FP8 input (no bf16 output), which its
 * forward (next, with the same N and for_backward) then takes. The first
 * time, the pass runs twice: once for the input's amax and first scale. */
void fp8_layernorm_forward(fp8_layers *f, const kernel_ops *ops, int l, fp8_linear id,
                           void *residual, float *mean, float *rstd, const void *a, const void *b,
                           const void *weight, const void *bias, int N, int C, bool for_backward);
/* The LayerNorm backward after linear `id` of block l (FP8_ATTPROJ: ln_2
 * of block l; FP8_FCPROJ: ln_1 of block l + 1, or ln_f after the last),
 * as ops->layernorm_backward: its updated dinp is that linear's output
 * gradient, which goes straight into its FP8 copy on the way (the fused
 * pass, where the backend has it and the tensor's scale is known after
 * its first cast), for that linear's backward (next, same N). */
void fp8_layernorm_backward(fp8_layers *f, const kernel_ops *ops, int l, fp8_linear id, void *dinp,
                            void *dweight, void *dbias, const void *dout, const void *inp,
                            const void *weight, const float *mean, const float *rstd, int N, int C,
                            void *dinp_colsum);
/* The attention forward of block l, as ops->attention_forward: its out is
 * attn.c_proj's input, which goes into its FP8 copy (x8, and x8_t with
 * for_backward) in the same pass where the backend has it and the tensor's
 * scale is known after its first cast, for that linear's forward (next,
 * with N = B * T), which then casts nothing. */
void fp8_attention_forward(fp8_layers *f, const kernel_ops *ops, int l, void *out, float *lse,
                           const void *qkv, int B, int T, int C, int NH, bool for_backward);
/* The attention backward of block l, as ops->attention_backward: its dqkv
 * is attn.c_attn's output gradient, which goes into its FP8 copy in the
 * same pass (where the backend has it and the tensor's scale is known
 * after its first cast; dqkv's q part is then not written), for that
 * linear's backward (next, with N = B * T). */
void fp8_attention_backward(fp8_layers *f, const kernel_ops *ops, int l, void *dqkv,
                            const void *dout, const void *qkv, const void *out, const float *lse,
                            int B, int T, int C, int NH, void *dqkv_colsum);
/* With recompute_gelu, before mlp.c_proj's backward in block l: casts
 * gelu(pre) (pre: mlp.c_fc's output, N tokens) again into that layer's
 * transposed FP8 input, the bytes its forward cast at the same scale. */
void fp8_recompute_gelu_input(fp8_layers *f, const kernel_ops *ops, int l, const void *pre, int N);
/* That layer's backward, as kernel_ops' matmul_backward (pre NULL) or
 * matmul_backward_gelu, dout bf16 (cast here, unless a fused GELU backward
 * cast it; dbias from it). Through a GELU (pre, mlp.c_proj) whose input's
 * FP8 output gradient is known to be cast next (mlp.c_fc's), the GELU
 * backward, its bias gradient (dpre_colsum) and that cast run as one pass,
 * and dinp holds the gradient before the GELU. */
void fp8_linear_backward(fp8_layers *f, const kernel_ops *ops, int l, fp8_linear id, void *dinp,
                         void *dweight, void *dbias, const void *dout, const void *pre, int N,
                         int C, int OC, void *dpre_colsum);

/* The FP8 lm head (fp8_lm_head, above) for chunks of up to `rows` (a
 * multiple of 16) and a vocabulary padded to Vp; fails where the backend
 * lacks its kernels. fp8_lm_head_bytes: what it allocates. */
void fp8_lm_head_create(fp8_layers *f, const kernel_ops *ops, const gpt2_layout *lay, int rows);
size_t fp8_lm_head_bytes(const gpt2_layout *lay, int rows);
/* Once per training forward, before its chunks: wte's copies (Vp x C, its
 * transpose) at the scale of its own amax (unless the forward holds the
 * last one's: fp8_layers_hold_weights), and x's scale (all N rows of
 * ln_f's output, which the chunks then cast) from its amax; dlogits' scale
 * for dloss. */
void fp8_lm_head_begin(fp8_layers *f, const kernel_ops *ops, const void *wte, const void *x, int N,
                       float dloss);
/* One chunk of the classifier, after fp8_lm_head_begin: x its n rows (a
 * multiple of 16) of the x given there, as gpt2's classifier_chunks does
 * it in bf16: logits (n x Vp) = x wte^T, the classifier's losses and FP8
 * dlogits (ops->classifier_forward_backward_fp8), then dx (n x C, the
 * same rows of d(ln_f's output)) = dlogits wte and dwte += dlogits^T x. */
void fp8_lm_head_chunk(fp8_layers *f, const kernel_ops *ops, void *logits, float *losses,
                       const int32_t *targets, void *dx, void *dwte, const void *x, int n, int V,
                       float dloss);

/* Where the tensors left their format's range since this process began:
 * which clipped (fp8_clipped at the scale of their casts), how often and
 * how far, most updates first; which flushed nonzero values to zero
 * (fp8_flushed), how many of how many, largest share first; 20 tensors
 * of each at most. Waits for the device. */
void fp8_layers_print_ranges(const fp8_layers *f, const kernel_ops *ops, FILE *out);
#endif
