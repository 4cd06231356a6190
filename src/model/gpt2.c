/* GPT-2 forward/backward orchestration over the kernel table (see gpt2.h).
 * Per block: ln1 -> qkv -> attention -> proj (+res, ln2 fused) -> fc+gelu ->
 * proj (+res, next ln fused). Backward runs the blocks in reverse, keeping the
 * residual-stream gradient in dres, and reports finished gradient ranges. */
#include "model/gpt2.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "model/fp8_layers.h"
#include "model/rng.h"

static void *alloc_acts(const kernel_ops *ops, size_t n) { return ops->alloc(n * ops->elem_bytes); }
static float *alloc_f32(const kernel_ops *ops, size_t n) { return ops->alloc(n * sizeof(float)); }

void gpt2_create(gpt2_model *m, const gpt2_layout *lay, const kernel_ops *ops, int B, int T) {
    gpt2_create_with(m, lay, ops, B, T, NULL);
}

void gpt2_create_with(gpt2_model *m, const gpt2_layout *lay, const kernel_ops *ops, int B, int T,
                      const gpt2_options *opt) {
    memset(m, 0, sizeof *m);
    m->lay = *lay;
    m->ops = ops;
    if (opt) m->opt = *opt;
    m->B = B;
    m->T = T;
    const size_t C = (size_t)lay->n_embd, N = (size_t)B * T, NH = (size_t)lay->n_head;
    const size_t Vp = (size_t)lay->padded_vocab_size;
    m->params = ops->alloc(lay->n_elements * ops->elem_bytes);
    m->grads = ops->alloc(lay->n_elements * ops->elem_bytes);
    ops->zero(m->grads, lay->n_elements * ops->elem_bytes);
    m->acts = xcalloc((size_t)lay->n_layer, sizeof(block_acts));
    /* With FP8 the LayerNorms and the GELU write their outputs as the next
     * linear layer's FP8 input: ln1, ln2 and fch_gelu stay NULL. */
    const bool bf16_linear_inputs = !m->opt.fp8;
    /* Recomputed per block in backward, so one buffer serves every block. */
    if (m->opt.recompute_gelu && bf16_linear_inputs) m->gelu_shared = alloc_acts(ops, N * 4 * C);
    for (int l = 0; l < lay->n_layer; l++) {
        block_acts *a = &m->acts[l];
        a->res1 = alloc_acts(ops, N * C);
        a->qkv = alloc_acts(ops, N * 3 * C);
        a->atty = alloc_acts(ops, N * C);
        a->res2 = alloc_acts(ops, N * C);
        a->fch = alloc_acts(ops, N * 4 * C);
        if (bf16_linear_inputs) {
            a->ln1 = alloc_acts(ops, N * C);
            a->ln2 = alloc_acts(ops, N * C);
            a->fch_gelu = m->gelu_shared ? m->gelu_shared : alloc_acts(ops, N * 4 * C);
        }
        a->ln1_mean = alloc_f32(ops, N);
        a->ln1_rstd = alloc_f32(ops, N);
        a->ln2_mean = alloc_f32(ops, N);
        a->ln2_rstd = alloc_f32(ops, N);
        a->lse = alloc_f32(ops, (size_t)B * NH * T);
    }
    m->res_final = alloc_acts(ops, N * C);
    m->lnf = alloc_acts(ops, N * C);
    m->lnf_mean = alloc_f32(ops, N);
    m->lnf_rstd = alloc_f32(ops, N);
    /* Equal chunks under the bound: a short last chunk (752 of 32768 rows
     * for 124M at B = 32) would run its GEMMs well below full speed. */
    size_t max_rows = ops->logits_chunk_bytes / (Vp * ops->elem_bytes);
    if (max_rows < 1) max_rows = 1;
    const size_t n_chunks = (N + max_rows - 1) / max_rows;
    size_t chunk = (N + n_chunks - 1) / n_chunks;
    if (m->opt.fp8_lm_head) chunk = (chunk + 15) / 16 * 16; /* the FP8 copies' transposes */
    m->classifier_chunk = (int)chunk;
    m->logits = alloc_acts(ops, chunk * Vp);
    m->losses = alloc_f32(ops, N);
    m->loss_acc = alloc_f32(ops, N);
    m->loss_sum = ops->alloc(sizeof(double));
    gpt2_loss_reset(m);
    m->inputs = ops->alloc(N * sizeof(int32_t));
    m->targets = ops->alloc(N * sizeof(int32_t));
    m->dres = alloc_acts(ops, N * C);
    m->dln = alloc_acts(ops, N * C);
    m->dfch = alloc_acts(ops, N * 4 * C);
    m->dqkv = alloc_acts(ops, N * 3 * C);
    if (m->opt.fp8) {
        if (!m->opt.fp8_attn_proj_bf16) m->attproj_out = alloc_acts(ops, N * C);
        m->fp8 = xmalloc(sizeof *m->fp8);
        fp8_layers_create(m->fp8, ops, lay, (int)N, m->opt.fp8_history, m->opt.fp8_margin,
                          m->opt.fp8_fast_accum, m->opt.recompute_gelu, m->opt.fp8_attn_proj_bf16);
        if (m->opt.fp8_lm_head) fp8_lm_head_create(m->fp8, ops, lay, m->classifier_chunk);
    }
}

