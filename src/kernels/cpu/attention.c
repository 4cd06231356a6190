/* CPU FP32 reference of causal multi-head self-attention, flash style: the
 * forward saves only the log-sum-exp of each scaled score row, the backward
 * recomputes the probabilities from it.
 *
 * Design: every (batch, head) pair is independent, so both passes run
 * parallel over the B*NH pairs; in the backward each pair owns its slices of
 * dq, dk and dv, so there are no races and every sum runs in a fixed order.
 * Per pair, K (and V in the backward) is first transposed into a (HS, T)
 * scratch so that a score row q_t . k_s for all s <= t is a sum of HS
 * contiguous axpys over s: it vectorises with no horizontal reductions.
 * Sums of rows (scores, p V, dscore K) take four rows per pass, in a fixed
 * order. The backward accumulates dk and dv in contiguous scratch rows and
 * stores them once at the end. Scratch is per thread, allocated once per
 * call. */
#include "kernels/attention.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"

/* The build targets baseline x86-64 (SSE2); GCC also compiles the per-head
 * work for AVX2+FMA and picks the clone at load time. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ATTN_TARGETS __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define ATTN_TARGETS
#endif

/* dst (HS, T) = the HS-wide head slice at src of each of T rows of stride ld. */
static void transpose_head(float *dst, const float *src, int T, int HS, size_t ld) {
    for (int s = 0; s < T; s++)
        for (int d = 0; d < HS; d++) dst[(size_t)d * T + s] = src[(size_t)s * ld + d];
}

/* y += a * x over n elements; restrict lets the compiler vectorise without
 * runtime overlap checks (the head slices never overlap). */
