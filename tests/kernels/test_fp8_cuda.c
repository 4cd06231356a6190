/* GPU test of FP8 (kernels/fp8.h, kernels/matmul.h) on real GPUs:
 * - fp8_cast_cuda against the CPU model (fp8_encode, itself checked bit for
 *   bit against NVIDIA's conversion by test_fp8_cpu): every byte of the
 *   cast and of its transposed copy, E4M3 and E5M2, at scales that leave
 *   values in range, push them into subnormals and saturate them; infinities
 *   and NaN; the amax, exactly (NaN where the input has one), and the
 *   counts of nonzero and flushed values against fp8_flushed, exactly;
 * - the three products of a linear layer with FP8 operands, through the
 *   production entry points (matmul_forward_cuda, matmul_gelu_forward_cuda,
 *   matmul_backward_cuda): forward (activations x weights, E4M3 x E4M3,
 *   with bias, and with the GELU epilogue), input gradient (gradients x
 *   transposed weights, E5M2 x E4M3, and through a GELU with its
 *   pre-activation's bias gradient), weight gradient (transposed gradients
 *   x transposed activations, added into the old one), bias gradient, at
 *   every layer shape of GPT-2 124M (with fewer tokens) and one of partial
 *   tiles, against a float64 sum over the dequantised operands. The
 *   operands are exact FP8 values, so only fp32 accumulation order and the
 *   bf16 rounding of the output differ: |gpu - ref| <= 2^-7 |ref| + 1e-3
 *   rms(ref) (|old| + |sum| where added into; 1e-2 rms where cuBLASLt's
 *   own tanh is involved, as in test_ops_cuda);
 * - the batched cast (a block's four weights in one launch) against one
 *   fp8_cast_cuda per tensor, bit for bit;
 * - the fused GELU forward + cast, GELU backward + cast, LayerNorm + cast
 *   and LayerNorm backward + cast against the separate passes they
 *   replace, bit for bit (bytes, transpose, amax and counts, the bias
 *   gradient, the residual and statistics, the LayerNorm backward's dinp;
 *   its weight, bias and column sums within a bf16 rounding);
 * - the attention forward + cast of O (attention_forward_fp8_cuda) against
 *   attention_forward_cuda then fp8_cast_cuda, bit for bit (O, lse, bytes,
 *   transpose, amax, counts), fused (Hopper, head size 64) and not;
 * - the attention backward + cast of dqkv (attention_backward_fp8_cuda)
 *   against attention_backward_cuda then fp8_cast_cuda: in the
 *   deterministic mode bit for bit (bytes, transpose, amax, counts, dK and
 *   dV, the bias gradient); in the default one, whose dQ sums in no fixed
 *   order, dQ's bytes within one FP8 step and the rest as before; head
 *   sizes 64 and 128, a length that is no multiple of 64 (the two passes
 *   as they are), and on Hopper the mma.sync kernels too;
 * - fp8_scaling_update_cuda against fp8_scale_update, bit for bit, over
 *   steps whose amaxes include 0, NaN, infinity and an overflowing scale,
 *   with the counts added into the underflow totals.
 * Exits 77 (skipped) where no GPU is visible, 1 on any failure. */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "kernels/attention.h"
#include "kernels/classifier.h"
#include "kernels/cuda_info.h"
#include "kernels/fp8.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "model/fp8_layers.h" /* fp8_fast_accum_names */
#include "model/rng.h"

static rng_state rng;
static int n_checks, n_failed;

