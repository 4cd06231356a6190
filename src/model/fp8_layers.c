/* FP8 linear layers of the transformer blocks (see fp8_layers.h): the
 * state, the casts around each product and the scale updates. */
#include "model/fp8_layers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"

/* A linear layer's input and output widths. */
static void widths(fp8_linear id, int C, int *in, int *out) {
    static const int in_x[FP8_LINEARS] = {1, 1, 1, 4}, out_x[FP8_LINEARS] = {3, 1, 4, 1};
    *in = in_x[id] * C;
    *out = out_x[id] * C;
}

/* The scaled tensors of linear `i` (block * FP8_LINEARS + id): input,
 * weight, output gradient. */
enum { T_INP, T_WEIGHT, T_DOUT, T_PER_LINEAR };
/* floats between tensors' scales: each dequant 16-byte aligned for cuBLASLt */
enum { STRIDE = 4 };
static int tensor_of(int i, int which) { return i * T_PER_LINEAR + which; }

size_t fp8_layers_bytes(const gpt2_layout *lay, int N, int history, bool recompute_gelu,
                        bool attn_proj_bf16) {
    const size_t C = (size_t)lay->n_embd, L = (size_t)lay->n_layer, n = L * 12;
    const size_t big = (size_t)N * 4 * C;
    /* the inputs' transposes: C + C + C + 4 C per token, the GELU's one
     * shared by all blocks with recompute_gelu, attn.c_proj's none when
     * it is bf16; the weights and their transposes, 2 (3 + 1 + 4 + 4) C^2 */
    const size_t inputs = (recompute_gelu ? 3 : 7) - (attn_proj_bf16 ? 1 : 0);
    const size_t weights = attn_proj_bf16 ? 2 * 11 : 2 * 12;
    const size_t per_block = inputs * C * (size_t)N + weights * C * C;
    const size_t scratch =
        3 * big + (big > 4 * C * C ? big : 4 * C * C) + (recompute_gelu ? big : 0);
    /* scale, dequant and clipped strided; the casts' stats; the underflow
     * totals; the history; the format */
    const size_t scaling =
        n * (3 * STRIDE * sizeof(float) + sizeof(fp8_cast_stats) + 2 * sizeof(unsigned long long) +
             (size_t)history * sizeof(float) + 1);
    const size_t weight_dequant = L * FP8_LINEARS * STRIDE * sizeof(float); /* per copy */
    return L * per_block + scratch + scaling + weight_dequant;
}

void fp8_layers_create(fp8_layers *f, const kernel_ops *ops, const gpt2_layout *lay, int N,
                       int history, int margin, fp8_fast_accum fast_accum, bool recompute_gelu,
                       bool attn_proj_bf16) {
    if (!ops->fp8_cast || !ops->fp8_cast_batch || !ops->fp8_gelu_cast ||
        !ops->layernorm_forward_fp8 || !ops->matmul_forward_fp8 ||
        !ops->matmul_residual_forward_fp8)
        FAIL("fp8 = true: the %s backend has no FP8 kernels (device=cuda on a GPU of compute "
             "capability 8.9 or newer has)",
             ops->name);
    if (N % 16 != 0)
        FAIL("fp8 = true: %d tokens per forward (micro_batch x seq_len) must be a multiple of "
             "16 for the FP8 copies of the activations",
             N);
    if (history < 1) FAIL("fp8: an amax history of %d steps (at least 1)", history);
    memset(f, 0, sizeof *f);
    f->dout_ready = -1;
    f->inp_ready = -1;
    const int L = lay->n_layer, C = lay->n_embd, n = L * FP8_LINEARS * T_PER_LINEAR;
    f->n_layer = L;
    f->C = C;
    f->N = N;
    f->fast_accum = fast_accum;
    f->attn_proj_bf16 = attn_proj_bf16;
    f->s.n = n;
    f->s.len = history;
    f->s.margin = margin;
    f->s.stride = STRIDE;
    const size_t strided = (size_t)n * STRIDE * sizeof(float);
    float *ones = xmalloc(strided);
    uint8_t *format = xmalloc((size_t)n);
    for (int i = 0; i < n * STRIDE; i++) ones[i] = 1.0f;
    for (int i = 0; i < n; i++) format[i] = i % T_PER_LINEAR == T_DOUT ? FP8_E5M2 : FP8_E4M3;
    f->s.scale = ops->alloc(strided);
    f->s.dequant = ops->alloc(strided);
    f->s.stats = ops->alloc((size_t)n * sizeof(fp8_cast_stats));
    f->s.underflow = ops->alloc((size_t)n * 2 * sizeof(unsigned long long));
    f->s.history = ops->alloc((size_t)n * history * sizeof(float));
    f->s.clipped = ops->alloc(strided);
    ops->zero(f->s.clipped, strided);
    uint8_t *format_dev = ops->alloc((size_t)n);
    ops->upload(f->s.scale, ones, strided);
    ops->upload(f->s.dequant, ones, strided);
    ops->zero(f->s.stats, (size_t)n * sizeof(fp8_cast_stats));
    ops->zero(f->s.underflow, (size_t)n * 2 * sizeof(unsigned long long));
    ops->zero(f->s.history, (size_t)n * history * sizeof(float));
    ops->upload(format_dev, format, (size_t)n);
    f->s.format = format_dev;
    /* the weights' copies' own factors (n > L * FP8_LINEARS: ones has enough) */
    f->w_dequant = ops->alloc((size_t)L * FP8_LINEARS * STRIDE * sizeof(float));
    ops->upload(f->w_dequant, ones, (size_t)L * FP8_LINEARS * STRIDE * sizeof(float));
    free(ones);
    free(format);
    f->bootstrapped = xcalloc((size_t)n, sizeof(bool));
    f->w_fresh = xcalloc((size_t)L * FP8_LINEARS, sizeof(bool));

    const int linears = L * FP8_LINEARS;
    const size_t big = (size_t)N * 4 * C, wmax = (size_t)4 * C * C;
    if (recompute_gelu) f->gelu_t_shared = ops->alloc(big);
    f->w8 = xcalloc((size_t)linears, sizeof(uint8_t *));
    f->w8_t = xcalloc((size_t)linears, sizeof(uint8_t *));
    f->x8_t = xcalloc((size_t)linears, sizeof(uint8_t *));
    for (int i = 0; i < linears; i++) {
        if (attn_proj_bf16 && i % FP8_LINEARS == FP8_ATTPROJ) continue; /* NULL: no FP8 copies */
        int in, out;
        widths((fp8_linear)(i % FP8_LINEARS), C, &in, &out);
        f->w8[i] = ops->alloc((size_t)in * out);
        f->w8_t[i] = ops->alloc((size_t)in * out);
        f->x8_t[i] = f->gelu_t_shared && i % FP8_LINEARS == FP8_FCPROJ ? f->gelu_t_shared
                                                                       : ops->alloc((size_t)in * N);
    }
    f->x8 = ops->alloc(big);
    f->g8 = ops->alloc(big);
    f->g8_t = ops->alloc(big);
    f->amax_scratch = ops->alloc(big > wmax ? big : wmax);
}