size_t gpt2_fp8_saved_bytes(const gpt2_layout *lay, size_t elem_bytes, int B, int T,
                            bool recompute_gelu, bool attn_proj_bf16) {
    const size_t C = (size_t)lay->n_embd, N = (size_t)B * T, L = (size_t)lay->n_layer;
    /* ln1, ln2 and gelu(fch) of every block, less attproj_out */
    return (L * 2 * N * C + (recompute_gelu ? 1 : L) * N * 4 * C - (attn_proj_bf16 ? 0 : N * C)) *
           elem_bytes;
}

void gpt2_free(gpt2_model *m) {
    const kernel_ops *ops = m->ops;
    for (int l = 0; l < m->lay.n_layer; l++) {
        block_acts *a = &m->acts[l];
        void *own_gelu = m->gelu_shared ? NULL : a->fch_gelu;
        void *bufs[] = {a->res1,     a->ln1,      a->qkv,   a->atty,     a->res2,
                        a->ln2,      a->fch,      own_gelu, a->ln1_mean, a->ln1_rstd,
                        a->ln2_mean, a->ln2_rstd, a->lse};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) ops->release(bufs[i]);
    }
    free(m->acts);
    if (m->fp8) {
        fp8_layers_free(m->fp8, ops);
        free(m->fp8);
    }
    void *bufs[] = {m->params,      m->grads,  m->res_final,  m->lnf,      m->lnf_mean,
                    m->lnf_rstd,    m->logits, m->losses,     m->loss_acc, m->loss_sum,
                    m->gelu_shared, m->inputs, m->targets,    m->dres,     m->dln,
                    m->dfch,        m->dqkv,   m->attproj_out};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) ops->release(bufs[i]);
    memset(m, 0, sizeof *m);
}

void gpt2_set_params_needed(gpt2_model *m, params_needed_fn fn, void *ctx) {
    m->params_needed = fn;
    m->params_needed_ctx = ctx;
}

void gpt2_params_unchanged(gpt2_model *m) {
    if (m->fp8) fp8_layers_hold_weights(m->fp8);
}

static void need_params(gpt2_model *m, size_t begin, size_t end) {
    if (m->params_needed) m->params_needed(m->params_needed_ctx, begin, end);
}

/* p[k] = s times normal number first + k of seed's stream (two draws each),
 * for k < n: chunks drawn in parallel, each from its place in the stream
 * (rng_skip), give the values one pass over the stream would. */
static void fill_normal(float *p, size_t n, double s, uint64_t seed, uint64_t first) {
    enum { CHUNK = 1 << 16 };
    const long chunks = (long)((n + CHUNK - 1) / CHUNK);
#pragma omp parallel for schedule(static)
    for (long c = 0; c < chunks; c++) {
        const size_t begin = (size_t)c * CHUNK, end = n - begin < CHUNK ? n : begin + CHUNK;
        rng_state rng;
        rng_seed(&rng, seed);
        rng_skip(&rng, 2 * (first + begin));
        for (size_t k = begin; k < end; k++) p[k] = (float)(s * rng_normal(&rng));
    }
}