#define CK(x)                                                                                      \
    do {                                                                                           \
        const cudaError_t e_ = (x);                                                                \
        if (e_ != cudaSuccess) {                                                                   \
            printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void check(int ok, const char *what) {
    n_checks++;
    printf("CHECK %s %s\n", what, ok ? "PASS" : "FAIL");
    if (!ok) n_failed++;
}

static const char *name_of(fp8_format f) { return f == FP8_E4M3 ? "e4m3" : "e5m2"; }

static uint16_t bf16_bits(float x) { /* round to nearest even; NaN kept quiet */
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static float bf16_value(uint16_t b) {
    const uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static void *dev_copy(const void *h, size_t bytes) {
    void *d = NULL;
    CK(cudaMalloc(&d, bytes ? bytes : 1));
    CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}
static float *dev_float(float v) { return dev_copy(&v, sizeof v); }
/* Cast stats on the device starting at amax and the counts given (the
 * casts add to them). */
static fp8_cast_stats *dev_stats(float amax, unsigned long long nonzero,
                                 unsigned long long flushed) {
    const fp8_cast_stats h = {amax, 0, nonzero, flushed};
    return dev_copy(&h, sizeof h);
}
static fp8_cast_stats host_stats(const fp8_cast_stats *d) {
    fp8_cast_stats h;
    CK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    return h;
}
/* Both stats the same: amax (bits) and counts. */
static int same_stats(fp8_cast_stats a, fp8_cast_stats b) {
    return memcmp(&a.amax, &b.amax, 4) == 0 && a.nonzero == b.nonzero && a.flushed == b.flushed;
}

/* ------------------------------------------------------------------ casts */

/* A value of a wide dynamic range: N(0,1) times 2^U(-14, 14), as bf16. */
static uint16_t wide_value(void) {
    return bf16_bits((float)(rng_normal(&rng) * ldexp(1.0, (int)(rng_uniform(&rng) * 28) - 14)));
}

static void check_cast(int rows, int cols, float scale, fp8_format f, int transpose, int with_nan,
                       cudaStream_t s) {
    const size_t n = (size_t)rows * cols;
    uint16_t *x = xmalloc(n * 2);
    for (size_t i = 0; i < n; i++) x[i] = wide_value();
    /* specials at fixed places: zeros, infinities, the largest bf16, a bf16 subnormal */
    const uint16_t specials[] = {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7F7F, 0xFF7F, 0x0001, 0x8003};
    for (size_t k = 0; k < sizeof specials / sizeof specials[0] && k * 97 < n; k++)
        x[k * 97] = specials[k];
    if (with_nan) x[n / 2] = 0xFFC1; /* a negative NaN with payload */

    uint8_t *d_out, *d_out_t = NULL;
    CK(cudaMalloc((void **)&d_out, n));
    CK(cudaMemset(d_out, 0xAA, n));
    if (transpose) {
        CK(cudaMalloc((void **)&d_out_t, n));
        CK(cudaMemset(d_out_t, 0xAA, n));
    }
    void *d_in = dev_copy(x, n * 2);
    float *d_scale = dev_float(scale);
    fp8_cast_stats *d_stats = dev_stats(0.25f, 5, 3); /* all three accumulate */
    fp8_cast_cuda(d_out, d_out_t, d_stats, d_in, rows, cols, d_scale, f, s);
    CK(cudaStreamSynchronize(s));

    uint8_t *out = xmalloc(n), *out_t = xmalloc(n);
    CK(cudaMemcpy(out, d_out, n, cudaMemcpyDeviceToHost));
    if (transpose) CK(cudaMemcpy(out_t, d_out_t, n, cudaMemcpyDeviceToHost));
    const fp8_cast_stats got = host_stats(d_stats);
    const float amax = got.amax;

    size_t bad = 0, bad_t = 0, first_bad = n;
    float want_amax = 0.25f;
    unsigned long long nonzero = 5, flushed = 3;
    int saw_nan = 0;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            const size_t i = (size_t)r * cols + c;
            const float v = bf16_value(x[i]);
            const uint8_t want = fp8_encode(v * scale, f);
            nonzero += v != 0.0f;
            flushed += fp8_flushed(v, scale, f);
            if (out[i] != want) {
                if (first_bad == n) first_bad = i;
                bad++;
            }
            if (transpose && out_t[(size_t)c * rows + r] != out[i]) bad_t++;
            if (isnan(v))
                saw_nan = 1;
            else if (fabsf(v) > want_amax)
                want_amax = fabsf(v);
        }
    char what[200];
    snprintf(what, sizeof what,
             "cast %s %dx%d scale=%g%s%s: %zu of %zu bytes differ from the CPU model", name_of(f),
             rows, cols, scale, transpose ? " +transposed" : "", with_nan ? " +NaN" : "", bad, n);
    if (bad)
        printf("  first: element %zu = %g (bf16 0x%04x): gpu 0x%02x, model 0x%02x\n", first_bad,
               bf16_value(x[first_bad]), x[first_bad], out[first_bad],
               fp8_encode(bf16_value(x[first_bad]) * scale, f));
    check(bad == 0, what);
    if (transpose) {
        snprintf(what, sizeof what, "cast %s %dx%d transposed copy: %zu bytes differ", name_of(f),
                 rows, cols, bad_t);
        check(bad_t == 0, what);
    }
    snprintf(what, sizeof what, "cast %s %dx%d amax %g (want %s%g)", name_of(f), rows, cols, amax,
             saw_nan ? "NaN, not " : "", want_amax);
    check(saw_nan ? isnan(amax) : amax == want_amax, what);
    snprintf(what, sizeof what,
             "cast %s %dx%d scale=%g: %llu nonzero, %llu flushed (model %llu, %llu, from 5 and 3)",
             name_of(f), rows, cols, scale, got.nonzero, got.flushed, nonzero, flushed);
    check(got.nonzero == nonzero && got.flushed == flushed, what);
    free(x);
    free(out);
    free(out_t);
    CK(cudaFree(d_out));
    if (d_out_t) CK(cudaFree(d_out_t));
    CK(cudaFree(d_in));
    CK(cudaFree(d_scale));
    CK(cudaFree(d_stats));
}

/* fp8_cast_batch_cuda of n tensors (rows[j] x cols[j], each with its own
 * scale; transposed copies where transpose) against fp8_cast_cuda of each:
 * the same bytes, transposed bytes and amaxes, bit for bit; and each job's
 * dequant (the last job's NULL) 1 / its scale, correctly rounded. */
static void check_cast_batch(int n, const int *rows, const int *cols, int transpose, fp8_format f,
                             cudaStream_t s) {
    fp8_cast_job jobs[FP8_CAST_BATCH_MAX];
    void *in[FP8_CAST_BATCH_MAX];
    uint8_t *o[FP8_CAST_BATCH_MAX][4];
    fp8_cast_stats *stats[FP8_CAST_BATCH_MAX][2];
    float *scale[FP8_CAST_BATCH_MAX], *dequant[FP8_CAST_BATCH_MAX], scale_host[FP8_CAST_BATCH_MAX];
    for (int j = 0; j < n; j++) {
        const size_t e = (size_t)rows[j] * cols[j];
        uint16_t *h = xmalloc(e * 2 + 2);
        for (size_t i = 0; i < e; i++) h[i] = bf16_bits((float)(0.02 * (j + 1) * rng_normal(&rng)));
        in[j] = dev_copy(h, e * 2 + 2);
        free(h);
        for (int k = 0; k < 4; k++) {
            o[j][k] = NULL;
            if (transpose || k % 2 == 0) CK(cudaMalloc((void **)&o[j][k], e + 1));
        }
        stats[j][0] = dev_stats(0.0f, 0, 0), stats[j][1] = dev_stats(0.0f, 0, 0);
        /* the last tensor's scale flushes some of its values */
        scale_host[j] = j == n - 1 ? 1e-3f : 448.0f / (0.1f * (j + 1));
        scale[j] = dev_float(scale_host[j]);
        dequant[j] = j == n - 1 ? NULL : dev_float(-1.0f);
        fp8_cast_cuda(o[j][0], o[j][1], stats[j][0], in[j], rows[j], cols[j], scale[j], f, s);
        jobs[j] = (fp8_cast_job){o[j][2], o[j][3], stats[j][1], in[j],
                                 rows[j], cols[j], scale[j],    dequant[j]};
    }
    fp8_cast_batch_cuda(jobs, n, f, s);
    CK(cudaStreamSynchronize(s));
    int same = 1;
    unsigned long long flushed = 0;
    char shapes[120] = "";
    for (int j = 0; j < n; j++) {
        const size_t e = (size_t)rows[j] * cols[j];
        uint8_t *h[4] = {NULL, NULL, NULL, NULL};
        for (int k = 0; k < 4; k++) {
            if (!o[j][k]) continue;
            h[k] = xmalloc(e + 1);
            CK(cudaMemcpy(h[k], o[j][k], e, cudaMemcpyDeviceToHost));
        }
        const fp8_cast_stats a[2] = {host_stats(stats[j][0]), host_stats(stats[j][1])};
        same = same && !memcmp(h[0], h[2], e) && (!transpose || !memcmp(h[1], h[3], e)) &&
               same_stats(a[0], a[1]) && (e == 0 || (a[0].amax > 0.0f && a[0].nonzero > 0));
        flushed += a[0].flushed;
        if (dequant[j]) { /* IEEE division in float: what the scale update writes */
            float got;
            CK(cudaMemcpy(&got, dequant[j], sizeof got, cudaMemcpyDeviceToHost));
            const float want = e == 0 ? -1.0f : 1.0f / scale_host[j]; /* empty: skipped */
            same = same && memcmp(&got, &want, sizeof got) == 0;
            CK(cudaFree(dequant[j]));
        }
        snprintf(shapes + strlen(shapes), sizeof shapes - strlen(shapes), " %dx%d", rows[j],
                 cols[j]);
        for (int k = 0; k < 4; k++) {
            free(h[k]);
            if (o[j][k]) CK(cudaFree(o[j][k]));
        }
        void *dev[] = {in[j], stats[j][0], stats[j][1], scale[j]};
        for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) CK(cudaFree(dev[i]));
    }
    char what[200];
    snprintf(what, sizeof what,
             "batched cast %s of%s%s: bytes%s, amaxes, counts (%llu flushed), dequant %s",
             name_of(f), shapes, transpose ? "" : " (no transpose)",
             transpose ? ", transposed" : "", flushed,
             same ? "the same as one cast each" : "DIFFER");
    check(same && flushed > 0, what);
}

/* Two casts of the same tensor side by side, for the checks of a fused
 * pass against the separate passes it replaces: o[0], o[1] (bytes and
 * transposed copy of the separate passes), o[2], o[3] (the fused pass's),
 * the transposed ones only with transpose, and stats for each. */
typedef struct {
    size_t n;
    int transpose;
    uint8_t *o[4];
    fp8_cast_stats *stats[2];
} cast_pair;

static void cast_pair_alloc(cast_pair *p, size_t n, int transpose) {
    p->n = n;
    p->transpose = transpose;
    for (int k = 0; k < 4; k++) {
        p->o[k] = NULL;
        if (transpose || k % 2 == 0) CK(cudaMalloc((void **)&p->o[k], n));
    }
    p->stats[0] = dev_stats(0.0f, 0, 0), p->stats[1] = dev_stats(0.0f, 0, 0);
}

/* Releases p's device buffers. */
static void cast_pair_free(cast_pair *p) {
    for (int k = 0; k < 4; k++)
        if (p->o[k]) CK(cudaFree(p->o[k]));
    CK(cudaFree(p->stats[0]));
    CK(cudaFree(p->stats[1]));
}

/* After the stream is done: *same (the bytes agree), *same_t (the
 * transposed copies agree, or were not asked), a[2] (the stats); frees p. */
static void cast_pair_compare(cast_pair *p, int *same, int *same_t, fp8_cast_stats a[2]) {
    uint8_t *h[4] = {NULL, NULL, NULL, NULL};
    for (int k = 0; k < 4; k++) {
        if (!p->o[k]) continue;
        h[k] = xmalloc(p->n);
        CK(cudaMemcpy(h[k], p->o[k], p->n, cudaMemcpyDeviceToHost));
    }
    *same = !memcmp(h[0], h[2], p->n);
    *same_t = !p->transpose || !memcmp(h[1], h[3], p->n);
    for (int k = 0; k < 2; k++) a[k] = host_stats(p->stats[k]);
    for (int k = 0; k < 4; k++) free(h[k]);
    cast_pair_free(p);
}

/* The fused GELU forward + cast (fp8_gelu_cast_cuda) against the separate
 * passes it replaces (gelu_forward_cuda, then fp8_cast_cuda): the same
 * bytes, transposed bytes (transpose: 1) and amax, bit for bit. */
static void check_gelu_cast(int rows, int cols, int transpose, cudaStream_t s) {
    const size_t n = (size_t)rows * cols;
    uint16_t *pre = xmalloc(n * 2);
    for (size_t i = 0; i < n; i++) pre[i] = bf16_bits((float)(2.0 * rng_normal(&rng)));
    void *d_pre = dev_copy(pre, n * 2), *d_g;
    CK(cudaMalloc(&d_g, n * 2));
    cast_pair p;
    cast_pair_alloc(&p, n, transpose);
    float *scale = dev_float(30.0f);
    gelu_forward_cuda(d_g, d_pre, n, s);
    fp8_cast_cuda(p.o[0], p.o[1], p.stats[0], d_g, rows, cols, scale, FP8_E4M3, s);
    fp8_gelu_cast_cuda(p.o[2], p.o[3], p.stats[1], d_pre, rows, cols, scale, FP8_E4M3, s);
    CK(cudaStreamSynchronize(s));
    int same, same_t;
    fp8_cast_stats a[2];
    cast_pair_compare(&p, &same, &same_t, a);
    char what[200];
    snprintf(what, sizeof what,
             "fused GELU forward + cast %dx%d: bytes %s, transposed %s, amax %g/%g, flushed "
             "%llu/%llu of %llu/%llu",
             rows, cols, same ? "same" : "DIFFER",
             transpose ? (same_t ? "same" : "DIFFER") : "not asked", a[0].amax, a[1].amax,
             a[0].flushed, a[1].flushed, a[0].nonzero, a[1].nonzero);
    check(same && same_t && same_stats(a[0], a[1]) && a[0].amax > 0.0f, what);
    free(pre);
    void *dev[] = {d_pre, d_g, scale};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) CK(cudaFree(dev[i]));
}

/* The LayerNorm with FP8 output (layernorm_forward_fp8_cuda; residual: with
 * the residual add) against the separate passes it replaces
 * ((residual_)layernorm_forward_cuda, then fp8_cast_cuda): the same bytes,
 * transposed bytes (transpose: 1), amax, residual, mean and rstd, bit for
 * bit. */
static void check_layernorm_fp8(int N, int C, int residual, int transpose, cudaStream_t s) {
    const size_t n = (size_t)N * C;
    uint16_t *ha = xmalloc(n * 2), *hb = xmalloc(n * 2), *wb = xmalloc((size_t)C * 4);
    for (size_t i = 0; i < n; i++) {
        ha[i] = bf16_bits((float)(1.0 + rng_normal(&rng)));
        hb[i] = bf16_bits((float)(0.5 * rng_normal(&rng)));
    }
    for (int j = 0; j < 2 * C; j++)
        wb[j] = bf16_bits((float)(j < C ? 1.0 + 0.2 * rng_normal(&rng) : 0.1 * rng_normal(&rng)));
    void *d_a = dev_copy(ha, n * 2), *d_b = dev_copy(hb, n * 2),
         *d_wb = dev_copy(wb, (size_t)C * 4);
    const void *d_w = d_wb, *d_bias = (const uint16_t *)d_wb + C;
    void *res[2], *ln;
    float *stat[4];
    for (int k = 0; k < 2; k++) CK(cudaMalloc(&res[k], n * 2));
    CK(cudaMalloc(&ln, n * 2));
    for (int k = 0; k < 4; k++) CK(cudaMalloc((void **)&stat[k], (size_t)N * 4));
    cast_pair p;
    cast_pair_alloc(&p, n, transpose);
    float *scale = dev_float(100.0f);
    if (residual)
        residual_layernorm_forward_cuda(res[0], ln, stat[0], stat[1], d_a, d_b, d_w, d_bias, N, C,
                                        s);
    else
        layernorm_forward_cuda(ln, stat[0], stat[1], d_a, d_w, d_bias, N, C, s);
    fp8_cast_cuda(p.o[0], p.o[1], p.stats[0], ln, N, C, scale, FP8_E4M3, s);
    layernorm_forward_fp8_cuda(residual ? res[1] : NULL, p.o[2], p.o[3], p.stats[1], stat[2],
                               stat[3], d_a, residual ? d_b : NULL, d_w, d_bias, N, C, scale,
                               FP8_E4M3, s);
    CK(cudaStreamSynchronize(s));
    int same, same_t;
    fp8_cast_stats a[2];
    cast_pair_compare(&p, &same, &same_t, a);
    float *hs = xmalloc((size_t)N * 16);
    for (int k = 0; k < 4; k++)
        CK(cudaMemcpy(hs + (size_t)k * N, stat[k], (size_t)N * 4, cudaMemcpyDeviceToHost));
    uint16_t *hr = xmalloc(n * 4);
    for (int k = 0; k < 2 && residual; k++)
        CK(cudaMemcpy(hr + k * n, res[k], n * 2, cudaMemcpyDeviceToHost));
    const int same_ln = !memcmp(hs, hs + 2 * (size_t)N, (size_t)N * 8); /* mean and rstd */
    const int same_res = !residual || !memcmp(hr, hr + n, n * 2);
    char what[240];
    snprintf(what, sizeof what,
             "LayerNorm%s + cast %dx%d: bytes %s, transposed %s, amax %g/%g, counts %s, "
             "statistics %s, residual %s",
             residual ? " (residual)" : "", N, C, same ? "same" : "DIFFER",
             transpose ? (same_t ? "same" : "DIFFER") : "not asked", a[0].amax, a[1].amax,
             same_stats(a[0], a[1]) ? "same" : "DIFFER", same_ln ? "same" : "DIFFER",
             same_res ? "same" : "DIFFER");
    check(same && same_t && same_ln && same_res && same_stats(a[0], a[1]) && a[0].amax > 0.0f,
          what);
    for (int k = 0; k < 4; k++) CK(cudaFree(stat[k]));
    free(ha), free(hb), free(wb), free(hs), free(hr);
    void *dev[] = {d_a, d_b, d_wb, res[0], res[1], ln, scale};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) CK(cudaFree(dev[i]));
}