void fp8_layers_free(fp8_layers *f, const kernel_ops *ops) {
    const int linears = f->n_layer * FP8_LINEARS;
    for (int i = 0; i < linears; i++) {
        if (!f->w8[i]) continue; /* a bf16 linear */
        ops->release(f->w8[i]);
        ops->release(f->w8_t[i]);
        if (f->x8_t[i] != f->gelu_t_shared) ops->release(f->x8_t[i]);
    }
    if (f->gelu_t_shared) ops->release(f->gelu_t_shared);
    free(f->w8);
    free(f->w8_t);
    free(f->x8_t);
    void *bufs[] = {f->s.scale,   f->s.dequant,        f->s.stats,      f->s.underflow,
                    f->s.history, f->s.clipped,        f->x8,           f->g8,
                    f->g8_t,      (void *)f->s.format, f->amax_scratch, f->w_dequant};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) ops->release(bufs[i]);
    if (f->lm.rows) {
        fp8_lm_head *h = &f->lm;
        void *lm[] = {h->s.scale, h->s.dequant, h->s.stats, h->s.history, (void *)h->s.format,
                      h->g_scale, h->w8,        h->w8_t,    h->x8,        h->x8_t,
                      h->g8,      h->g8_t};
        for (size_t i = 0; i < sizeof lm / sizeof lm[0]; i++) ops->release(lm[i]);
    }
    free(f->bootstrapped);
    free(f->w_fresh);
    memset(f, 0, sizeof *f);
}

void fp8_layers_hold_weights(fp8_layers *f) { f->hold_next = true; }

void fp8_layers_begin_forward(fp8_layers *f, const kernel_ops *ops) {
    const bool held = f->hold_next;
    f->hold_next = false;
    if (!held) { /* the weights may have changed since: every copy is cast again */
        memset(f->w_fresh, 0, (size_t)f->n_layer * FP8_LINEARS * sizeof(bool));
        f->lm.w_fresh = false;
    }
    /* A held weight's cast stats stay 0, so its history gets no amax from
     * this forward and its scale moves, if at all, only as older amaxes
     * leave the history; the copies it holds carry their own w_dequant. */
    if (f->forwards > 0) ops->fp8_scaling_update(&f->s, f->forwards);
    f->forwards++;
}

/* A cast kernel of kernel_ops: fp8_cast, or fp8_gelu_cast. */
typedef void (*cast_fn)(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats, const void *in,
                        int rows, int cols, const float *scale, fp8_format format);