void gpt2_init_params(const gpt2_layout *lay, uint64_t seed, float *host_params) {
    memset(host_params, 0, lay->n_elements * sizeof(float));
    uint64_t drawn = 0; /* normal numbers of the stream used by the tensors before */
    const double std = 0.02;
    /* GPT-2 scales the projections that write into the residual stream by
     * 1/sqrt(2 L): two per block, so the stream's variance stays bounded. */
    const double residual_std = std / sqrt(2.0 * lay->n_layer);
    for (int i = 0; i < lay->n_tensors; i++) {
        const param_tensor *t = &lay->tensors[i];
        float *p = host_params + t->offset;
        const char *name = t->name;
        size_t len = strlen(name);
        int is_bias = len > 5 && strcmp(name + len - 5, ".bias") == 0;
        int is_ln = strstr(name, "ln_") != NULL;
        if (is_bias) continue; /* zero */
        if (is_ln) {
            for (size_t k = 0; k < t->numel; k++) p[k] = 1.0f;
            continue;
        }
        int is_residual_proj = strstr(name, ".c_proj.weight") != NULL;
        double s = is_residual_proj ? residual_std : std;
        size_t n = t->numel;
        if (t->offset == lay->wte)
            n = (size_t)lay->vocab_size * lay->n_embd; /* padding rows stay 0 */
        fill_normal(p, n, s, seed, drawn);
        drawn += n;
    }
}

#define P(off) ops_at(ops, m->params, (off))
#define G(off) ops_at(ops, m->grads, (off))

/* The classifier over every row of ln_f's output, one chunk of rows at a
 * time: logits, loss and (with dloss) dlogits in place, then d(ln_f) and the
 * wte gradient from that chunk before the next overwrites it. */
static void classifier_chunks(gpt2_model *m, int N, float dloss) {
    const kernel_ops *ops = m->ops;
    const gpt2_layout *lay = &m->lay;
    const int C = lay->n_embd, V = lay->vocab_size, Vp = lay->padded_vocab_size;
    const bool fp8_head = m->opt.fp8_lm_head && m->fp8 && dloss != 0.0f; /* training only */
    if (fp8_head) fp8_lm_head_begin(m->fp8, ops, P(lay->wte), m->lnf, N, dloss);
    for (int r0 = 0; r0 < N; r0 += m->classifier_chunk) {
        int n = N - r0 < m->classifier_chunk ? N - r0 : m->classifier_chunk;
        const void *x = ops_at(ops, m->lnf, (size_t)r0 * C);
        if (fp8_head) { /* the three products in FP8 */
            fp8_lm_head_chunk(m->fp8, ops, m->logits, m->losses + r0, m->targets + r0,
                              ops_at(ops, m->dln, (size_t)r0 * C), G(lay->wte), x, n, V, dloss);
            continue;
        }
        ops->matmul_forward(m->logits, x, P(lay->wte), NULL, n, C, Vp);
        ops->classifier_forward_backward(m->logits, m->losses + r0, m->targets + r0, n, V, Vp,
                                         dloss);
        if (dloss != 0.0f)
            ops->matmul_backward(ops_at(ops, m->dln, (size_t)r0 * C), G(lay->wte), NULL, m->logits,
                                 x, P(lay->wte), n, C, Vp);
    }
}

void gpt2_loss_reset(gpt2_model *m) {
    m->ops->zero(m->loss_acc, (size_t)m->B * m->T * sizeof(float));
    m->loss_tokens = 0;
}

double *gpt2_loss_sum_async(gpt2_model *m) {
    m->ops->sum_f32(m->loss_sum, m->loss_acc, (size_t)m->B * m->T);
    return m->loss_sum;
}

double gpt2_loss_sum_read(gpt2_model *m) {
    double sum = 0.0;
    m->ops->download(&sum, m->loss_sum, sizeof sum);
    return sum;
}

double gpt2_loss_take(gpt2_model *m) {
    gpt2_loss_sum_async(m);
    const double sum = gpt2_loss_sum_read(m);
    const double mean = m->loss_tokens > 0 ? sum / (double)m->loss_tokens : 0.0;
    gpt2_loss_reset(m);
    return mean;
}

/* Whether linear `id` runs in FP8: all four with opt.fp8, less attn.c_proj
 * with opt.fp8_attn_proj_bf16. */
static bool in_fp8(const gpt2_model *m, fp8_linear id) {
    return m->fp8 && !(id == FP8_ATTPROJ && m->opt.fp8_attn_proj_bf16);
}

/* A block's linear layer forward (pre: with the GELU, its input is kept
 * there; residual: added to the output, the layers whose output joins the
 * residual stream): bf16, or FP8 operands (in_fp8). */