/* The LayerNorm backward with FP8 output (layernorm_backward_fp8_cuda;
 * colsum: with dinp's column sums) against the separate passes it
 * replaces (layernorm_backward_cuda, then fp8_cast_cuda of the new dinp,
 * E5M2): the same dinp, bytes, transposed bytes, amax and counts, bit for
 * bit; dweight, dbias and the column sums (added in another order) within
 * one bf16 rounding: |fused - separate| <= 2^-7 |separate| + 1e-3 of its
 * rms. */
static void check_layernorm_backward_fp8(int N, int C, int colsum, cudaStream_t s) {
    const size_t n = (size_t)N * C;
    uint16_t *x = xmalloc(n * 2), *d = xmalloc(n * 2), *old = xmalloc(n * 2);
    uint16_t *sums = xmalloc((size_t)C * 3 * 2), *wb = xmalloc((size_t)C * 4);
    for (size_t i = 0; i < n; i++) {
        x[i] = bf16_bits((float)(1.0 + rng_normal(&rng)));
        d[i] = bf16_bits((float)rng_normal(&rng));
        old[i] = bf16_bits((float)(0.5 * rng_normal(&rng)));
    }
    for (int j = 0; j < 2 * C; j++)
        wb[j] = bf16_bits((float)(j < C ? 1.0 + 0.2 * rng_normal(&rng) : 0.1 * rng_normal(&rng)));
    for (int j = 0; j < 3 * C; j++) sums[j] = bf16_bits((float)rng_normal(&rng));
    void *d_x = dev_copy(x, n * 2), *d_d = dev_copy(d, n * 2), *d_wb = dev_copy(wb, (size_t)C * 4);
    const void *d_w = d_wb, *d_b = (const uint16_t *)d_wb + C;
    void *ln, *dinp[2], *grads[2]; /* grads: dweight, dbias, colsum */
    float *mean, *rstd;
    CK(cudaMalloc(&ln, n * 2));
    CK(cudaMalloc((void **)&mean, (size_t)N * 4));
    CK(cudaMalloc((void **)&rstd, (size_t)N * 4));
    layernorm_forward_cuda(ln, mean, rstd, d_x, d_w, d_b, N, C, s);
    for (int k = 0; k < 2; k++) {
        dinp[k] = dev_copy(old, n * 2);
        grads[k] = dev_copy(sums, (size_t)C * 3 * 2);
    }
    const size_t ws_bytes = layernorm_backward_cuda_workspace_bytes(N, C);
    void *ws;
    CK(cudaMalloc(&ws, ws_bytes));
    cast_pair p;
    cast_pair_alloc(&p, n, 1);
    float *scale = dev_float(1000.0f);
    uint16_t *g[2] = {grads[0], grads[1]};
    layernorm_backward_cuda(dinp[0], g[0], g[0] + C, d_d, d_x, d_w, mean, rstd, N, C,
                            colsum ? g[0] + 2 * C : NULL, ws, ws_bytes, s);
    fp8_cast_cuda(p.o[0], p.o[1], p.stats[0], dinp[0], N, C, scale, FP8_E5M2, s);
    layernorm_backward_fp8_cuda(dinp[1], g[1], g[1] + C, d_d, d_x, d_w, mean, rstd, N, C,
                                colsum ? g[1] + 2 * C : NULL, ws, ws_bytes, p.o[2], p.o[3],
                                p.stats[1], scale, FP8_E5M2, s);
    CK(cudaStreamSynchronize(s));
    int same, same_t;
    fp8_cast_stats a[2];
    cast_pair_compare(&p, &same, &same_t, a);
    uint16_t *hd = xmalloc(n * 4), *hg = xmalloc((size_t)C * 12);
    for (int k = 0; k < 2; k++) {
        CK(cudaMemcpy(hd + k * n, dinp[k], n * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hg + k * 3 * (size_t)C, grads[k], (size_t)C * 6, cudaMemcpyDeviceToHost));
    }
    const int same_dinp = !memcmp(hd, hd + n, n * 2);
    int sums_ok = 1;
    double worst = 0.0; /* the largest |fused - separate| over its bound */
    for (int part = 0; part < (colsum ? 3 : 2); part++) {
        double sq = 0.0;
        for (int j = 0; j < C; j++) {
            const double v = bf16_value(hg[part * C + j]);
            sq += v * v;
        }
        const double rms = sqrt(sq / C);
        for (int j = 0; j < C; j++) {
            const double a0 = bf16_value(hg[part * C + j]),
                         b0 = bf16_value(hg[3 * C + part * C + j]);
            const double bound = ldexp(fabs(a0), -7) + 1e-3 * rms;
            if (fabs(b0 - a0) > bound) sums_ok = 0;
            if (fabs(b0 - a0) / bound > worst) worst = fabs(b0 - a0) / bound;
        }
    }
    char what[260];
    snprintf(what, sizeof what,
             "LayerNorm backward%s + cast %dx%d: dinp %s, bytes %s, transposed %s, amax %g/%g, "
             "counts %s, sums %s (worst %.2f of the bound)",
             colsum ? " (column sums)" : "", N, C, same_dinp ? "same" : "DIFFER",
             same ? "same" : "DIFFER", same_t ? "same" : "DIFFER", a[0].amax, a[1].amax,
             same_stats(a[0], a[1]) ? "same" : "DIFFER", sums_ok ? "within" : "BEYOND", worst);
    check(same && same_t && same_dinp && sums_ok && same_stats(a[0], a[1]) && a[0].amax > 0.0f,
          what);
    free(x), free(d), free(old), free(sums), free(wb), free(hd), free(hg);
    void *dev[] = {d_x, d_d, d_wb, ln, mean, rstd, dinp[0], dinp[1], grads[0], grads[1], ws, scale};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) CK(cudaFree(dev[i]));
}

/* FP8 bytes a and b within one step of each other: the same sign and
 * magnitudes (the low 7 bits order like the values) at most 1 apart. */
static int fp8_near(uint8_t a, uint8_t b) {
    if (a == b) return 1;
    if ((a ^ b) & 0x80u) return (a & 0x7fu) + (b & 0x7fu) <= 1; /* +-0 or the smallest */
    return abs((int)(a & 0x7fu) - (int)(b & 0x7fu)) <= 1;
}

/* The attention forward with O's FP8 copy written by its epilogue
 * (attention_forward_fp8_cuda) against attention_forward_cuda followed by
 * fp8_cast_cuda: the same bits everywhere (O, lse, bytes, transposed bytes
 * when asked, amax, counts). B x T tokens, NH heads of HS; opt chooses the
 * kernels. The fused path runs on the wgmma kernels at head size 64 and T
 * a multiple of 64; the other cases check the two passes it falls back
 * to. */