/* Tensor t's first scale, from the amax that a pass over it (its output
 * thrown away into amax_scratch) has just left in its stats; that pass's
 * counts, at the scale of 1 it ran with, are dropped. */
static void take_first_scale(fp8_layers *f, const kernel_ops *ops, int t) {
    const size_t at = (size_t)t * STRIDE;
    fp8_scaling one = f->s;
    one.n = 1;
    one.scale += at;
    one.dequant += at;
    one.stats += t;
    one.history += (size_t)t * f->s.len;
    one.format += t;
    one.clipped = NULL; /* the pass's output is not used */
    one.underflow = NULL;
    ops->fp8_scaling_update(&one, f->forwards > 0 ? f->forwards - 1 : 0);
    f->bootstrapped[t] = true;
}

/* Casts tensor t (rows x cols bf16, through `kernel`) into out (and out_t)
 * with its scale. A tensor cast for the first time gets its scale from its
 * own amax first. */
static void cast_with(fp8_layers *f, const kernel_ops *ops, cast_fn kernel, int t, uint8_t *out,
                      uint8_t *out_t, const void *in, int rows, int cols) {
    const fp8_format format = t % T_PER_LINEAR == T_DOUT ? FP8_E5M2 : FP8_E4M3;
    if (!f->bootstrapped[t]) {
        const size_t at = (size_t)t * STRIDE;
        kernel(f->amax_scratch, NULL, f->s.stats + t, in, rows, cols, f->s.scale + at, format);
        take_first_scale(f, ops, t);
    }
    kernel(out, out_t, f->s.stats + t, in, rows, cols, f->s.scale + (size_t)t * STRIDE, format);
}

static void cast(fp8_layers *f, const kernel_ops *ops, int t, uint8_t *out, uint8_t *out_t,
                 const void *in, int rows, int cols) {
    cast_with(f, ops, ops->fp8_cast, t, out, out_t, in, rows, cols);
}

static const float *dequant(const fp8_layers *f, int t) {
    return f->s.dequant + (size_t)t * STRIDE;
}

/* The factor of linear i's weight copies: the one they were cast at. */
static const float *weight_dequant(const fp8_layers *f, int i) {
    return f->w_dequant + (size_t)i * STRIDE;
}

/* The batched cast's job for linear i's weight (OC x C), with the amax
 * pass first where its scale is not known yet. */
static fp8_cast_job weight_job(fp8_layers *f, const kernel_ops *ops, int i, const void *weight,
                               int OC, int C) {
    const int t = tensor_of(i, T_WEIGHT);
    const size_t at = (size_t)t * STRIDE;
    if (!f->bootstrapped[t]) {
        ops->fp8_cast(f->amax_scratch, NULL, f->s.stats + t, weight, OC, C, f->s.scale + at,
                      FP8_E4M3);
        take_first_scale(f, ops, t);
    }
    f->w_fresh[i] = true;
    return (fp8_cast_job){f->w8[i], f->w8_t[i], f->s.stats + t,  weight,
                          OC,       C,          f->s.scale + at, f->w_dequant + (size_t)i * STRIDE};
}

static int linear_index(const fp8_layers *f, int l, fp8_linear id) {
    if (l < 0 || l >= f->n_layer || id < 0 || id >= FP8_LINEARS)
        FAIL("fp8: linear %d of block %d does not exist", (int)id, l);
    if (id == FP8_ATTPROJ && f->attn_proj_bf16)
        FAIL("fp8: block %d's attn.c_proj is bf16 (created with attn_proj_bf16)", l);
    return l * FP8_LINEARS + id;
}

void fp8_linear_forward(fp8_layers *f, const kernel_ops *ops, int l, fp8_linear id, void *out,
                        const void *residual, void *pre, const void *inp, const void *weight,
                        const void *bias, int N, int C, int OC, bool for_backward) {
    const int i = linear_index(f, l, id);
    if (N > f->N) FAIL("fp8: a forward of %d tokens exceeds the capacity of %d", N, f->N);
    if (for_backward && N % 16 != 0)
        FAIL("fp8: a training forward of %d tokens (a multiple of 16 is needed)", N);
    uint8_t *x_t = for_backward ? f->x8_t[i] : NULL;
    if (f->inp_ready == i)
        f->inp_ready = -1; /* x8 (x_t) hold it: the LayerNorm or GELU before cast it */
    else if (inp)
        cast(f, ops, tensor_of(i, T_INP), f->x8, x_t, inp, N, C);
    else
        FAIL("fp8: linear %d of block %d has neither a bf16 input nor its FP8 copy", (int)id, l);
    if (!f->w_fresh[i]) {
        const fp8_cast_job job = weight_job(f, ops, i, weight, OC, C);
        ops->fp8_cast_batch(&job, 1, FP8_E4M3);
    }
    const fp8_linear_operands q = {f->x8,
                                   x_t,
                                   f->w8[i],
                                   f->w8_t[i],
                                   NULL,
                                   NULL,
                                   dequant(f, tensor_of(i, T_INP)),
                                   weight_dequant(f, i),
                                   dequant(f, tensor_of(i, T_DOUT)),
                                   f->fast_accum};
    if (!pre) {
        if (residual)
            ops->matmul_residual_forward_fp8(out, residual, bias, N, C, OC, &q);
        else
            ops->matmul_forward_fp8(out, bias, N, C, OC, &q);
        return;
    }
    /* mlp.c_fc: the product writes the GELU's input alone, and one pass
     * casts the GELU of it as mlp.c_proj's input (out is not written) */
    if (id != FP8_FC) FAIL("fp8: a GELU after linear %d; only mlp.c_fc has one", (int)id);
    ops->matmul_forward_fp8(pre, bias, N, C, OC, &q);
    const int next = linear_index(f, l, FP8_FCPROJ);
    /* with recompute_gelu the backward casts the transpose again */
    cast_with(f, ops, ops->fp8_gelu_cast, tensor_of(next, T_INP), f->x8,
              for_backward && !f->gelu_t_shared ? f->x8_t[next] : NULL, pre, N, OC);
    f->inp_ready = next;
}