static void linear_forward(gpt2_model *m, int l, fp8_linear id, void *out, const void *residual,
                           void *pre, const void *inp, const void *weight, const void *bias, int N,
                           int C, int OC, bool for_backward) {
    const kernel_ops *ops = m->ops;
    if (in_fp8(m, id))
        fp8_linear_forward(m->fp8, ops, l, id, out, residual, pre, inp, weight, bias, N, C, OC,
                           for_backward);
    else if (pre)
        ops->matmul_gelu_forward(out, pre, inp, weight, bias, N, C, OC);
    else if (residual)
        ops->matmul_residual_forward(out, residual, inp, weight, bias, N, C, OC);
    else
        ops->matmul_forward(out, inp, weight, bias, N, C, OC);
}

/* The LayerNorm before linear `id` of block l (residual NULL: of a alone,
 * no residual add): bf16, or with opt.fp8 straight into that linear's FP8
 * input. */
static void block_layernorm(gpt2_model *m, int l, fp8_linear id, void *residual, void *out,
                            float *mean, float *rstd, const void *a, const void *b,
                            const void *weight, const void *bias, int N, int C, bool for_backward) {
    const kernel_ops *ops = m->ops;
    if (m->fp8)
        fp8_layernorm_forward(m->fp8, ops, l, id, residual, mean, rstd, a, b, weight, bias, N, C,
                              for_backward);
    else if (residual)
        ops->residual_layernorm_forward(residual, out, mean, rstd, a, b, weight, bias, N, C);
    else
        ops->layernorm_forward(out, mean, rstd, a, weight, bias, N, C);
}

/* Its backward (pre: through the GELU whose input it is, dpre_colsum that
 * input's bias gradient). */
static void linear_backward(gpt2_model *m, int l, fp8_linear id, void *dinp, void *dweight,
                            void *dbias, const void *dout, const void *inp, const void *weight,
                            const void *pre, int N, int C, int OC, void *dpre_colsum) {
    const kernel_ops *ops = m->ops;
    if (in_fp8(m, id))
        fp8_linear_backward(m->fp8, ops, l, id, dinp, dweight, dbias, dout, pre, N, C, OC,
                            dpre_colsum);
    else if (pre)
        ops->matmul_backward_gelu(dinp, dweight, dbias, dout, inp, weight, pre, N, C, OC,
                                  dpre_colsum);
    else
        ops->matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}

/* A LayerNorm's backward into dres, which is then the output gradient of
 * linear `id` of block l, the projection that wrote the stream before it
 * (l < 0: none, ln_1 of the first block): where that linear is in FP8
 * (in_fp8) its FP8 copy for the linear's backward is cast on the way. */
static void layernorm_backward_into(gpt2_model *m, int l, fp8_linear id, void *dweight, void *dbias,
                                    const void *dout, const void *inp, const void *weight,
                                    const float *mean, const float *rstd, int N, int C,
                                    void *dinp_colsum) {
    if (l >= 0 && in_fp8(m, id))
        fp8_layernorm_backward(m->fp8, m->ops, l, id, m->dres, dweight, dbias, dout, inp, weight,
                               mean, rstd, N, C, dinp_colsum);
    else
        m->ops->layernorm_backward(m->dres, dweight, dbias, dout, inp, weight, mean, rstd, N, C,
                                   dinp_colsum);
}

float gpt2_forward(gpt2_model *m, const int32_t *inputs, const int32_t *targets, int B, int T,
                   float dloss) {
    gpt2_loss_reset(m);
    gpt2_forward_async(m, inputs, targets, B, T, dloss);
    return targets ? (float)gpt2_loss_take(m) : 0.0f;
}