static void check_attention_forward_fp8(int B, int T, int NH, int HS, int transpose,
                                        const attention_cuda_options *opt, cudaStream_t s) {
    const int C = NH * HS, N = B * T;
    const size_t n3 = (size_t)N * 3 * C, n = (size_t)N * C, nl = (size_t)B * NH * T;
    uint16_t *qkv = xmalloc(n3 * 2);
    for (size_t i = 0; i < n3; i++) qkv[i] = bf16_bits((float)(2.0 * rng_normal(&rng)));
    void *d_qkv = dev_copy(qkv, n3 * 2), *out[2];
    float *lse[2];
    for (int k = 0; k < 2; k++) {
        CK(cudaMalloc(&out[k], n * 2));
        CK(cudaMalloc((void **)&lse[k], nl * 4));
    }
    cast_pair p;
    cast_pair_alloc(&p, n, transpose);
    float *scale = dev_float(32.0f);
    attention_forward_cuda(out[0], lse[0], d_qkv, B, T, C, NH, opt, s);
    fp8_cast_cuda(p.o[0], p.o[1], p.stats[0], out[0], N, C, scale, FP8_E4M3, s);
    attention_forward_fp8_cuda(out[1], lse[1], d_qkv, B, T, C, NH, opt, p.o[2], p.o[3], p.stats[1],
                               scale, FP8_E4M3, s);
    CK(cudaStreamSynchronize(s));
    void *h = xmalloc(2 * (n * 2 + nl * 4));
    uint8_t *ho = h, *hl = ho + 2 * n * 2;
    for (int k = 0; k < 2; k++) {
        CK(cudaMemcpy(ho + k * n * 2, out[k], n * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hl + k * nl * 4, lse[k], nl * 4, cudaMemcpyDeviceToHost));
    }
    const int same_out = !memcmp(ho, ho + n * 2, n * 2),
              same_lse = !memcmp(hl, hl + nl * 4, nl * 4);
    int same, same_t;
    fp8_cast_stats a[2];
    cast_pair_compare(&p, &same, &same_t, a);
    char what[240];
    snprintf(what, sizeof what,
             "attention forward + cast B=%d T=%d NH=%d HS=%d%s (%s): out %s, lse %s, bytes %s, "
             "transposed %s, amax %g/%g, counts %llu/%llu, %llu/%llu",
             B, T, NH, HS, transpose ? "" : " (no transpose)", attention_cuda_kernels(HS, opt),
             same_out ? "same" : "DIFFER", same_lse ? "same" : "DIFFER", same ? "same" : "DIFFER",
             same_t ? "same" : "DIFFER", a[0].amax, a[1].amax, a[0].nonzero, a[1].nonzero,
             a[0].flushed, a[1].flushed);
    check(same_out && same_lse && same && same_t && same_stats(a[0], a[1]) && a[0].amax > 0.0f,
          what);
    free(qkv), free(h);
    void *dev[] = {d_qkv, out[0], out[1], lse[0], lse[1], scale};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) CK(cudaFree(dev[i]));
}

/* The attention backward with dqkv's FP8 copy written by its last pass
 * (attention_backward_fp8_cuda) against attention_backward_cuda followed by
 * fp8_cast_cuda. B x T tokens, NH heads of HS; opt chooses the kernels
 * and the mode. In the deterministic mode every byte, the stats and the
 * bias gradient are the same bits; otherwise dQ differs by its summation
 * order, and its bytes may differ by one FP8 step, the amax and bias
 * gradient by a bf16 rounding. dK's and dV's bytes are the same bits in
 * both, whether the last pass casts them or (the wgmma kernels at head
 * size 64) the main kernel; the fused path's FP8 outputs start as a
 * pattern, so that a byte it does not write shows. dqkv's bf16 parts are
 * compared only where the fused path writes them: the q part with T not a
 * multiple of 64, the k and v parts unless its main kernel casts them. */
static void check_attention_backward_fp8(int B, int T, int NH, int HS,
                                         const attention_cuda_options *opt, cudaStream_t s) {
    const int C = NH * HS, N = B * T;
    const size_t n3 = (size_t)N * 3 * C, n = (size_t)N * C;
    uint16_t *qkv = xmalloc(n3 * 2), *dout = xmalloc(n * 2), *sums = xmalloc((size_t)C * 6);
    for (size_t i = 0; i < n3; i++) qkv[i] = bf16_bits((float)rng_normal(&rng));
    for (size_t i = 0; i < n; i++) dout[i] = bf16_bits((float)rng_normal(&rng));
    for (int j = 0; j < 3 * C; j++) sums[j] = bf16_bits((float)rng_normal(&rng));
    void *d_qkv = dev_copy(qkv, n3 * 2), *d_dout = dev_copy(dout, n * 2), *out, *ws;
    void *dqkv[2], *colsum[2];
    float *lse;
    CK(cudaMalloc(&out, n * 2));
    CK(cudaMalloc((void **)&lse, (size_t)B * NH * T * 4));
    const size_t ws_bytes = attention_backward_workspace_bytes(B, T, C, NH);
    CK(cudaMalloc(&ws, ws_bytes));
    for (int k = 0; k < 2; k++) {
        CK(cudaMalloc(&dqkv[k], n3 * 2));
        CK(cudaMemset(dqkv[k], 0, n3 * 2));
        colsum[k] = dev_copy(sums, (size_t)C * 6);
    }
    attention_forward_cuda(out, lse, d_qkv, B, T, C, NH, opt, s);
    cast_pair p;
    cast_pair_alloc(&p, n3, 1);
    float *scale = dev_float(256.0f);
    CK(cudaMemset(p.o[2], 0x5A, n3));
    CK(cudaMemset(p.o[3], 0x5A, n3));
    attention_backward_cuda(dqkv[0], d_dout, d_qkv, out, lse, B, T, C, NH, colsum[0], ws, opt, s);
    fp8_cast_cuda(p.o[0], p.o[1], p.stats[0], dqkv[0], N, 3 * C, scale, FP8_E5M2, s);
    attention_backward_fp8_cuda(dqkv[1], d_dout, d_qkv, out, lse, B, T, C, NH, colsum[1], ws, opt,
                                p.o[2], p.o[3], p.stats[1], scale, FP8_E5M2, s);
    CK(cudaStreamSynchronize(s));
    const int exact = opt->deterministic, q_written = T % 64 != 0;
    const int kv_written =
        q_written || HS != 64 || !strstr(attention_cuda_kernels(HS, opt), "wgmma");
    uint8_t *h[4];
    for (int k = 0; k < 4; k++) {
        h[k] = xmalloc(n3);
        CK(cudaMemcpy(h[k], p.o[k], n3, cudaMemcpyDeviceToHost));
    }
    /* bytes: dQ's (columns < C; rows < C of the transposed copy) within a
     * step unless exact, the others the same */
    size_t bad = 0, bad_t = 0, steps = 0;
    for (size_t i = 0; i < n3; i++) {
        const int q = (int)(i % (3 * C)) < C, q_t = (int)(i / N) < C;
        bad += h[0][i] != h[2][i] && (exact || !q || !fp8_near(h[0][i], h[2][i]));
        bad_t += h[1][i] != h[3][i] && (exact || !q_t || !fp8_near(h[1][i], h[3][i]));
        steps += h[0][i] != h[2][i];
    }
    fp8_cast_stats a[2];
    for (int k = 0; k < 2; k++) a[k] = host_stats(p.stats[k]);
    const int stats_ok =
        exact ? same_stats(a[0], a[1]) : fabsf(a[0].amax - a[1].amax) <= ldexpf(a[0].amax, -7);
    uint16_t *hd = xmalloc(n3 * 4), *hs = xmalloc((size_t)C * 12);
    for (int k = 0; k < 2; k++) {
        CK(cudaMemcpy(hd + k * n3, dqkv[k], n3 * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hs + k * 3 * (size_t)C, colsum[k], (size_t)C * 6, cudaMemcpyDeviceToHost));
    }
    size_t bad_dqkv = 0;
    for (size_t i = 0; i < n3; i++)
        bad_dqkv += ((int)(i % (3 * C)) >= C ? kv_written : q_written) && hd[i] != hd[n3 + i];
    int sums_ok = 1;
    double sq = 0.0;
    for (int j = 0; j < 3 * C; j++) sq += (double)bf16_value(hs[j]) * bf16_value(hs[j]);
    const double rms = sqrt(sq / (3 * C));
    for (int j = 0; j < 3 * C; j++) {
        const double a0 = bf16_value(hs[j]), b0 = bf16_value(hs[3 * C + j]);
        if (exact ? hs[j] != hs[3 * C + j] : fabs(b0 - a0) > ldexp(fabs(a0), -7) + 1e-3 * rms)
            sums_ok = 0;
    }
    char what[300];
    snprintf(
        what, sizeof what,
        "attention backward + cast B=%d T=%d NH=%d HS=%d (%s%s): bytes %zu off, transposed %zu "
        "off (%zu within a step), amax %g/%g, counts %llu/%llu, bf16 %s%s %zu differ, bias "
        "gradient %s",
        B, T, NH, HS, attention_cuda_kernels(HS, opt), exact ? ", deterministic" : "", bad, bad_t,
        steps, a[0].amax, a[1].amax, a[0].nonzero, a[1].nonzero, q_written ? "dq " : "",
        kv_written ? "dk dv" : "(dk dv cast by the main kernel)", bad_dqkv,
        sums_ok ? "within" : "BEYOND");
    check(!bad && !bad_t && stats_ok && !bad_dqkv && sums_ok && a[0].amax > 0.0f, what);
    for (int k = 0; k < 4; k++) free(h[k]);
    cast_pair_free(&p);
    free(qkv), free(dout), free(sums), free(hd), free(hs);
    void *dev[] = {d_qkv, d_dout, out, lse, ws, dqkv[0], dqkv[1], colsum[0], colsum[1], scale};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) CK(cudaFree(dev[i]));
}