void fp8_recompute_gelu_input(fp8_layers *f, const kernel_ops *ops, int l, const void *pre, int N) {
    const int i = linear_index(f, l, FP8_FCPROJ), t = tensor_of(i, T_INP);
    if (!f->gelu_t_shared)
        FAIL("fp8: block %d's GELU output recast for its backward, but the layers keep it "
             "(created without recompute_gelu)",
             l);
    if (!f->bootstrapped[t])
        FAIL("fp8: block %d's GELU output recast before any forward cast it", l);
    /* x8 is free in the backward; the stats are the forward's (counting
     * them again would count the values twice) */
    ops->fp8_gelu_cast(f->x8, f->gelu_t_shared, NULL, pre, N, 4 * f->C,
                       f->s.scale + (size_t)t * STRIDE, FP8_E4M3);
}

void fp8_block_weights(fp8_layers *f, const kernel_ops *ops, int l,
                       const void *const weights[FP8_LINEARS]) {
    fp8_cast_job jobs[FP8_LINEARS];
    int n = 0;
    for (int id = 0; id < FP8_LINEARS; id++) {
        if (id == FP8_ATTPROJ && f->attn_proj_bf16) continue;
        const int i = linear_index(f, l, (fp8_linear)id);
        if (f->w_fresh[i]) continue; /* held from an earlier forward, or cast already */
        int in, out;
        widths((fp8_linear)id, f->C, &in, &out);
        jobs[n++] = weight_job(f, ops, i, weights[id], out, in);
    }
    if (n) ops->fp8_cast_batch(jobs, n, FP8_E4M3);
}

void fp8_layernorm_forward(fp8_layers *f, const kernel_ops *ops, int l, fp8_linear id,
                           void *residual, float *mean, float *rstd, const void *a, const void *b,
                           const void *weight, const void *bias, int N, int C, bool for_backward) {
    const int i = linear_index(f, l, id), t = tensor_of(i, T_INP);
    if (N > f->N) FAIL("fp8: a forward of %d tokens exceeds the capacity of %d", N, f->N);
    if (!f->bootstrapped[t]) { /* the same pass twice: residual, mean and rstd come out equal */
        ops->layernorm_forward_fp8(residual, f->amax_scratch, NULL, f->s.stats + t, mean, rstd, a,
                                   b, weight, bias, N, C, f->s.scale + (size_t)t * STRIDE,
                                   FP8_E4M3);
        take_first_scale(f, ops, t);
    }
    ops->layernorm_forward_fp8(residual, f->x8, for_backward ? f->x8_t[i] : NULL, f->s.stats + t,
                               mean, rstd, a, b, weight, bias, N, C,
                               f->s.scale + (size_t)t * STRIDE, FP8_E4M3);
    f->inp_ready = i;
}

