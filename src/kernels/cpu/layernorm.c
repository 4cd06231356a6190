/* CPU FP32 reference of LayerNorm (GPT-2: eps 1e-5, biased variance) and of
 * the fused residual-add + LayerNorm.
 *
 * Design: rows are independent, so the forward and the dinp part of the
 * backward run parallel over rows. dweight and dbias are sums over rows; to
 * keep them deterministic without atomics, a second pass gives each thread a
 * fixed slice of channels and sums all rows in order. Row reductions keep 8
 * partial sums (a fixed order the compiler turns into one vector register);
 * a single running float sum would not vectorise and drifts more over C. */
#include "kernels/layernorm.h"

#include <math.h>
#include <stddef.h>

#define LN_EPS 1e-5f
enum { LANES = 8, LN_CHUNK = 32 };

/* Fixed pairwise fold of the partial sums. */
static float fold_lanes(const float s[LANES]) {
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

static float row_sum(const float *x, int C) {
    float s[LANES] = {0};
    int c = 0;
    for (; c + LANES <= C; c += LANES)
        for (int l = 0; l < LANES; l++) s[l] += x[c + l];
    for (; c < C; c++) s[c % LANES] += x[c];
    return fold_lanes(s);
}

static float row_sq_dev(const float *x, float m, int C) {
    float s[LANES] = {0};
    int c = 0;
    for (; c + LANES <= C; c += LANES)
        for (int l = 0; l < LANES; l++) {
            const float d = x[c + l] - m;
            s[l] += d * d;
        }
    for (; c < C; c++) s[c % LANES] += (x[c] - m) * (x[c] - m);
    return fold_lanes(s);
}

/* Normalises one row. out may alias x: every element is read before written. */
static void layernorm_row(float *out, float *mean, float *rstd, const float *x, const float *weight,
                          const float *bias, int C) {
    const float m = row_sum(x, C) / (float)C;
    const float var = row_sq_dev(x, m, C) / (float)C; /* biased, as torch */
    const float s = 1.0f / sqrtf(var + LN_EPS);
    for (int c = 0; c < C; c++) out[c] = (x[c] - m) * s * weight[c] + bias[c];
    *mean = m;
    *rstd = s;
}

void layernorm_forward_cpu(float *out, float *mean, float *rstd, const float *inp,
                           const float *weight, const float *bias, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++)
        layernorm_row(out + (size_t)i * C, mean + i, rstd + i, inp + (size_t)i * C, weight, bias,
                      C);
}

/* residual may alias a or b (the in-place residual stream update): each
 * element is read before it is written. */
void residual_layernorm_forward_cpu(float *residual, float *out, float *mean, float *rstd,
                                    const float *a, const float *b, const float *weight,
                                    const float *bias, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        float *r = residual + (size_t)i * C;
        const float *ai = a + (size_t)i * C, *bi = b + (size_t)i * C;
        for (int c = 0; c < C; c++) r[c] = ai[c] + bi[c];
        layernorm_row(out + (size_t)i * C, mean + i, rstd + i, r, weight, bias, C);
    }
}

void layernorm_backward_cpu(float *dinp, float *dweight, float *dbias, const float *dout,
                            const float *inp, const float *weight, const float *mean,
                            const float *rstd, int N, int C) {
    /* dinp = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = weight * dout. */
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C, *d = dout + (size_t)i * C;
        float *dx = dinp + (size_t)i * C;
        const float m = mean[i], s = rstd[i];
        float sg[LANES] = {0}, sgx[LANES] = {0};
        int c = 0;
        for (; c + LANES <= C; c += LANES)
            for (int l = 0; l < LANES; l++) {
                const float g = weight[c + l] * d[c + l];
                sg[l] += g;
                sgx[l] += g * ((x[c + l] - m) * s);
            }
        for (; c < C; c++) {
            const float g = weight[c] * d[c];
            sg[c % LANES] += g;
            sgx[c % LANES] += g * ((x[c] - m) * s);
        }
        const float g_mean = fold_lanes(sg) / (float)C;
        const float gx_mean = fold_lanes(sgx) / (float)C;
        for (c = 0; c < C; c++) {
            const float xhat = (x[c] - m) * s;
            dx[c] += (weight[c] * d[c] - g_mean - xhat * gx_mean) * s;
        }
    }

    const int chunks = (C + LN_CHUNK - 1) / LN_CHUNK;
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < chunks; ch++) {
        const int c0 = ch * LN_CHUNK;
        const int c1 = c0 + LN_CHUNK < C ? c0 + LN_CHUNK : C;
        for (int i = 0; i < N; i++) {
            const float *x = inp + (size_t)i * C, *d = dout + (size_t)i * C;
            const float m = mean[i], s = rstd[i];
            for (int c = c0; c < c1; c++) {
                dbias[c] += d[c];
                dweight[c] += (x[c] - m) * s * d[c];
            }
        }
    }
}