void gpt2_forward_async(gpt2_model *m, const int32_t *inputs, const int32_t *targets, int B, int T,
                        float dloss) {
    const kernel_ops *ops = m->ops;
    const gpt2_layout *lay = &m->lay;
    CHECK(B <= m->B && T <= m->T && B * T <= m->B * m->T,
          "batch %dx%d exceeds the model's activation capacity %dx%d", B, T, m->B, m->T);
    const int L = lay->n_layer, C = lay->n_embd, NH = lay->n_head, N = B * T;
    m->fwd_B = B;
    m->fwd_T = T;
    ops->upload(m->inputs, inputs, (size_t)N * sizeof(int32_t));
    if (targets) ops->upload(m->targets, targets, (size_t)N * sizeof(int32_t));

    const bool for_backward = targets && dloss != 0.0f;
    if (m->fp8) fp8_layers_begin_forward(m->fp8, ops);
    need_params(m, lay->wpe, lay->n_elements); /* wpe, then wte up to the end */
    ops->encoder_forward(m->acts[0].res1, m->inputs, P(lay->wte), P(lay->wpe), B, T, C);
    need_params(m, lay->blocks[0].begin, lay->blocks[0].end);
    block_layernorm(m, 0, FP8_QKV, NULL, m->acts[0].ln1, m->acts[0].ln1_mean, m->acts[0].ln1_rstd,
                    m->acts[0].res1, NULL, P(lay->blocks[0].ln1_w), P(lay->blocks[0].ln1_b), N, C,
                    for_backward);
    for (int l = 0; l < L; l++) {
        const block_offsets *o = &lay->blocks[l];
        block_acts *a = &m->acts[l];
        if (m->fp8) {
            const void *weights[FP8_LINEARS] = {P(o->qkv_w), P(o->attproj_w), P(o->fc_w),
                                                P(o->fcproj_w)};
            fp8_block_weights(m->fp8, ops, l, weights);
        }
        linear_forward(m, l, FP8_QKV, a->qkv, NULL, NULL, a->ln1, P(o->qkv_w), P(o->qkv_b), N, C,
                       3 * C, for_backward);
        if (in_fp8(m, FP8_ATTPROJ)) /* with attn.c_proj's FP8 input cast on the way */
            fp8_attention_forward(m->fp8, ops, l, a->atty, a->lse, a->qkv, B, T, C, NH,
                                  for_backward);
        else
            ops->attention_forward(a->atty, a->lse, a->qkv, B, T, C, NH);
        /* The residual adds are the projections' epilogues, so that the
         * LayerNorm after each reads the stream alone; but in FP8 cuBLASLt's
         * 768-wide product with an added C took twice its time
         * (docs/gpu-training.md), so there attn.c_proj's add stays the
         * LayerNorm's (attproj_out; none with attn.c_proj in bf16). */
        if (m->attproj_out) {
            linear_forward(m, l, FP8_ATTPROJ, m->attproj_out, NULL, NULL, a->atty, P(o->attproj_w),
                           P(o->attproj_b), N, C, C, for_backward);
            block_layernorm(m, l, FP8_FC, a->res2, a->ln2, a->ln2_mean, a->ln2_rstd, a->res1,
                            m->attproj_out, P(o->ln2_w), P(o->ln2_b), N, C, for_backward);
        } else {
            linear_forward(m, l, FP8_ATTPROJ, a->res2, a->res1, NULL, a->atty, P(o->attproj_w),
                           P(o->attproj_b), N, C, C, for_backward);
            block_layernorm(m, l, FP8_FC, NULL, a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, NULL,
                            P(o->ln2_w), P(o->ln2_b), N, C, for_backward);
        }
        linear_forward(m, l, FP8_FC, a->fch_gelu, NULL, a->fch, a->ln2, P(o->fc_w), P(o->fc_b), N,
                       C, 4 * C, for_backward);
        /* The block's output: the next block's residual (or ln_f's input
         * after the last block), then that LayerNorm. */
        void *block_out = l + 1 < L ? m->acts[l + 1].res1 : m->res_final;
        linear_forward(m, l, FP8_FCPROJ, block_out, a->res2, NULL, a->fch_gelu, P(o->fcproj_w),
                       P(o->fcproj_b), N, 4 * C, C, for_backward);
        if (l + 1 < L) {
            block_acts *next = &m->acts[l + 1];
            const block_offsets *no = &lay->blocks[l + 1];
            need_params(m, no->begin, no->end);
            block_layernorm(m, l + 1, FP8_QKV, NULL, next->ln1, next->ln1_mean, next->ln1_rstd,
                            next->res1, NULL, P(no->ln1_w), P(no->ln1_b), N, C, for_backward);
        } else {
            need_params(m, lay->lnf_w, lay->lnf_b + (size_t)C);
            ops->layernorm_forward(m->lnf, m->lnf_mean, m->lnf_rstd, m->res_final, P(lay->lnf_w),
                                   P(lay->lnf_b), N, C);
        }
    }
    if (!targets) return;
    classifier_chunks(m, N, dloss);
    ops->loss_accumulate(m->loss_acc, m->losses, N);
    m->loss_tokens += N;
}