void fp8_linear_backward(fp8_layers *f, const kernel_ops *ops, int l, fp8_linear id, void *dinp,
                         void *dweight, void *dbias, const void *dout, const void *pre, int N,
                         int C, int OC, void *dpre_colsum) {
    const int i = linear_index(f, l, id);
    if (f->dout_ready == i)
        f->dout_ready = -1; /* g8, g8_t hold it: the fused GELU backward cast it */
    else
        cast(f, ops, tensor_of(i, T_DOUT), f->g8, f->g8_t, dout, N, OC);
    const fp8_linear_operands q = {NULL,
                                   f->x8_t[i],
                                   NULL,
                                   f->w8_t[i],
                                   f->g8,
                                   f->g8_t,
                                   dequant(f, tensor_of(i, T_INP)),
                                   weight_dequant(f, i),
                                   dequant(f, tensor_of(i, T_DOUT)),
                                   f->fast_accum};
    /* mlp.c_proj through the GELU: with mlp.c_fc's output-gradient scale
     * known (after its first cast), the product without the GELU, then one
     * pass for the GELU backward, c_fc's bias gradient and the cast */
    const int next = id == FP8_FCPROJ ? linear_index(f, l, FP8_FC) : -1;
    const int t_next = next >= 0 ? tensor_of(next, T_DOUT) : 0;
    if (pre && next >= 0 && f->bootstrapped[t_next] && ops->fp8_gelu_backward_cast) {
        ops->matmul_backward_fp8(dinp, dweight, dbias, dout, NULL, N, C, OC, NULL, &q);
        ops->fp8_gelu_backward_cast(f->g8, f->g8_t, f->s.stats + t_next, dpre_colsum, dinp, pre, N,
                                    C, f->s.scale + (size_t)t_next * STRIDE, FP8_E5M2);
        f->dout_ready = next;
        return;
    }
    ops->matmul_backward_fp8(dinp, dweight, dbias, dout, pre, N, C, OC, dpre_colsum, &q);
}

void fp8_layernorm_backward(fp8_layers *f, const kernel_ops *ops, int l, fp8_linear id, void *dinp,
                            void *dweight, void *dbias, const void *dout, const void *inp,
                            const void *weight, const float *mean, const float *rstd, int N, int C,
                            void *dinp_colsum) {
    const int i = linear_index(f, l, id), t = tensor_of(i, T_DOUT);
    if (!ops->layernorm_backward_fp8 || !f->bootstrapped[t]) {
        ops->layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C,
                                dinp_colsum); /* the linear's backward casts (bootstraps) it */
        return;
    }
    ops->layernorm_backward_fp8(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C,
                                dinp_colsum, f->g8, f->g8_t, f->s.stats + t,
                                f->s.scale + (size_t)t * STRIDE, FP8_E5M2);
    f->dout_ready = i;
}

void fp8_attention_forward(fp8_layers *f, const kernel_ops *ops, int l, void *out, float *lse,
                           const void *qkv, int B, int T, int C, int NH, bool for_backward) {
    const int i = linear_index(f, l, FP8_ATTPROJ), t = tensor_of(i, T_INP);
    if (B * T > f->N) FAIL("fp8: a forward of %d tokens exceeds the capacity of %d", B * T, f->N);
    if (!ops->attention_forward_fp8 || !f->bootstrapped[t]) {
        ops->attention_forward(out, lse, qkv, B, T, C, NH);
        return; /* the linear's forward casts (bootstraps) it */
    }
    ops->attention_forward_fp8(out, lse, qkv, B, T, C, NH, f->x8, for_backward ? f->x8_t[i] : NULL,
                               f->s.stats + t, f->s.scale + (size_t)t * STRIDE, FP8_E4M3);
    f->inp_ready = i;
}

void fp8_attention_backward(fp8_layers *f, const kernel_ops *ops, int l, void *dqkv,
                            const void *dout, const void *qkv, const void *out, const float *lse,
                            int B, int T, int C, int NH, void *dqkv_colsum) {
    const int i = linear_index(f, l, FP8_QKV), t = tensor_of(i, T_DOUT);
    if (!ops->attention_backward_fp8 || !f->bootstrapped[t]) {
        ops->attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH, dqkv_colsum);
        return; /* the linear's backward casts (bootstraps) it */
    }
    ops->attention_backward_fp8(dqkv, dout, qkv, out, lse, B, T, C, NH, dqkv_colsum, f->g8, f->g8_t,
                                f->s.stats + t, f->s.scale + (size_t)t * STRIDE, FP8_E5M2);
    f->dout_ready = i;
}

/* ---------------------------------------------------------------- lm head */

enum { LM_X, LM_W, LM_TENSORS }; /* the lm head's current-scaled tensors */

size_t fp8_lm_head_bytes(const gpt2_layout *lay, int rows) {
    /* (x's amax pass writes into the layers' amax_scratch) */
    const size_t C = (size_t)lay->n_embd, Vp = (size_t)lay->padded_vocab_size, r = (size_t)rows;
    const size_t scaling =
        LM_TENSORS * (2 * STRIDE * sizeof(float) + sizeof(fp8_cast_stats) + sizeof(float) + 1) +
        2 * STRIDE * sizeof(float);
    return 2 * Vp * C + 2 * r * C + 2 * r * Vp + scaling;
}