/* The fused GELU backward + cast (fp8_gelu_backward_cast_cuda) against the
 * separate passes it replaces (gelu_backward_cuda, then fp8_cast_cuda, and
 * the column sums in 64-row chunks, summed here in row order as
 * matmul.cu's kernel does): the same bytes, transposed bytes, amax and
 * bias gradient, bit for bit. */
static void check_gelu_backward_cast(int rows, int cols, cudaStream_t s) {
    const size_t n = (size_t)rows * cols;
    const int chunks = (rows + 63) / 64;
    uint16_t *d = xmalloc(n * 2), *pre = xmalloc(n * 2), *colsum = xmalloc((size_t)cols * 2);
    for (size_t i = 0; i < n; i++) {
        d[i] = bf16_bits((float)(1e-4 * rng_normal(&rng)));
        pre[i] = bf16_bits((float)(2.0 * rng_normal(&rng)));
    }
    for (int j = 0; j < cols; j++) colsum[j] = bf16_bits((float)rng_normal(&rng));
    void *d_d = dev_copy(d, n * 2), *d_d2 = dev_copy(d, n * 2), *d_pre = dev_copy(pre, n * 2);
    void *d_cs1 = dev_copy(colsum, (size_t)cols * 2), *d_cs2 = dev_copy(colsum, (size_t)cols * 2);
    cast_pair p;
    cast_pair_alloc(&p, n, 1);
    float *scale = dev_float(3.0e3f);
    float *partials;
    CK(cudaMalloc((void **)&partials, sizeof(float) * chunks * cols));
    /* the separate passes */
    gelu_backward_cuda(d_d2, d_pre, n, s);
    fp8_cast_cuda(p.o[0], p.o[1], p.stats[0], d_d2, rows, cols, scale, FP8_E5M2, s);
    CK(cudaStreamSynchronize(s));
    uint16_t *g = xmalloc(n * 2);
    CK(cudaMemcpy(g, d_d2, n * 2, cudaMemcpyDeviceToHost));
    float *part = xcalloc((size_t)chunks * cols, sizeof(float));
    for (int c = 0; c < chunks; c++)
        for (int j = 0; j < cols; j++) {
            float acc = 0.0f;
            for (int r = c * 64; r < rows && r < c * 64 + 64; r++)
                acc += bf16_value(g[(size_t)r * cols + j]);
            part[(size_t)c * cols + j] = acc;
        }
    CK(cudaMemcpy(partials, part, sizeof(float) * chunks * cols, cudaMemcpyHostToDevice));
    bias_partials_add_cuda(d_cs1, partials, chunks, cols, s);
    CK(cudaStreamSynchronize(s));
    /* fused */
    fp8_gelu_backward_cast_cuda(p.o[2], p.o[3], p.stats[1], d_cs2, partials, d_d, d_pre, rows, cols,
                                scale, FP8_E5M2, s);
    CK(cudaStreamSynchronize(s));
    int same, same_t;
    fp8_cast_stats a[2];
    cast_pair_compare(&p, &same, &same_t, a);
    uint16_t *cs1 = xmalloc((size_t)cols * 2), *cs2 = xmalloc((size_t)cols * 2);
    CK(cudaMemcpy(cs1, d_cs1, (size_t)cols * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(cs2, d_cs2, (size_t)cols * 2, cudaMemcpyDeviceToHost));
    const int same_sums = !memcmp(cs1, cs2, (size_t)cols * 2);
    char what[200];
    snprintf(what, sizeof what,
             "fused GELU backward + cast %dx%d: bytes %s, transposed %s, amax %g/%g, flushed "
             "%llu/%llu of %llu/%llu, column sums %s",
             rows, cols, same ? "same" : "DIFFER", same_t ? "same" : "DIFFER", a[0].amax, a[1].amax,
             a[0].flushed, a[1].flushed, a[0].nonzero, a[1].nonzero, same_sums ? "same" : "DIFFER");
    check(same && same_t && same_stats(a[0], a[1]) && a[0].amax > 0.0f && same_sums &&
              memcmp(colsum, cs1, (size_t)cols * 2),
          what);
    free(d), free(pre), free(colsum), free(g), free(part), free(cs1), free(cs2);
    void *dev[] = {d_d, d_d2, d_pre, d_cs1, d_cs2, scale, partials};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) CK(cudaFree(dev[i]));
}

/* -------------------------------------------------------------- scaling */

/* fp8_scaling_update_cuda against fp8_scale_update over 14 steps for six
 * tensors of both formats, amaxes including 0, NaN, infinity and one too
 * small for a finite scale: scale, dequant and history bit for bit, the
 * stats reset; with stride >= 2 also the clipping counts and overshoots
 * against fp8_clipped (the random amaxes clip in some steps and not in
 * others) and the underflow totals (counts beyond 32 bits). */
/* The classifier with FP8 dlogits (classifier_forward_backward_fp8_cuda)
 * against the plain classifier followed by fp8_cast_cuda (E5M2) of the
 * dlogits it wrote: every byte (padding columns too), the losses bit for
 * bit, and the logits left as they were. N rows of a vocabulary V padded
 * to Vp (a row of Vp over 57K takes the global-memory path); the logits
 * spread (N(0, 9)) so that some probabilities fall into E5M2's subnormals
 * at the scale and many flush, and every eighth row confident, its
 * largest value near the format's top. */
static void check_classifier_fp8(int N, int V, int Vp, cudaStream_t s) {
    const size_t n = (size_t)N * Vp;
    uint16_t *logits = xmalloc(n * 2);
    int32_t *targets = xmalloc((size_t)N * sizeof(int32_t));
    for (size_t i = 0; i < n; i++) logits[i] = bf16_bits((float)(3.0 * rng_normal(&rng)));
    for (int r = 0; r < N; r++) {
        targets[r] = (int32_t)(rng_next(&rng) % (uint64_t)V);
        if (r % 8 == 0) logits[(size_t)r * Vp + (r % V)] = bf16_bits(30.0f); /* p near 1 */
    }
    const float dloss = 1.0f / (float)(N * 3);
    int e;
    frexpf(dloss, &e);
    float *scale = dev_float(ldexpf(1.0f, 15 - e)); /* fp8_layers' lm head choice */
    void *d_logits[2] = {dev_copy(logits, n * 2), dev_copy(logits, n * 2)};
    int32_t *d_targets = dev_copy(targets, (size_t)N * sizeof(int32_t));
    float *losses[2];
    uint8_t *out[2];
    for (int k = 0; k < 2; k++) {
        CK(cudaMalloc((void **)&losses[k], (size_t)N * 4));
        CK(cudaMalloc((void **)&out[k], n));
        CK(cudaMemset(out[k], 0x5A, n));
    }
    classifier_forward_backward_cuda(d_logits[0], losses[0], d_targets, N, V, Vp, dloss, s);
    fp8_cast_cuda(out[0], NULL, NULL, d_logits[0], N, Vp, scale, FP8_E5M2, s);
    classifier_forward_backward_fp8_cuda(d_logits[1], losses[1], d_targets, N, V, Vp, dloss, out[1],
                                         scale, s);
    CK(cudaStreamSynchronize(s));
    uint8_t *h[2];
    float *hl = xmalloc((size_t)N * 8);
    uint16_t *after = xmalloc(n * 2);
    for (int k = 0; k < 2; k++) {
        h[k] = xmalloc(n);
        CK(cudaMemcpy(h[k], out[k], n, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hl + (size_t)k * N, losses[k], (size_t)N * 4, cudaMemcpyDeviceToHost));
    }
    CK(cudaMemcpy(after, d_logits[1], n * 2, cudaMemcpyDeviceToHost));
    size_t bad = 0, zero = 0, subnormal = 0;
    for (size_t i = 0; i < n; i++) {
        bad += h[0][i] != h[1][i];
        zero += (h[1][i] & 0x7F) == 0;
        subnormal += (h[1][i] & 0x7C) == 0 && (h[1][i] & 0x03) != 0; /* E5M2: exponent 0 */
    }
    const int losses_same = memcmp(hl, hl + N, (size_t)N * 4) == 0;
    const int untouched = memcmp(after, logits, n * 2) == 0;
    char what[200];
    snprintf(what, sizeof what,
             "classifier with FP8 dlogits N=%d V=%d Vp=%d: %zu bytes of %zu differ (%zu zero, %zu "
             "subnormal), losses %s, logits %s",
             N, V, Vp, bad, n, zero, subnormal, losses_same ? "equal" : "DIFFER",
             untouched ? "untouched" : "WRITTEN");
    check(!bad && losses_same && untouched && subnormal > 0, what);
    for (int k = 0; k < 2; k++) {
        free(h[k]);
        CK(cudaFree(d_logits[k]));
        CK(cudaFree(losses[k]));
        CK(cudaFree(out[k]));
    }
    free(logits), free(targets), free(hl), free(after);
    CK(cudaFree(d_targets));
    CK(cudaFree(scale));
}

/* fp8_transpose_cuda of fp8_cast_cuda's out against the cast's own out_t,
 * every byte: a rows x cols tensor (multiples of 16; partial 64 x 128
 * tiles where they are not multiples of those). */