void gpt2_backward(gpt2_model *m, grads_ready_fn on_ready, void *ctx) {
    const kernel_ops *ops = m->ops;
    const gpt2_layout *lay = &m->lay;
    const int L = lay->n_layer, C = lay->n_embd, NH = lay->n_head;
    const int B = m->fwd_B, T = m->fwd_T, N = B * T;
    /* dln holds d(ln_f output) from the classifier chunks. Each LayerNorm
     * backward leaves dres = d(residual stream) there, which is also the
     * output gradient of the projection that wrote into the stream just
     * before: its bias gradient is dres's column sums, taken by the
     * LayerNorm backward (dinp_colsum), so those matmul backwards get no
     * dbias. */
    ops->zero(m->dres, (size_t)N * C * ops->elem_bytes);
    layernorm_backward_into(m, L - 1, FP8_FCPROJ, G(lay->lnf_w), G(lay->lnf_b), m->dln,
                            m->res_final, P(lay->lnf_w), m->lnf_mean, m->lnf_rstd, N, C,
                            G(lay->blocks[L - 1].fcproj_b));
    if (on_ready) on_ready(ctx, lay->blocks[L - 1].begin);
    for (int l = L - 1; l >= 0; l--) {
        const block_offsets *o = &lay->blocks[l];
        block_acts *a = &m->acts[l];
        /* MLP: dres is d(block output); fc_proj's input was gelu(fch). */
        /* (with FP8 the product reads the FP8 copy the forward kept, or with
         * recompute_gelu one cast again) */
        if (m->opt.recompute_gelu && m->fp8)
            fp8_recompute_gelu_input(m->fp8, ops, l, a->fch, N);
        else if (m->opt.recompute_gelu)
            ops->gelu_forward(a->fch_gelu, a->fch, (size_t)N * 4 * C);
        /* c_fc's bias gradient (the column sums of d(fch)) comes with it */
        linear_backward(m, l, FP8_FCPROJ, m->dfch, G(o->fcproj_w), NULL, m->dres, a->fch_gelu,
                        P(o->fcproj_w), a->fch, N, 4 * C, C, G(o->fc_b));
        linear_backward(m, l, FP8_FC, m->dln, G(o->fc_w), NULL, m->dfch, a->ln2, P(o->fc_w), NULL,
                        N, C, 4 * C, NULL);
        layernorm_backward_into(m, l, FP8_ATTPROJ, G(o->ln2_w), G(o->ln2_b), m->dln, a->res2,
                                P(o->ln2_w), a->ln2_mean, a->ln2_rstd, N, C, G(o->attproj_b));
        /* Attention: dres is now d(res2). */
        linear_backward(m, l, FP8_ATTPROJ, m->dln, G(o->attproj_w), NULL, m->dres, a->atty,
                        P(o->attproj_w), NULL, N, C, C, NULL);
        /* c_attn's bias gradient (dqkv's column sums) comes with it */
        if (in_fp8(m, FP8_QKV)) /* with attn.c_attn's FP8 output gradient cast on the way */
            fp8_attention_backward(m->fp8, ops, l, m->dqkv, m->dln, a->qkv, a->atty, a->lse, B, T,
                                   C, NH, G(o->qkv_b));
        else
            ops->attention_backward(m->dqkv, m->dln, a->qkv, a->atty, a->lse, B, T, C, NH,
                                    G(o->qkv_b));
        linear_backward(m, l, FP8_QKV, m->dln, G(o->qkv_w), NULL, m->dqkv, a->ln1, P(o->qkv_w),
                        NULL, N, C, 3 * C, NULL);
        layernorm_backward_into(m, l - 1, FP8_FCPROJ, G(o->ln1_w), G(o->ln1_b), m->dln, a->res1,
                                P(o->ln1_w), a->ln1_mean, a->ln1_rstd, N, C,
                                l > 0 ? G(lay->blocks[l - 1].fcproj_b) : NULL);
        if (on_ready) on_ready(ctx, l > 0 ? lay->blocks[l - 1].begin : lay->wpe);
    }
    ops->encoder_backward(G(lay->wte), G(lay->wpe), m->dres, m->inputs, B, T, C,
                          lay->padded_vocab_size);
    if (on_ready) on_ready(ctx, lay->n_elements);
}

void gpt2_last_logits(gpt2_model *m, int B, int T, float *host_logits) {
    const kernel_ops *ops = m->ops;
    const gpt2_layout *lay = &m->lay;
    const int C = lay->n_embd, Vp = lay->padded_vocab_size;
    for (int b = 0; b < B; b++) {
        const void *x = ops_at(ops, m->lnf, ((size_t)b * T + T - 1) * C);
        ops->matmul_forward(m->logits, x, P(lay->wte), NULL, 1, C, Vp);
        ops->download_f32(host_logits + (size_t)b * Vp, m->logits, (size_t)Vp);
    }
}