void fp8_lm_head_create(fp8_layers *f, const kernel_ops *ops, const gpt2_layout *lay, int rows) {
    if (!ops->classifier_forward_backward_fp8 || !ops->fp8_transpose || !ops->matmul_backward_fp8)
        FAIL("fp8_lm_head = true: the %s backend has no FP8 classifier", ops->name);
    if (rows <= 0 || rows % 16 != 0)
        FAIL("fp8_lm_head: chunks of %d rows (a positive multiple of 16 is needed)", rows);
    fp8_lm_head *h = &f->lm;
    memset(h, 0, sizeof *h);
    h->rows = rows;
    h->C = lay->n_embd;
    h->Vp = lay->padded_vocab_size;
    const size_t C = (size_t)h->C, Vp = (size_t)h->Vp, r = (size_t)rows;
    h->s.n = LM_TENSORS;
    h->s.len = 1;
    h->s.margin = f->s.margin;
    h->s.stride = STRIDE;
    const size_t strided = LM_TENSORS * STRIDE * sizeof(float);
    h->s.scale = ops->alloc(strided);
    h->s.dequant = ops->alloc(strided);
    h->s.stats = ops->alloc(LM_TENSORS * sizeof(fp8_cast_stats));
    h->s.history = ops->alloc(LM_TENSORS * sizeof(float));
    float ones[LM_TENSORS * STRIDE];
    for (int i = 0; i < LM_TENSORS * STRIDE; i++) ones[i] = 1.0f;
    ops->upload(h->s.scale, ones, strided); /* the amax passes' scale, before any update */
    ops->upload(h->s.dequant, ones, strided);
    ops->zero(h->s.stats, LM_TENSORS * sizeof(fp8_cast_stats));
    ops->zero(h->s.history, LM_TENSORS * sizeof(float));
    const uint8_t format[LM_TENSORS] = {FP8_E4M3, FP8_E4M3};
    uint8_t *format_dev = ops->alloc(LM_TENSORS);
    ops->upload(format_dev, format, LM_TENSORS);
    h->s.format = format_dev;
    h->g_scale = ops->alloc(2 * STRIDE * sizeof(float));
    h->w8 = ops->alloc(Vp * C);
    h->w8_t = ops->alloc(Vp * C);
    h->x8 = ops->alloc(r * C);
    h->x8_t = ops->alloc(r * C);
    h->g8 = ops->alloc(r * Vp);
    h->g8_t = ops->alloc(r * Vp);
}

void fp8_lm_head_begin(fp8_layers *f, const kernel_ops *ops, const void *wte, const void *x, int N,
                       float dloss) {
    fp8_lm_head *h = &f->lm;
    if (!h->rows) FAIL("fp8: the lm head is bf16 (no fp8_lm_head_create)");
    if (N > f->N || N % 16 != 0)
        FAIL("fp8: an lm head of %d rows (at most %d, a multiple of 16)", N, f->N);
    if (dloss == 0.0f) FAIL("fp8: the FP8 lm head runs in training forwards (dloss != 0)");
    /* the amaxes (the outputs thrown away), then both scales, then the
     * copies at them (no stats: the next forward measures again) */
    float *scale_x = h->s.scale + LM_X * STRIDE, *scale_w = h->s.scale + LM_W * STRIDE;
    ops->fp8_cast(f->amax_scratch, NULL, h->s.stats + LM_X, x, N, h->C, scale_x, FP8_E4M3);
    const bool cast_w = !h->w_fresh; /* held: wte's amax stays 0, so its scale stays too */
    if (cast_w) ops->fp8_cast(h->w8, NULL, h->s.stats + LM_W, wte, h->Vp, h->C, scale_w, FP8_E4M3);
    ops->fp8_scaling_update(&h->s, 0);
    if (cast_w) ops->fp8_cast(h->w8, h->w8_t, NULL, wte, h->Vp, h->C, scale_w, FP8_E4M3);
    h->w_fresh = true;
    if (dloss != h->g_dloss) { /* |dlogits| <= |dloss| -> at most 2^15 */
        int e = 0; /* a NaN dloss (the guard's poison test): any scale, NaN goes through */
        if (isfinite(dloss))
            frexpf(fabsf(dloss), &e); /* |dloss| = m 2^e, 0.5 <= m < 1: |dloss| <= 2^e */
        const float scale = ldexpf(1.0f, 15 - e);
        float both[2 * STRIDE] = {0};
        both[0] = scale;
        both[STRIDE] = 1.0f / scale;
        ops->upload(h->g_scale, both, sizeof both);
        h->g_dloss = dloss;
    }
}

