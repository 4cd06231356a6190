/* CPU FP32 reference of the fused classifier: softmax over the real vocab
 * columns, cross-entropy loss, and dlogits written over the logits.
 *
 * Design: rows are independent, so the work is parallel over rows. Each row
 * takes three passes: the max (so exp never overflows), exp(x - max) summed
 * in double lanes (50257 terms; a float running sum would lose digits), and the
 * in-place scale to (p - onehot) * dloss. The second pass stores exp(x - max)
 * over the logits so exp runs once per element; with dloss == 0 it only
 * sums, leaving the logits untouched for evaluation. Padding columns
 * [V, Vp) are never read and are zeroed when dlogits are written.
 * exp is a Cephes-style polynomial on 8-lane vectors (within 1.5 ulp of
 * expf) rather than libm's scalar expf; with 50257 exps per row it is most
 * of this kernel's time. The max uses `omp simd`, without which GCC keeps
 * the float compare as a branch; max is exact in any order. */
#include "kernels/classifier.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* GNU C vector types: GCC does not vectorise the exp below from a plain loop
 * (its clamps are float compares, which -ftrapping-math keeps as branches). */
typedef float vec8 __attribute__((vector_size(32)));
typedef int32_t vec8i __attribute__((vector_size(32)));

/* The build targets baseline x86-64 (SSE2); GCC also compiles the exp loop
 * for AVX2+FMA and picks the clone at load time, where the CPU has them. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define EXP_TARGETS __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define EXP_TARGETS
#endif

/* dst[0..8) = exp(src[0..8) - mx) for arguments <= 0 (src may be dst):
 * x = n ln2 + r with |r| <= ln2/2 (ln2 split in two so n ln2 is exact), a
 * Cephes polynomial for exp(r) (within 1.5 ulp of expf), and 2^n built in
 * the exponent bits. Below -87 (exp < 2^-125) the result is flushed to 0,
 * which also keeps n in range. Memory in and out: a vector argument or
 * result would change the ABI between the AVX and baseline builds. */
static inline void exp8_shifted(float *dst, const float *src, float mx) {
    vec8 x;
    memcpy(&x, src, sizeof(x));
    x -= mx;
    const vec8 lowest = {-87.0f, -87.0f, -87.0f, -87.0f, -87.0f, -87.0f, -87.0f, -87.0f};
    const vec8i low = x < lowest; /* lanes of all ones where true */
    const vec8 xc = (vec8)((low & (vec8i)lowest) | (~low & (vec8i)x));
    const float big = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    const vec8 n = (xc * 1.44269504088896341f + big) - big;
    const vec8 r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;
    vec8 p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const vec8i scale = (__builtin_convertvector(n, vec8i) + 127) << 23;
    const vec8 e = (vec8)(~low & (vec8i)(p * (vec8)scale));
    memcpy(dst, &e, sizeof(e));
}

/* Columns per step of the exp pass: exps go to a small buffer (or over the
 * logits), then are summed in double, 4 lanes in a fixed order. */
enum { EXP_BLOCK = 256, SUM_LANES = 4 };

/* dst[j] = exp(x[j] - mx) for j < n; dst may be x. */
EXP_TARGETS
static void exp_shifted(float *dst, const float *x, int n, float mx) {
    int j = 0;
    for (; j + 8 <= n; j += 8) exp8_shifted(dst + j, x + j, mx);
    if (j < n) { /* the tail through a padded vector */
        float v[8] = {0};
        memcpy(v, x + j, sizeof(float) * (size_t)(n - j));
        exp8_shifted(v, v, mx);
        memcpy(dst + j, v, sizeof(float) * (size_t)(n - j));
    }
}

/* sum_j exp(x[j] - mx) in double; the exps are also written to x when
 * write_back, else only summed. */
static double sum_exp(float *x, int V, float mx, int write_back) {
    double lanes[SUM_LANES] = {0};
    float buf[EXP_BLOCK];
    for (int j0 = 0; j0 < V; j0 += EXP_BLOCK) {
        const int m = V - j0 < EXP_BLOCK ? V - j0 : EXP_BLOCK;
        float *e = write_back ? x + j0 : buf;
        exp_shifted(e, x + j0, m, mx);
        int j = 0;
        for (; j + SUM_LANES <= m; j += SUM_LANES)
            for (int l = 0; l < SUM_LANES; l++) lanes[l] += e[j + l];
        for (; j < m; j++) lanes[j % SUM_LANES] += e[j];
    }
    return (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]);
}

void classifier_forward_backward_cpu(float *logits, float *losses, const int32_t *targets, int N,
                                     int V, int Vp, float dloss) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        float *x = logits + (size_t)i * Vp;
        const int target = targets[i];
        float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
        for (int j = 0; j < V; j++) mx = x[j] > mx ? x[j] : mx;
        const float x_target = x[target];
        const double sum = sum_exp(x, V, mx, dloss != 0.0f);
        /* -log p[target] = log(sum) - (x[target] - max) */
        losses[i] = (float)(log(sum) - (double)(x_target - mx));
        if (dloss != 0.0f) {
            const double inv_sum = 1.0 / sum;
            const float p_target = (float)(x[target] * inv_sum);
            for (int j = 0; j < V; j++) x[j] = (float)(x[j] * inv_sum) * dloss;
            x[target] = (p_target - 1.0f) * dloss;
            for (int j = V; j < Vp; j++) x[j] = 0.0f;
        }
    }
}
