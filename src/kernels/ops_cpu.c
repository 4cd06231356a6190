/* The CPU backend's kernel table: fp32 everywhere, host memory, the
 * reference kernels of src/kernels/cpu/. */
#include "kernels/ops.h"

#include <stdlib.h>
#include <string.h>

#include "base/fail.h"
#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/classifier.h"
#include "kernels/encoder.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/muon.h"
#include "kernels/norm.h"

static void *cpu_alloc(size_t bytes) {
    /* 64-byte alignment keeps vector loads on cache-line boundaries. */
    void *p = NULL;
    size_t rounded = (bytes + 63) / 64 * 64;
    if (posix_memalign(&p, 64, rounded ? rounded : 64) != 0)
        FAIL("out of host memory allocating %zu bytes", bytes);
    return p;
}
static void cpu_release(void *p) { free(p); }

static void *cpu_host_alloc(size_t bytes) { return malloc(bytes); }
static void cpu_zero(void *p, size_t bytes) { memset(p, 0, bytes); }
static void cpu_copy(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
static void cpu_copy_f32(void *dst, const float *src, size_t n) { memcpy(dst, src, n * 4); }
static void cpu_copy_to_f32(float *dst, const void *src, size_t n) { memcpy(dst, src, n * 4); }
static void cpu_synchronize(void) {}

static void cpu_encoder_forward(void *out, const int32_t *inp, const void *wte, const void *wpe,
                                int B, int T, int C) {
    encoder_forward_cpu(out, inp, wte, wpe, B, T, C);
}
static void cpu_encoder_backward(void *dwte, void *dwpe, const void *dout, const int32_t *inp,
                                 int B, int T, int C, int V) {
    (void)V; /* the CPU adds each row in place: no sort to bound */
    encoder_backward_cpu(dwte, dwpe, dout, inp, B, T, C);
}
static void cpu_layernorm_forward(void *out, float *mean, float *rstd, const void *inp,
                                  const void *weight, const void *bias, int N, int C) {
    layernorm_forward_cpu(out, mean, rstd, inp, weight, bias, N, C);
}
static void cpu_residual_layernorm_forward(void *residual, void *out, float *mean, float *rstd,
                                           const void *a, const void *b, const void *weight,
                                           const void *bias, int N, int C) {
    residual_layernorm_forward_cpu(residual, out, mean, rstd, a, b, weight, bias, N, C);
}
static void cpu_layernorm_backward(void *dinp, void *dweight, void *dbias, const void *dout,
                                   const void *inp, const void *weight, const float *mean,
                                   const float *rstd, int N, int C, void *dinp_colsum) {
    layernorm_backward_cpu(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
    if (dinp_colsum) bias_grad_cpu(dinp_colsum, dinp, N, C);
}
static void cpu_matmul_forward(void *out, const void *inp, const void *weight, const void *bias,
                               int N, int C, int OC) {
    matmul_forward_cpu(out, inp, weight, bias, N, C, OC);
}
static void cpu_matmul_residual_forward(void *out, const void *residual, const void *inp,
                                        const void *weight, const void *bias, int N, int C,
                                        int OC) {
    CHECK(out != residual, "matmul_residual_forward: out and residual must be distinct");
    matmul_forward_cpu(out, inp, weight, bias, N, C, OC);
    float *o = out;
    const float *r = residual;
    const size_t n = (size_t)N * OC;
    for (size_t i = 0; i < n; i++) o[i] += r[i];
}
static void cpu_matmul_gelu_forward(void *out, void *pre, const void *inp, const void *weight,
                                    const void *bias, int N, int C, int OC) {
    matmul_forward_cpu(pre, inp, weight, bias, N, C, OC);
    gelu_forward_cpu(out, pre, (size_t)N * OC);
}
static void cpu_matmul_backward(void *dinp, void *dweight, void *dbias, const void *dout,
                                const void *inp, const void *weight, int N, int C, int OC) {
    matmul_backward_cpu(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}
static void cpu_matmul_backward_gelu(void *dinp, void *dweight, void *dbias, const void *dout,
                                     const void *inp, const void *weight, const void *pre, int N,
                                     int C, int OC, void *dpre_colsum) {
    matmul_backward_cpu(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
    gelu_backward_cpu(dinp, pre, dinp, (size_t)N * C);
    if (dpre_colsum) bias_grad_cpu(dpre_colsum, dinp, N, C);
}
static void cpu_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int C,
                                  int NH) {
    attention_forward_cpu(out, lse, qkv, B, T, C, NH);
}
static void cpu_attention_backward(void *dqkv, const void *dout, const void *qkv, const void *out,
                                   const float *lse, int B, int T, int C, int NH,
                                   void *dqkv_colsum) {
    attention_backward_cpu(dqkv, dout, qkv, out, lse, B, T, C, NH);
    if (dqkv_colsum) bias_grad_cpu(dqkv_colsum, dqkv, B * T, 3 * C);
}
static void cpu_classifier(void *logits, float *losses, const int32_t *targets, int N, int V,
                           int Vp, float dloss) {
    classifier_forward_backward_cpu(logits, losses, targets, N, V, Vp, dloss);
}
static void cpu_loss_accumulate(float *acc, const float *losses, int N) {
    for (int i = 0; i < N; i++) acc[i] += losses[i];
}
static void cpu_sum_f32(double *sum, const float *x, size_t n) {
    double total = 0.0;
    for (size_t i = 0; i < n; i++) total += x[i];
    *sum = total;
}
static void cpu_gelu_forward(void *out, const void *inp, size_t n) {
    gelu_forward_cpu(out, inp, n);
}
static void cpu_grad_sum_squares(double *sum, const void *grad, size_t n) {
    *sum = sum_squares_cpu(grad, n);
}
static void cpu_clip_scale(float *scale, const double *sum_squares, double max_norm) {
    *scale = clip_factor(*sum_squares, max_norm);
}
static void cpu_nonfinite_fold(double *sum_squares, const double *value) {
    *sum_squares = nonfinite_fold_value(*sum_squares, *value);
}
/* The reference update once per run of chunks with the same decay flag. */
static void cpu_adamw_update(void *params, float *master, const void *grad, float *m, float *v,
                             size_t n, const uint8_t *decay_chunks, const float *grad_scale,
                             const adamw_hyper *h) {
    const float *g = grad;
    adamw_hyper no_decay = *h;
    no_decay.weight_decay = 0.0f;
    /* Runs of chunks with one flag: each run is one call, or left alone. */
    for (size_t begin = 0, end; begin < n; begin = end) {
        const uint8_t flag = decay_chunks ? decay_chunks[begin / ADAMW_DECAY_CHUNK] : 1;
        end = n;
        if (decay_chunks)
            for (size_t c = begin / ADAMW_DECAY_CHUNK + 1; c * ADAMW_DECAY_CHUNK < n; c++)
                if (decay_chunks[c] != flag) {
                    end = c * ADAMW_DECAY_CHUNK;
                    break;
                }
        if (flag == ADAMW_CHUNK_SKIP) continue;
        adamw_update_cpu(master + begin, g + begin, m + begin, v + begin, end - begin, *grad_scale,
                         flag ? h : &no_decay);
        if (params != master)
            memcpy((float *)params + begin, master + begin, (end - begin) * sizeof(float));
    }
}

static void cpu_muon_momentum(void *x, float *buf, const void *grad, const muon_batch *b,
                              const float *grad_scale, float momentum) {
    muon_momentum_cpu(x, buf, grad, b, *grad_scale, momentum);
}
/* The orthogonalisation's workspace, kept between steps and grown to the
 * largest shape asked for (the CUDA backend's scratch arena does the same),
 * so that a step allocates nothing. The CPU backend runs one op at a time. */
static void cpu_muon_orthogonalize(void *x, int count, int rows, int cols) {
    static float *work;
    static size_t work_floats;
    const size_t need = muon_orthogonalize_cpu_floats(rows, cols);
    if (need > work_floats) {
        free(work);
        work = cpu_alloc(need * sizeof(float));
        work_floats = need;
    }
    muon_orthogonalize_cpu(x, count, rows, cols, work);
}
static void cpu_muon_apply(void *params, float *master, const void *x, const muon_batch *b,
                           const float *grad_scale, const muon_hyper *h) {
    muon_apply_cpu(master, x, b, *grad_scale, h);
    if (params == master || *grad_scale < 0.0f) return;
    const size_t n = (size_t)b->rows * b->cols;
    for (int k = 0; k < b->count; k++)
        memcpy((float *)params + b->offsets[k], master + b->offsets[k], n * sizeof(float));
}

const kernel_ops ops_cpu = {
    .name = "cpu",
    .elem_bytes = sizeof(float),
    .logits_chunk_bytes = 64u << 20,
    .alloc = cpu_alloc,
    .release = cpu_release,
    .zero = cpu_zero,
    .upload = cpu_copy,
    .download = cpu_copy,
    .host_alloc = cpu_host_alloc,
    .host_release = cpu_release,
    .upload_f32 = cpu_copy_f32,
    .download_f32 = cpu_copy_to_f32,
    .synchronize = cpu_synchronize,
    .encoder_forward = cpu_encoder_forward,
    .encoder_backward = cpu_encoder_backward,
    .layernorm_forward = cpu_layernorm_forward,
    .residual_layernorm_forward = cpu_residual_layernorm_forward,
    .layernorm_backward = cpu_layernorm_backward,
    .matmul_forward = cpu_matmul_forward,
    .matmul_residual_forward = cpu_matmul_residual_forward,
    .matmul_gelu_forward = cpu_matmul_gelu_forward,
    .matmul_backward = cpu_matmul_backward,
    .matmul_backward_gelu = cpu_matmul_backward_gelu,
    .attention_forward = cpu_attention_forward,
    .attention_backward = cpu_attention_backward,
    .classifier_forward_backward = cpu_classifier,
    .loss_accumulate = cpu_loss_accumulate,
    .sum_f32 = cpu_sum_f32,
    .nonfinite_fold = cpu_nonfinite_fold,
    .gelu_forward = cpu_gelu_forward,
    .grad_sum_squares = cpu_grad_sum_squares,
    .clip_scale = cpu_clip_scale,
    .adamw_update = cpu_adamw_update,
    .muon_momentum = cpu_muon_momentum,
    .muon_orthogonalize = cpu_muon_orthogonalize,
    .muon_apply = cpu_muon_apply,
};