void fp8_lm_head_chunk(fp8_layers *f, const kernel_ops *ops, void *logits, float *losses,
                       const int32_t *targets, void *dx, void *dwte, const void *x, int n, int V,
                       float dloss) {
    fp8_lm_head *h = &f->lm;
    if (n > h->rows || n % 16 != 0)
        FAIL("fp8: an lm head chunk of %d rows (at most %d, a multiple of 16)", n, h->rows);
    const int C = h->C, Vp = h->Vp;
    ops->fp8_cast(h->x8, h->x8_t, NULL, x, n, C, h->s.scale + LM_X * STRIDE, FP8_E4M3);
    const fp8_linear_operands q = {h->x8,
                                   h->x8_t,
                                   h->w8,
                                   h->w8_t,
                                   h->g8,
                                   h->g8_t,
                                   h->s.dequant + LM_X * STRIDE,
                                   h->s.dequant + LM_W * STRIDE,
                                   h->g_scale + STRIDE,
                                   f->fast_accum};
    ops->matmul_forward_fp8(logits, NULL, n, C, Vp, &q);
    ops->classifier_forward_backward_fp8(logits, losses, targets, n, V, Vp, dloss, h->g8,
                                         h->g_scale);
    ops->fp8_transpose(h->g8_t, h->g8, n, Vp);
    ops->matmul_backward_fp8(dx, dwte, NULL, NULL, NULL, n, C, Vp, NULL, &q);
}

/* The strided device array's n values into dense (host). */
static void download_strided(const kernel_ops *ops, float *dense, const float *dev, int n) {
    float *all = xmalloc((size_t)n * STRIDE * sizeof(float));
    ops->download(all, dev, (size_t)n * STRIDE * sizeof(float));
    for (int i = 0; i < n; i++) dense[i] = all[(size_t)i * STRIDE];
    free(all);
}

static void upload_strided(const kernel_ops *ops, float *dev, const float *dense, int n) {
    float *all = xcalloc((size_t)n * STRIDE, sizeof(float));
    for (int i = 0; i < n; i++) all[(size_t)i * STRIDE] = dense[i];
    ops->upload(dev, all, (size_t)n * STRIDE * sizeof(float));
    free(all);
}

void fp8_layers_state_get(const fp8_layers *f, const kernel_ops *ops, fp8_layers_state *out) {
    const int n = f->s.n, len = f->s.len;
    out->n = n;
    out->len = len;
    out->forwards = f->forwards;
    out->scale = xmalloc((size_t)n * sizeof(float));
    out->amax = xmalloc((size_t)n * sizeof(float));
    out->history = xmalloc((size_t)n * len * sizeof(float));
    out->bootstrapped = xmalloc((size_t)n * sizeof(float));
    download_strided(ops, out->scale, f->s.scale, n);
    fp8_cast_stats *stats = xmalloc((size_t)n * sizeof *stats);
    ops->download(stats, f->s.stats, (size_t)n * sizeof *stats);
    for (int i = 0; i < n; i++) out->amax[i] = stats[i].amax;
    free(stats);
    ops->download(out->history, f->s.history, (size_t)n * len * sizeof(float));
    for (int i = 0; i < n; i++) out->bootstrapped[i] = f->bootstrapped[i] ? 1.0f : 0.0f;
}

void fp8_layers_state_set(fp8_layers *f, const kernel_ops *ops, const fp8_layers_state *in) {
    if (in->n != f->s.n || in->len != f->s.len)
        FAIL("fp8: a scaling state of %d tensors x %d steps of history for a model with %d x %d",
             in->n, in->len, f->s.n, f->s.len);
    const int n = in->n;
    float *dequant = xmalloc((size_t)n * sizeof(float));
    for (int i = 0; i < n; i++) dequant[i] = 1.0f / in->scale[i];
    upload_strided(ops, f->s.scale, in->scale, n);
    upload_strided(ops, f->s.dequant, dequant, n);
    fp8_cast_stats *stats = xcalloc((size_t)n, sizeof *stats); /* the counts start again */
    for (int i = 0; i < n; i++) stats[i].amax = in->amax[i];
    ops->upload(f->s.stats, stats, (size_t)n * sizeof *stats);
    free(stats);
    ops->upload(f->s.history, in->history, (size_t)n * in->len * sizeof(float));
    for (int i = 0; i < n; i++) f->bootstrapped[i] = in->bootstrapped[i] != 0.0f;
    f->forwards = in->forwards;
    f->hold_next = false; /* a restored run's first forward casts every weight, as a new one */
    free(dequant);
}

void fp8_layers_state_free(fp8_layers_state *s) {
    free(s->scale);
    free(s->amax);
    free(s->history);
    free(s->bootstrapped);
    memset(s, 0, sizeof *s);
}

/* Tensor t's name in the reports: block, layer and operand. */
static void tensor_name(int t, char *name, size_t size) {
    static const char *const linear[FP8_LINEARS] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc",
                                                    "mlp.c_proj"};
    static const char *const operand[T_PER_LINEAR] = {"input (E4M3)", "weight (E4M3)",
                                                      "output gradient (E5M2)"};
    const int i = t / T_PER_LINEAR;
    snprintf(name, size, "h.%d.%s %s", i / FP8_LINEARS, linear[i % FP8_LINEARS],
             operand[t % T_PER_LINEAR]);
}

enum { REPORT_ROWS = 20 };

/* A tensor's row in a report, ordered by key (largest first). */
typedef struct {
    int tensor;
    double key, a, b;
} report_row;