static inline void axpy(float *restrict y, float a, const float *restrict x, int n) {
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

/* y += sum_j a[j] x_j over rows x_j = x + j * stride, j < m: four rows per
 * pass, so y is loaded and stored a quarter as often (a running axpy chain
 * is bound by store-to-load latency). A fixed order, hence deterministic. */
static void axpy_rows(float *restrict y, const float *a, const float *restrict x, size_t stride,
                      int m, int n) {
    int j = 0;
    for (; j + 4 <= m; j += 4) {
        const float *x0 = x + (size_t)j * stride, *x1 = x0 + stride;
        const float *x2 = x1 + stride, *x3 = x2 + stride;
        const float a0 = a[j], a1 = a[j + 1], a2 = a[j + 2], a3 = a[j + 3];
        for (int i = 0; i < n; i++) y[i] += (a0 * x0[i] + a1 * x1[i]) + (a2 * x2[i] + a3 * x3[i]);
    }
    for (; j < m; j++) axpy(y, a[j], x + (size_t)j * stride, n);
}

/* row[s] = sum_d x[d] * mt[d][s] for s < n. */
static void row_times_transposed(float *row, const float *x, const float *mt, int n, int HS,
                                 int T) {
    for (int s = 0; s < n; s++) row[s] = 0.0f;
    axpy_rows(row, x, mt, (size_t)T, HS, n);
}

/* Per-thread scratch for one (batch, head) pair. */
typedef struct {
    float *kt, *vt;  /* (HS, T) transposed K and V */
    float *row, *dp; /* (T) a score / probability row and its gradient */
    float *dk, *dv;  /* (T, HS) contiguous dk and dv accumulators */
} head_scratch;

/* One head of the forward. base: q of row 0 of this head in qkv (row stride
 * ld; k at +C, v at +2C); out rows have stride C; lse has T entries. */
ATTN_TARGETS
static void head_forward(float *out, float *lse, const float *base, head_scratch *w, int T, int C,
                         int HS, size_t ld, float scale) {
    transpose_head(w->kt, base + C, T, HS, ld);
    float *att = w->row;
    for (int t = 0; t < T; t++) {
        const int n = t + 1; /* causal: keys s <= t */
        row_times_transposed(att, base + (size_t)t * ld, w->kt, n, HS, T);
        float mx = -INFINITY;
        /* simd: GCC keeps a float compare as a branch otherwise; a max is
         * exact in any order */
#pragma omp simd reduction(max : mx)
        for (int s = 0; s < n; s++) {
            att[s] *= scale;
            mx = att[s] > mx ? att[s] : mx;
        }
        float sum = 0.0f;
        for (int s = 0; s < n; s++) {
            att[s] = expf(att[s] - mx);
            sum += att[s];
        }
        const float inv_sum = 1.0f / sum;
        for (int s = 0; s < n; s++) att[s] *= inv_sum;
        float *o = out + (size_t)t * C;
        for (int d = 0; d < HS; d++) o[d] = 0.0f;
        axpy_rows(o, att, base + 2 * C, ld, n, HS);
        lse[t] = mx + logf(sum);
    }
}

/* One head of the backward: dbase is this head's dq in dqkv (dk at +C, dv
 * at +2C), all overwritten; dout and out rows have stride C. */
ATTN_TARGETS
static void head_backward(float *dbase, const float *dout, const float *base, const float *out,
                          const float *lse, head_scratch *w, int T, int C, int HS, size_t ld,
                          float scale) {
    transpose_head(w->kt, base + C, T, HS, ld);
    transpose_head(w->vt, base + 2 * C, T, HS, ld);
    memset(w->dk, 0, sizeof(float) * (size_t)T * HS);
    memset(w->dv, 0, sizeof(float) * (size_t)T * HS);
    float *p = w->row, *dp = w->dp;
    for (int t = 0; t < T; t++) {
        const int n = t + 1;
        const float *q = base + (size_t)t * ld;
        const float *dout_t = dout + (size_t)t * C, *out_t = out + (size_t)t * C;
        /* D_t = dout_t . out_t = sum_s p_s (dout_t . v_s) */
        float dsum = 0.0f;
        for (int d = 0; d < HS; d++) dsum += dout_t[d] * out_t[d];
        row_times_transposed(p, q, w->kt, n, HS, T);
        for (int s = 0; s < n; s++) p[s] = expf(p[s] * scale - lse[t]);
        row_times_transposed(dp, dout_t, w->vt, n, HS, T);
        /* dscore_s = p_s (dp_s - D_t), over dp; the 1/sqrt(HS) goes to dq and dk */
        float *ds = dp;
        for (int s = 0; s < n; s++) ds[s] = p[s] * (dp[s] - dsum) * scale;
        float *dq = dbase + (size_t)t * ld;
        for (int d = 0; d < HS; d++) dq[d] = 0.0f;
        axpy_rows(dq, ds, base + C, ld, n, HS);
        for (int s = 0; s < n; s++) {
            axpy(w->dk + (size_t)s * HS, ds[s], q, HS);
            axpy(w->dv + (size_t)s * HS, p[s], dout_t, HS);
        }
    }
    for (int s = 0; s < T; s++) {
        memcpy(dbase + (size_t)s * ld + C, w->dk + (size_t)s * HS, sizeof(float) * HS);
        memcpy(dbase + (size_t)s * ld + 2 * C, w->dv + (size_t)s * HS, sizeof(float) * HS);
    }
}

void attention_forward_cpu(float *out, float *lse, const float *qkv, int B, int T, int C, int NH) {
    const int HS = C / NH;
    const size_t ld = (size_t)3 * C;
    const float scale = 1.0f / sqrtf((float)HS);
#pragma omp parallel
    {
        head_scratch w = {.kt = xmalloc(sizeof(float) * (size_t)HS * T),
                          .row = xmalloc(sizeof(float) * (size_t)T)};
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * NH; bh++) {
            const int b = bh / NH, h = bh % NH;
            head_forward(out + (size_t)b * T * C + (size_t)h * HS, lse + (size_t)bh * T,
                         qkv + (size_t)b * T * ld + (size_t)h * HS, &w, T, C, HS, ld, scale);
        }
        free(w.row);
        free(w.kt);
    }
}

void attention_backward_cpu(float *dqkv, const float *dout, const float *qkv, const float *out,
                            const float *lse, int B, int T, int C, int NH) {
    const int HS = C / NH;
    const size_t ld = (size_t)3 * C;
    const float scale = 1.0f / sqrtf((float)HS);
#pragma omp parallel
    {
        const size_t th = (size_t)T * HS;
        head_scratch w = {xmalloc(sizeof(float) * th), xmalloc(sizeof(float) * th),
                          xmalloc(sizeof(float) * T),  xmalloc(sizeof(float) * T),
                          xmalloc(sizeof(float) * th), xmalloc(sizeof(float) * th)};
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * NH; bh++) {
            const int b = bh / NH, h = bh % NH;
            const size_t head = (size_t)b * T * ld + (size_t)h * HS;
            const size_t rows = (size_t)b * T * C + (size_t)h * HS;
            head_backward(dqkv + head, dout + rows, qkv + head, out + rows, lse + (size_t)bh * T,
                          &w, T, C, HS, ld, scale);
        }
        free(w.dv);
        free(w.dk);
        free(w.dp);
        free(w.row);
        free(w.vt);
        free(w.kt);
    }
}