static void check_transpose(int rows, int cols, cudaStream_t s) {
    const size_t n = (size_t)rows * cols;
    uint16_t *x = xmalloc(n * 2);
    for (size_t i = 0; i < n; i++) x[i] = bf16_bits((float)rng_normal(&rng));
    void *d_x = dev_copy(x, n * 2);
    float *scale = dev_float(64.0f);
    uint8_t *out, *out_t, *t;
    CK(cudaMalloc((void **)&out, n));
    CK(cudaMalloc((void **)&out_t, n));
    CK(cudaMalloc((void **)&t, n));
    CK(cudaMemset(t, 0x5A, n));
    fp8_cast_cuda(out, out_t, NULL, d_x, rows, cols, scale, FP8_E4M3, s);
    fp8_transpose_cuda(t, out, rows, cols, s);
    CK(cudaStreamSynchronize(s));
    uint8_t *a = xmalloc(n), *b = xmalloc(n);
    CK(cudaMemcpy(a, out_t, n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b, t, n, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += a[i] != b[i];
    char what[120];
    snprintf(what, sizeof what,
             "fp8_transpose %d x %d against the cast's transposed copy: %zu of %zu bytes differ",
             rows, cols, bad, n);
    check(!bad, what);
    free(x), free(a), free(b);
    void *dev[] = {d_x, scale, out, out_t, t};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) CK(cudaFree(dev[i]));
}

static void check_scaling(int len, int margin, int stride, cudaStream_t s) {
    enum { NT = 6, STEPS = 14, MAXS = 4 };
    const uint8_t format[NT] = {FP8_E4M3, FP8_E5M2, FP8_E4M3, FP8_E5M2, FP8_E4M3, FP8_E4M3};
    float scale[NT], dequant[NT], hist[NT * 8] = {0}, strided[NT * MAXS];
    for (int i = 0; i < NT; i++) scale[i] = 1.0f, dequant[i] = 1.0f;
    for (int i = 0; i < NT * MAXS; i++) strided[i] = 1.0f;
    const size_t bytes = sizeof(float) * NT * stride;
    fp8_scaling g = {.n = NT, .len = len, .margin = margin, .stride = stride};
    g.scale = dev_copy(strided, bytes);
    g.dequant = dev_copy(strided, bytes);
    fp8_cast_stats stats[NT];
    memset(stats, 0, sizeof stats);
    g.stats = dev_copy(stats, sizeof stats);
    unsigned long long totals[2 * NT] = {0};
    g.history = dev_copy(hist, sizeof(float) * NT * len);
    g.format = dev_copy(format, sizeof format);
    float clips[NT] = {0}, overshoot[NT] = {0};
    int clip_events = 0, clean_events = 0;
    if (stride >= 2) {
        for (int i = 0; i < NT * MAXS; i++) strided[i] = 0.0f;
        g.clipped = dev_copy(strided, bytes);
        g.underflow = dev_copy(totals, sizeof totals);
    }
    int bad = 0;
    char detail[200] = "";
    for (int step = 0; step < STEPS; step++) {
        float amax[NT];
        for (int i = 0; i < NT; i++)
            amax[i] =
                (float)(fabs(rng_normal(&rng)) * ldexp(1.0, (int)(rng_uniform(&rng) * 20) - 10));
        amax[1] = step % 5 == 0 ? 0.0f : amax[1];
        amax[2] = step == 3 ? NAN : amax[2];
        amax[3] = step == 6 ? INFINITY : amax[3];
        amax[4] = step == 9 ? 1e-40f : amax[4];
        amax[5] = 0.0f; /* never seen anything: the scale stays 1 */
        for (int i = 0; i < NT; i++) {
            const unsigned long long nonzero = (3ull << 32) + (unsigned long long)step * 1000 + i;
            stats[i] = (fp8_cast_stats){amax[i], 0, nonzero, nonzero / (unsigned)(i + 2)};
            totals[2 * i] += stats[i].nonzero;
            totals[2 * i + 1] += stats[i].flushed;
        }
        CK(cudaMemcpy(g.stats, stats, sizeof stats, cudaMemcpyHostToDevice));
        fp8_scaling_update_cuda(&g, step, s);
        CK(cudaStreamSynchronize(s));
        float got_scale[NT * MAXS], got_dequant[NT * MAXS], got_hist[NT * 8],
            got_clipped[NT * MAXS] = {0};
        fp8_cast_stats got_stats[NT];
        unsigned long long got_totals[2 * NT] = {0};
        if (g.underflow)
            CK(cudaMemcpy(got_totals, g.underflow, sizeof got_totals, cudaMemcpyDeviceToHost));
        if (g.clipped) CK(cudaMemcpy(got_clipped, g.clipped, bytes, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(got_scale, g.scale, bytes, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(got_dequant, g.dequant, bytes, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(got_stats, g.stats, sizeof got_stats, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(got_hist, g.history, sizeof(float) * NT * len, cudaMemcpyDeviceToHost));
        for (int i = 0; i < NT; i++) {
            float over = 0.0f;
            if (fp8_clipped(amax[i], scale[i], (fp8_format)format[i], &over)) {
                clips[i] += 1.0f;
                overshoot[i] = fmaxf(overshoot[i], over);
                clip_events++;
            } else {
                clean_events++;
            }
            const float before = scale[i];
            scale[i] = fp8_scale_update(hist + i * len, len, step, amax[i], scale[i],
                                        (fp8_format)format[i], margin);
            if (scale[i] != before) dequant[i] = 1.0f / scale[i];
            const int k = i * stride;
            const int ok = memcmp(&got_scale[k], &scale[i], 4) == 0 &&
                           memcmp(&got_dequant[k], &dequant[i], 4) == 0 &&
                           got_stats[i].amax == 0.0f && got_stats[i].nonzero == 0 &&
                           got_stats[i].flushed == 0 &&
                           (!g.underflow || (got_totals[2 * i] == totals[2 * i] &&
                                             got_totals[2 * i + 1] == totals[2 * i + 1])) &&
                           memcmp(got_hist + i * len, hist + i * len, sizeof(float) * len) == 0 &&
                           (!g.clipped || (memcmp(&got_clipped[k], &clips[i], 4) == 0 &&
                                           memcmp(&got_clipped[k + 1], &overshoot[i], 4) == 0));
            if (!ok && bad++ == 0)
                snprintf(detail, sizeof detail,
                         "step %d tensor %d: scale %a (model %a), dequant %a (%a), amax %g, "
                         "clipped %g x%g (%g x%g), flushed total %llu (%llu)",
                         step, i, got_scale[k], scale[i], got_dequant[k], dequant[i],
                         got_stats[i].amax, got_clipped[k], got_clipped[k + 1], clips[i],
                         overshoot[i], got_totals[2 * i + 1], totals[2 * i + 1]);
        }
    }
    char what[300];
    snprintf(what, sizeof what,
             "scaling update, history %d, margin %d, stride %d, %d steps x %d tensors%s%s", len,
             margin, stride, STEPS, NT, bad ? ": " : "", detail);
    check(bad == 0, what);
    if (g.clipped) {
        snprintf(what, sizeof what, "scaling update, history %d: %d clipping and %d clean updates",
                 len, clip_events, clean_events);
        check(clip_events > 0 && clean_events > 0, what);
        CK(cudaFree(g.clipped));
        CK(cudaFree(g.underflow));
    }
    CK(cudaFree(g.scale));
    CK(cudaFree(g.dequant));
    CK(cudaFree(g.stats));
    CK(cudaFree(g.history));
    CK(cudaFree((void *)g.format));
}

/* ------------------------------------------------------------------ GEMMs */

/* An FP8 operand: rows x cols values N(0, std) rounded to bf16 (bf), cast
 * with the recipe's scale (the largest finite value over the amax): its
 * bytes and their transpose, the decoded values dequantised, and the
 * dequantising factor on the device. */
typedef struct {
    int rows, cols;
    uint16_t *bf;
    uint8_t *bytes, *bytes_t;
    double *value;
    float dequant;
    void *d_bytes, *d_bytes_t;
    float *d_dequant;
} operand;

static operand make_operand(int rows, int cols, double std, fp8_format f) {
    operand o;
    memset(&o, 0, sizeof o);
    o.rows = rows, o.cols = cols;
    const size_t n = (size_t)rows * cols;
    o.bf = xmalloc(n * 2);
    float amax = 0.0f;
    for (size_t i = 0; i < n; i++) {
        o.bf[i] = bf16_bits((float)(std * rng_normal(&rng)));
        if (fabsf(bf16_value(o.bf[i])) > amax) amax = fabsf(bf16_value(o.bf[i]));
    }
    const float scale = fp8_max_finite(f) / amax;
    o.dequant = 1.0f / scale;
    o.bytes = xmalloc(n);
    o.bytes_t = xmalloc(n);
    o.value = xmalloc(n * sizeof(double));
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            const size_t i = (size_t)r * cols + c;
            o.bytes[i] = fp8_encode(bf16_value(o.bf[i]) * scale, f);
            o.bytes_t[(size_t)c * rows + r] = o.bytes[i];
            o.value[i] = (double)fp8_decode(o.bytes[i], f) * o.dequant;
        }
    o.d_bytes = dev_copy(o.bytes, n);
    o.d_bytes_t = dev_copy(o.bytes_t, n);
    o.d_dequant = dev_float(o.dequant);
    return o;
}

static void free_operand(operand *o) {
    free(o->bf);
    free(o->bytes);
    free(o->bytes_t);
    free(o->value);
    CK(cudaFree(o->d_bytes));
    CK(cudaFree(o->d_bytes_t));
    CK(cudaFree(o->d_dequant));
}

static uint16_t *bf16_random(size_t n, double std) {
    uint16_t *x = xmalloc(n * 2);
    for (size_t i = 0; i < n; i++) x[i] = bf16_bits((float)(std * rng_normal(&rng)));
    return x;
}

/* The GPU's bf16 result (n values at d) against ref: |gpu - ref| <= a
 * rms(ref) + 2^-7 mag (mag: the magnitudes that were summed); every
 * value written (finite). */
static void compare(const char *what, const void *d, const double *ref, const double *mag, size_t n,
                    double a) {
    uint16_t *got = xmalloc(n * 2);
    CK(cudaMemcpy(got, d, n * 2, cudaMemcpyDeviceToHost));
    double sq = 0.0;
    for (size_t i = 0; i < n; i++) sq += ref[i] * ref[i];
    const double atol = a * sqrt(sq / (double)n);
    size_t bad = 0, unwritten = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double g = (double)bf16_value(got[i]);
        if (!isfinite(g)) {
            unwritten++;
            continue;
        }
        const double err = fabs(g - ref[i]), tol = atol + mag[i] / 128.0;
        if (err > tol) bad++;
        if (err / tol > worst) worst = err / tol;
    }
    char line[300];
    snprintf(line, sizeof line, "%s: n=%zu worst=%.3f bad=%zu unwritten=%zu", what, n, worst, bad,
             unwritten);
    check(bad == 0 && unwritten == 0, line);
    free(got);
}

static double gelu_tanh(double x) {
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
static double gelu_tanh_grad(double x) {
    const double u = 0.7978845608028654 * (x + 0.044715 * x * x * x), t = tanh(u);
    return 0.5 * (1.0 + t) +
           0.5 * x * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * x * x);
}

/* One linear layer (inp (M,C), weight (OC,C), dout (M,OC)) through
 * matmul_forward_cuda / matmul_gelu_forward_cuda and matmul_backward_cuda
 * with FP8 operands, against float64 over the dequantised operands.
 * gelu_fwd: the forward with the GELU epilogue (out and pre checked);
 * gelu_bwd: the backward through a GELU whose input pre (M,C) is given
 * (dinp times gelu'(pre), and dpre_colsum); dbias: the bias gradient from
 * the bf16 dout; fast: the products that accumulate fast, whose tolerance
 * adds 2^-9 of the summed magnitudes of their terms (FAST_SLACK: the FP8
 * tensor cores' own accumulator keeps fewer bits than FP32, and its error
 * grows with the terms, not with the result). The others add 2^-13 of
 * them (PROMOTED_SLACK): without fast accumulation cuBLASLt still sums
 * each interval of the inner dimension in that accumulator before adding
 * it into FP32. */
#define FAST_SLACK 0.25 /* x 2^-7 (compare's relative term) = 2^-9 */
#define PROMOTED_SLACK (FAST_SLACK / 16)
static void check_linear(int M, int C, int OC, int gelu_fwd, int gelu_bwd, int with_dbias,
                         fp8_fast_accum fast, const cublaslt_ctx *lt, cudaStream_t s) {
    const double fwd_slack = fast != FP8_FAST_ACCUM_NONE ? FAST_SLACK : PROMOTED_SLACK;
    const double bwd_slack = fast == FP8_FAST_ACCUM_ALL ? FAST_SLACK : PROMOTED_SLACK;
    char what[200];
    operand x = make_operand(M, C, 1.0, FP8_E4M3), w = make_operand(OC, C, 0.02, FP8_E4M3),
            g = make_operand(M, OC, 1e-4, FP8_E5M2);
    fp8_linear_operands q = {x.d_bytes,   x.d_bytes_t, w.d_bytes,   w.d_bytes_t, g.d_bytes,
                             g.d_bytes_t, x.d_dequant, w.d_dequant, g.d_dequant, fast};
    uint16_t *bias = bf16_random((size_t)OC, 0.1), *old_dw = bf16_random((size_t)OC * C, 0.5);
    uint16_t *old_db = bf16_random((size_t)OC, 0.5), *pre = bf16_random((size_t)M * C, 1.0);
    uint16_t *old_dpre = bf16_random((size_t)C, 0.5);
    const size_t n_out = (size_t)M * OC, n_in = (size_t)M * C, n_w = (size_t)OC * C;
    size_t n_max = n_w > n_out ? n_w : n_out;
    if (n_in > n_max) n_max = n_in;
    double *ref = xmalloc(sizeof(double) * n_max), *mag = xmalloc(sizeof(double) * n_max);
    double *ref2 = xmalloc(sizeof(double) * n_out), *mag2 = xmalloc(sizeof(double) * n_out);

    /* forward */
    void *d_out, *d_pre, *d_bias = dev_copy(bias, (size_t)OC * 2);
    CK(cudaMalloc(&d_out, n_out * 2));
    CK(cudaMalloc(&d_pre, n_out * 2));
    CK(cudaMemset(d_out, 0xFF, n_out * 2)); /* NaN: unwritten */
    CK(cudaMemset(d_pre, 0xFF, n_out * 2));
    if (gelu_fwd)
        matmul_gelu_forward_cuda(d_out, d_pre, NULL, NULL, d_bias, M, C, OC, &q, lt, s);
    else
        matmul_forward_cuda(d_out, NULL, NULL, d_bias, M, C, OC, &q, lt, s);
    CK(cudaStreamSynchronize(s));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < OC; j++) {
            double acc = 0.0, m = 0.0;
            for (int k = 0; k < C; k++) {
                const double p = x.value[(size_t)i * C + k] * w.value[(size_t)j * C + k];
                acc += p, m += fabs(p);
            }
            const double b = bf16_value(bias[j]);
            ref[(size_t)i * OC + j] = acc + b;
            mag[(size_t)i * OC + j] = fabs(acc + b) + fwd_slack * m;
            ref2[(size_t)i * OC + j] = gelu_tanh(acc + b);
            mag2[(size_t)i * OC + j] = fabs(ref2[(size_t)i * OC + j]);
        }
    snprintf(what, sizeof what, "fp8 fast_accum=%s %s M=%d C=%d OC=%d +bias",
             fp8_fast_accum_names[fast], gelu_fwd ? "gelu forward (pre)" : "forward", M, C, OC);
    compare(what, gelu_fwd ? d_pre : d_out, ref, mag, n_out, 1e-3);
    if (gelu_fwd) { /* cuBLASLt's own tanh: the looser a of test_ops_cuda */
        snprintf(what, sizeof what, "fp8 fast_accum=%s gelu forward (out) M=%d C=%d OC=%d",
                 fp8_fast_accum_names[fast], M, C, OC);
        compare(what, d_out, ref2, mag2, n_out, 1e-2);
    } else { /* the same product added to a residual in its epilogue (attn.c_proj, mlp.c_proj) */
        uint16_t *res = bf16_random(n_out, 1.0);
        void *d_res = dev_copy(res, n_out * 2);
        CK(cudaMemset(d_out, 0xFF, n_out * 2));
        matmul_residual_forward_cuda(d_out, d_res, NULL, NULL, d_bias, M, C, OC, &q, lt, s);
        CK(cudaStreamSynchronize(s));
        for (size_t i = 0; i < n_out; i++) {
            const double r = bf16_value(res[i]);
            mag[i] += fabs(ref[i] + r) - fabs(ref[i]); /* one rounding, of the sum */
            ref[i] += r;
        }
        snprintf(what, sizeof what, "fp8 fast_accum=%s forward + residual M=%d C=%d OC=%d +bias",
                 fp8_fast_accum_names[fast], M, C, OC);
        compare(what, d_out, ref, mag, n_out, 1e-3);
        CK(cudaFree(d_res));
        free(res);
    }

    /* backward */
    void *d_dinp, *d_dw = dev_copy(old_dw, n_w * 2), *d_db = dev_copy(old_db, (size_t)OC * 2);
    void *d_dout = dev_copy(g.bf, n_out * 2), *d_prein = dev_copy(pre, n_in * 2);
    void *d_dpre = dev_copy(old_dpre, (size_t)C * 2);
    CK(cudaMalloc(&d_dinp, n_in * 2));
    CK(cudaMemset(d_dinp, 0xFF, n_in * 2));
    const size_t ws_bytes = matmul_backward_cuda_workspace_bytes(M, C, OC, with_dbias ? d_db : NULL,
                                                                 gelu_bwd ? d_dpre : NULL);
    void *ws = NULL;
    CK(cudaMalloc(&ws, ws_bytes ? ws_bytes : 1));
    matmul_backward_cuda(d_dinp, d_dw, with_dbias ? d_db : NULL, d_dout, NULL, NULL,
                         gelu_bwd ? d_prein : NULL, M, C, OC, gelu_bwd ? d_dpre : NULL, ws,
                         ws_bytes, &q, lt, s);
    CK(cudaStreamSynchronize(s));
    /* dinp = (dout W) [* gelu'(pre)] */
    double *colsum = xmalloc(sizeof(double) * C), *colmag = xmalloc(sizeof(double) * C);
    for (int k = 0; k < C; k++) colsum[k] = bf16_value(old_dpre[k]), colmag[k] = fabs(colsum[k]);
    for (int i = 0; i < M; i++)
        for (int k = 0; k < C; k++) {
            double acc = 0.0, m = 0.0;
            for (int j = 0; j < OC; j++) {
                const double p = g.value[(size_t)i * OC + j] * w.value[(size_t)j * C + k];
                acc += p, m += fabs(p);
            }
            const double d = gelu_bwd ? gelu_tanh_grad(bf16_value(pre[(size_t)i * C + k])) : 1.0;
            ref[(size_t)i * C + k] = acc * d;
            mag[(size_t)i * C + k] = (fabs(acc) + bwd_slack * m) * fabs(d);
            colsum[k] += acc * d, colmag[k] += fabs(acc * d);
        }
    snprintf(what, sizeof what, "fp8 fast_accum=%s input gradient%s M=%d C=%d OC=%d",
             fp8_fast_accum_names[fast], gelu_bwd ? " (gelu)" : "", M, C, OC);
    compare(what, d_dinp, ref, mag, n_in, gelu_bwd ? 1e-2 : 1e-3);
    if (gelu_bwd) {
        snprintf(what, sizeof what, "fp8 dpre_colsum += M=%d C=%d", M, C);
        compare(what, d_dpre, colsum, colmag, (size_t)C, 1e-2);
    }
    /* dW += dout^T inp */
    for (int j = 0; j < OC; j++)
        for (int k = 0; k < C; k++) {
            double acc = 0.0, m = 0.0;
            for (int i = 0; i < M; i++) {
                const double p = g.value[(size_t)i * OC + j] * x.value[(size_t)i * C + k];
                acc += p, m += fabs(p);
            }
            const double o = bf16_value(old_dw[(size_t)j * C + k]);
            ref[(size_t)j * C + k] = o + acc;
            mag[(size_t)j * C + k] = fabs(o) + fabs(acc) + bwd_slack * m;
        }
    snprintf(what, sizeof what, "fp8 fast_accum=%s weight gradient += M=%d C=%d OC=%d",
             fp8_fast_accum_names[fast], M, C, OC);
    compare(what, d_dw, ref, mag, n_w, 1e-3);
    if (with_dbias) { /* dbias += column sums of the bf16 dout */
        for (int j = 0; j < OC; j++) {
            double acc = bf16_value(old_db[j]), m = fabs(acc);
            for (int i = 0; i < M; i++) {
                acc += bf16_value(g.bf[(size_t)i * OC + j]);
                m += fabs(bf16_value(g.bf[(size_t)i * OC + j]));
            }
            ref[j] = acc, mag[j] = m;
        }
        snprintf(what, sizeof what, "fp8 bias gradient += M=%d OC=%d", M, OC);
        compare(what, d_db, ref, mag, (size_t)OC, 1e-3);
    }

    free_operand(&x);
    free_operand(&w);
    free_operand(&g);
    free(bias), free(old_dw), free(old_db), free(pre), free(old_dpre);
    free(ref), free(mag), free(ref2), free(mag2), free(colsum), free(colmag);
    void *dev[] = {d_out, d_pre, d_bias, d_dinp, d_dw, d_db, d_dout, d_prein, d_dpre, ws};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) CK(cudaFree(dev[i]));
}

int main(void) {
    if (cuda_device_count() <= 0) {
        printf("test_fp8_cuda: no GPU visible, skipped\n");
        return 77;
    }
    int major = 0, minor = 0;
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    CK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
    rng_seed(&rng, 20261125);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));

    /* casts: in range, into the subnormals, saturating; odd shapes; NaN */
    const fp8_format formats[2] = {FP8_E4M3, FP8_E5M2};
    for (int fi = 0; fi < 2; fi++) {
        const fp8_format f = formats[fi];
        check_cast(256, 768, 1.0f, f, 1, 0, s);
        check_cast(208, 200, 3.7f, f, 1, 0, s);
        check_cast(64, 64, 1.0f / 4096.0f, f, 1, 0, s);
        check_cast(64, 64, 300.0f, f, 1, 0, s);
        check_cast(37, 40, 1.5f, f, 0, 0, s);
        check_cast(48, 72, 1.0f, f, 1, 1, s);
        check_cast(80, 136, 2.0f, f, 1, 0, s);
    }

    { /* a 124M block's weights (OC x C), a partial-tile set, an empty tensor */
        const int r1[4] = {2304, 768, 3072, 768}, c1[4] = {768, 768, 768, 3072};
        const int r2[3] = {208, 0, 48}, c2[3] = {200, 64, 72};
        check_cast_batch(4, r1, c1, 1, FP8_E4M3, s);
        check_cast_batch(3, r2, c2, 1, FP8_E5M2, s);
        check_cast_batch(3, r2, c2, 0, FP8_E4M3, s);
    }
    check_gelu_cast(256, 3072, 1, s);
    check_gelu_cast(208, 200, 1, s);
    check_gelu_cast(40, 72, 0, s);
    check_layernorm_fp8(256, 768, 1, 1, s);
    check_layernorm_fp8(48, 1600, 1, 1, s);
    check_layernorm_fp8(96, 2048, 0, 1, s);
    check_layernorm_fp8(37, 64, 0, 0, s);
    check_layernorm_fp8(40, 200, 1, 0, s);
    check_gelu_backward_cast(256, 3072, s);
    check_gelu_backward_cast(144, 200, s);
    /* several chunks a block (the tiles taken in turn) and a last chunk of
     * 16 rows; 1558M's width (7 warps a row); a row a warp; one partial
     * vector group (C = 200) */
    check_layernorm_backward_fp8(16400, 768, 1, s);
    check_layernorm_backward_fp8(4112, 1600, 1, s);
    check_layernorm_backward_fp8(2048, 64, 0, s);
    check_layernorm_backward_fp8(144, 200, 1, s);
    { /* the forward: 124M's heads at T = 1024 (fused on Hopper), without
       * the transposed copy, T = 320 (the last query tile's second
       * warpgroup past T), a length that is no multiple of 64, head size
       * 128 and the mma.sync kernels (the two passes) */
        const attention_cuda_options dflt = {true, false}, mma = {false, false};
        check_attention_forward_fp8(4, 1024, 12, 64, 1, &dflt, s);
        check_attention_forward_fp8(2, 256, 4, 64, 0, &dflt, s);
        check_attention_forward_fp8(3, 320, 4, 64, 1, &dflt, s);
        check_attention_forward_fp8(2, 80, 4, 64, 1, &dflt, s);
        check_attention_forward_fp8(2, 256, 2, 128, 1, &dflt, s);
        check_attention_forward_fp8(2, 256, 4, 64, 1, &mma, s);
    }
    { /* 124M's heads at T = 1024, head size 128, a length that is no
       * multiple of 64; the default mode; the mma.sync kernels on Hopper */
        const attention_cuda_options det = {true, true}, dflt = {true, false}, mma = {false, false};
        if (attention_cuda_options_supported(&det)) {
            check_attention_backward_fp8(4, 1024, 12, 64, &det, s);
            check_attention_backward_fp8(2, 512, 8, 128, &det, s);
            check_attention_backward_fp8(3, 80, 4, 64, &det, s);
        }
        check_attention_backward_fp8(4, 1024, 12, 64, &dflt, s);
        /* half a key block of 128 past T; 1558M's width (25 heads: the
         * dQ-only cast's last tile of 128 columns half dQ, half dK) */
        check_attention_backward_fp8(2, 320, 4, 64, &dflt, s);
        check_attention_backward_fp8(2, 256, 25, 64, &dflt, s);
        check_attention_backward_fp8(2, 320, 4, 128, &dflt, s);
        check_attention_backward_fp8(2, 256, 4, 64, &mma, s);
    }
    /* the FP8 lm head's passes: GPT-2's vocabulary (its rows in shared
     * memory on Hopper) and a vocabulary whose rows are not */
    check_classifier_fp8(64, 50257, 50304, s);
    check_classifier_fp8(16, 70000, 70016, s);
    check_transpose(64, 128, s);
    check_transpose(80, 208, s);
    check_transpose(1024, 50304, s);
    check_scaling(4, 1, 1, s);
    check_scaling(1, 0, 1, s);
    check_scaling(8, 2, 4, s);
    check_scaling(1, 0, 2, s);

    if (major * 10 + minor < 89) {
        printf("test_fp8_cuda: compute capability %d.%d has no FP8 tensor cores; GEMMs skipped\n",
               major, minor);
    } else {
        cublaslt_ctx lt;
        if (cublasLtCreate(&lt.handle) != CUBLAS_STATUS_SUCCESS) {
            printf("cublasLtCreate failed\n");
            return 1;
        }
        lt.workspace_bytes = 32u << 20;
        CK(cudaMalloc(&lt.workspace, lt.workspace_bytes));
        lt.autotune = true;
        /* 124M's four layers (C = 768) with 256 tokens, as the model runs
         * them: c_attn with its bias gradient, attn.c_proj, c_fc with the
         * GELU epilogue, mlp.c_proj backward through the GELU; then a shape
         * of partial tiles. Activations N(0,1), weights N(0,0.02),
         * gradients N(0,1e-4). Each with the default fast accumulation
         * (fp8_fast_accum = forward), then without any and with it for all
         * three products. */
        const int T = 256, C = 768;
        const fp8_fast_accum modes[] = {FP8_FAST_ACCUM_FORWARD, FP8_FAST_ACCUM_NONE,
                                        FP8_FAST_ACCUM_ALL};
        for (int m = 0; m < 3; m++) {
            const fp8_fast_accum f = modes[m];
            check_linear(T, C, 3 * C, 0, 0, 1, f, &lt, s);
            check_linear(T, C, C, 0, 0, 0, f, &lt, s);
            check_linear(T, C, 4 * C, 1, 0, 0, f, &lt, s);
            check_linear(T, 4 * C, C, 0, 1, 0, f, &lt, s);
            check_linear(144, 80, 48, 1, 1, 1, f, &lt, s);
        }
        CK(cudaFree(lt.workspace));
        cublasLtDestroy(lt.handle);
    }
    CK(cudaStreamDestroy(s));
    printf("test_fp8_cuda: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