static int by_key_desc(const void *a, const void *b) {
    const double x = ((const report_row *)a)->key, y = ((const report_row *)b)->key;
    return (x < y) - (x > y);
}

/* The scaled tensors of the FP8 linears (a bf16 attn.c_proj has none). */
static int tensors_in_use(const fp8_layers *f) {
    return f->s.n - (f->attn_proj_bf16 ? f->n_layer * T_PER_LINEAR : 0);
}

static void print_clipping(const fp8_layers *f, const kernel_ops *ops, report_row *rows,
                           FILE *out) {
    const int n = f->s.n;
    float *clipped = xmalloc((size_t)n * STRIDE * sizeof(float));
    ops->download(clipped, f->s.clipped, (size_t)n * STRIDE * sizeof(float));
    int hit = 0;
    for (int t = 0; t < n; t++)
        if (clipped[(size_t)t * STRIDE] > 0.0f)
            rows[hit++] =
                (report_row){t, clipped[(size_t)t * STRIDE], 0.0, clipped[(size_t)t * STRIDE + 1]};
    qsort(rows, (size_t)hit, sizeof *rows, by_key_desc);
    fprintf(out,
            "fp8 clipping: %d of %d tensors had values beyond their format's range at their "
            "scale (saturated) in some of the %lld scale updates\n",
            hit, tensors_in_use(f), (long long)(f->forwards > 0 ? f->forwards - 1 : 0));
    if (hit > 0) fprintf(out, "%-44s %8s %18s\n", "tensor", "updates", "max amax*scale/max");
    for (int k = 0; k < hit && k < REPORT_ROWS; k++) {
        char name[64];
        tensor_name(rows[k].tensor, name, sizeof name);
        fprintf(out, "%-44s %8.0f %18.3f\n", name, rows[k].key, rows[k].b);
    }
    if (hit > REPORT_ROWS) fprintf(out, "(%d more)\n", hit - REPORT_ROWS);
    free(clipped);
}

/* The run's underflow totals plus the counts of the casts since the last
 * update, which no update has taken in yet. */
static void print_underflow(const fp8_layers *f, const kernel_ops *ops, report_row *rows,
                            FILE *out) {
    const int n = f->s.n;
    unsigned long long *totals = xmalloc((size_t)n * 2 * sizeof *totals);
    fp8_cast_stats *stats = xmalloc((size_t)n * sizeof *stats);
    ops->download(totals, f->s.underflow, (size_t)n * 2 * sizeof *totals);
    ops->download(stats, f->s.stats, (size_t)n * sizeof *stats);
    unsigned long long all_nonzero = 0, all_flushed = 0;
    int hit = 0;
    for (int t = 0; t < n; t++) {
        const unsigned long long nonzero = totals[2 * t] + stats[t].nonzero,
                                 flushed = totals[2 * t + 1] + stats[t].flushed;
        all_nonzero += nonzero;
        all_flushed += flushed;
        if (flushed > 0)
            rows[hit++] = (report_row){t, (double)flushed / (double)nonzero, (double)nonzero,
                                       (double)flushed};
    }
    qsort(rows, (size_t)hit, sizeof *rows, by_key_desc);
    fprintf(out,
            "fp8 underflow: %d of %d tensors had nonzero values flushed to zero at their scale; "
            "%llu of %llu nonzero values cast (%.4g%%) in all\n",
            hit, tensors_in_use(f), all_flushed, all_nonzero,
            all_nonzero ? 100.0 * (double)all_flushed / (double)all_nonzero : 0.0);
    if (hit > 0)
        fprintf(out, "%-44s %16s %14s %10s\n", "tensor", "nonzero values", "flushed", "share");
    for (int k = 0; k < hit && k < REPORT_ROWS; k++) {
        char name[64];
        tensor_name(rows[k].tensor, name, sizeof name);
        fprintf(out, "%-44s %16.0f %14.0f %9.4g%%\n", name, rows[k].a, rows[k].b,
                100.0 * rows[k].key);
    }
    if (hit > REPORT_ROWS) fprintf(out, "(%d more)\n", hit - REPORT_ROWS);
    free(totals);
    free(stats);
}

void fp8_layers_print_ranges(const fp8_layers *f, const kernel_ops *ops, FILE *out) {
    report_row *rows = xmalloc((size_t)f->s.n * sizeof *rows);
    print_clipping(f, ops, rows, out);
    print_underflow(f, ops, rows, out);
    free(rows);
}

const char *const fp8_fast_accum_names[] = {"none", "forward", "all", NULL};

bool fp8_fast_accum_named(const char *name, fp8_fast_accum *out) {
    for (int i = 0; fp8_fast_accum_names[i]; i++)
        if (strcmp(name, fp8_fast_accum_names[i]) == 0) {
            *out = (fp8_fast_accum)i;
            return true;
        }
    return false;
}
