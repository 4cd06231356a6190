/* Unit test of the CPU FP32 reference kernels: central-difference gradient
 * checks of every op, exact small cases, the overwrite/accumulate contract of
 * every output, and bitwise invariance to the thread count.
 *
 * Tolerances. Losses L = sum(out * R) are summed in double, so between the two
 * evaluations of a central difference only the outputs that the perturbed
 * input touches change, each by a float rounding (~6e-8 relative). With
 * eps = 1e-2 that noise is ~1e-5 after dividing by 2 eps, and the truncation
 * error eps^2/6 * f''' is ~2e-5 for the O(1) third derivatives of these
 * smooth ops, so gradient checks allow 1e-4 + 1e-3 |g| (2e-4 + 2e-3 |g| for
 * LayerNorm, whose rstd ~ 2 scales both): about 5x the errors seen. Linear
 * ops (matmul, encoder) have no truncation error and use a large eps.
 * Forward results are compared with double-precision references relative to
 * the sum of the magnitudes that were added (the worst-case float summation
 * bound is K * 6e-8 of that), or in ulps where rounding is the only error. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "gradcheck.h"
#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/classifier.h"
#include "kernels/encoder.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/norm.h"

#define FLT_U 5.96e-8 /* unit roundoff of float */

static uint64_t seed = 20240520;

static float *zeros(size_t n) { return xcalloc(n ? n : 1, sizeof(float)); }

static float *randoms(size_t n, float scale) {
    float *x = zeros(n);
    rng_fill(x, n, scale, &seed);
    return x;
}

static float *copy_of(const float *x, size_t n) {
    float *y = zeros(n);
    memcpy(y, x, n * sizeof(float));
    return y;
}

static void fill(float *x, size_t n, float value) {
    for (size_t i = 0; i < n; i++) x[i] = value;
}

/* out - base, element-wise: the part an accumulating kernel added. */
static float *minus(const float *out, const float *base, size_t n) {
    float *d = zeros(n);
    for (size_t i = 0; i < n; i++) d[i] = out[i] - base[i];
    return d;
}

/* ---------------------------------------------------------------- encoder */

typedef struct {
    float *out, *wte, *wpe;
    const float *r;
    const int32_t *inp;
    int B, T, C;
} encoder_ctx;

static double encoder_loss(void *p) {
    encoder_ctx *c = p;
    encoder_forward_cpu(c->out, c->inp, c->wte, c->wpe, c->B, c->T, c->C);
    return dot_double(c->out, c->r, (size_t)c->B * c->T * c->C);
}

static void test_encoder(void) {
    printf("encoder\n");
    enum { B = 2, T = 3, C = 5, VP = 4 };
    const int32_t inp[B * T] = {1, 3, 1, 3, 3, 0}; /* repeats: the scatter-add adds */
    encoder_ctx c = {zeros(B * T * C),
                     randoms(VP * C, 1),
                     randoms(T * C, 1),
                     randoms(B * T * C, 1),
                     inp,
                     B,
                     T,
                     C};
    encoder_forward_cpu(c.out, inp, c.wte, c.wpe, B, T, C);
    float *want = zeros(B * T * C);
    for (int bt = 0; bt < B * T; bt++)
        for (int i = 0; i < C; i++)
            want[bt * C + i] = c.wte[inp[bt] * C + i] + c.wpe[bt % T * C + i];
    check_same("forward = wte[token] + wpe[t]", c.out, want, B * T * C);

    /* The gradients accumulate: start them from nonzero values. */
    float *g0_wte = randoms(VP * C, 1), *g0_wpe = randoms(T * C, 1);
    float *dwte = copy_of(g0_wte, VP * C), *dwpe = copy_of(g0_wpe, T * C);
    encoder_backward_cpu(dwte, dwpe, c.r, inp, B, T, C);
    float *gw = minus(dwte, g0_wte, VP * C), *gp = minus(dwpe, g0_wpe, T * C);
    /* linear: any eps is exact; the error is the rounding of (g0 + g) - g0 */
    gradcheck("dwte (+=)", encoder_loss, &c, c.wte, gw, VP * C, 0.5f, 1e-6, 1e-6);
    gradcheck("dwpe (+=)", encoder_loss, &c, c.wpe, gp, T * C, 0.5f, 1e-6, 1e-6);

    /* Thread-count invariance on a size where channel slices split. */
    enum { B2 = 3, T2 = 17, C2 = 100, V2 = 11 };
    int32_t inp2[B2 * T2];
    for (int i = 0; i < B2 * T2; i++) inp2[i] = (i * 7) % V2;
    float *dout2 = randoms(B2 * T2 * C2, 1);
    float *dwte1 = randoms(V2 * C2, 1), *dwpe1 = randoms(T2 * C2, 1);
    float *dwte3 = copy_of(dwte1, V2 * C2), *dwpe3 = copy_of(dwpe1, T2 * C2);
    omp_set_num_threads(1);
    encoder_backward_cpu(dwte1, dwpe1, dout2, inp2, B2, T2, C2);
    omp_set_num_threads(3);
    encoder_backward_cpu(dwte3, dwpe3, dout2, inp2, B2, T2, C2);
    check_same("backward dwte, 1 vs 3 threads", dwte1, dwte3, V2 * C2);
    check_same("backward dwpe, 1 vs 3 threads", dwpe1, dwpe3, T2 * C2);
    float *frees[] = {c.out, c.wte, c.wpe, (float *)c.r, want,  g0_wte, g0_wpe, dwte,
                      dwpe,  gw,    gp,    dout2,        dwte1, dwpe1,  dwte3,  dwpe3};
    for (size_t i = 0; i < sizeof(frees) / sizeof(*frees); i++) free(frees[i]);
}

/* -------------------------------------------------------------- layernorm */

typedef struct {
    float *out, *mean, *rstd, *inp, *w, *b;
    const float *r;
    int N, C;
} ln_ctx;

static double ln_loss(void *p) {
    ln_ctx *c = p;
    layernorm_forward_cpu(c->out, c->mean, c->rstd, c->inp, c->w, c->b, c->N, c->C);
    return dot_double(c->out, c->r, (size_t)c->N * c->C);
}

static void test_layernorm(void) {
    printf("layernorm\n");
    enum { N = 4, C = 11 }; /* C not a multiple of 8: the reduction tail runs */
    ln_ctx c = {zeros(N * C),
                zeros(N),
                zeros(N),
                randoms(N * C, 1),
                randoms(C, 0.5f),
                randoms(C, 0.5f),
                randoms(N * C, 1),
                N,
                C};
    for (int i = 0; i < N * C; i++) c.inp[i] += 0.3f * (float)(i / C); /* nonzero row means */
    for (int i = 0; i < C; i++) c.w[i] += 1.0f;
    ln_loss(&c);
    float *g0_inp = randoms(N * C, 1), *g0_w = randoms(C, 1), *g0_b = randoms(C, 1);
    float *dinp = copy_of(g0_inp, N * C), *dw = copy_of(g0_w, C), *db = copy_of(g0_b, C);
    layernorm_backward_cpu(dinp, dw, db, c.r, c.inp, c.w, c.mean, c.rstd, N, C);
    float *gi = minus(dinp, g0_inp, N * C), *gw = minus(dw, g0_w, C), *gb = minus(db, g0_b, C);
    gradcheck("dinp (+=)", ln_loss, &c, c.inp, gi, N * C, 1e-2f, 2e-4, 2e-3);
    gradcheck("dweight (+=)", ln_loss, &c, c.w, gw, C, 1e-2f, 2e-4, 2e-3);
    gradcheck("dbias (+=)", ln_loss, &c, c.b, gb, C, 1e-2f, 2e-4, 2e-3);

    /* Against double: eps 1e-5 inside the sqrt, biased variance. Row 0 has
     * variance 1e-6, where eps dominates (rstd 302 with eps, 1000 without).
     * Centering in float loses ~C*u*max|x| of x - mean, which rstd scales:
     * errors are measured relative to 1 + rstd * max|x|, within 4 C u. */
    for (int i = 0; i < C; i++) c.inp[i] = 1.0f + ((i % 2) ? 1e-3f : -1e-3f);
    ln_loss(&c);
    double err_out = 0, err_stat = 0, err_norm = 0;
    for (int n = 0; n < N; n++) {
        const float *x = c.inp + n * C;
        double m = 0, v = 0, nm = 0, nv = 0;
        for (int i = 0; i < C; i++) m += x[i];
        m /= C;
        for (int i = 0; i < C; i++) v += (x[i] - m) * (x[i] - m);
        v /= C;
        const double s = 1.0 / sqrt(v + 1e-5);
        double xmax = 0;
        for (int i = 0; i < C; i++) xmax = fmax(xmax, fabs(x[i]));
        const double cond = 1 + s * xmax;
        err_stat = fmax(err_stat, fabs(c.mean[n] - m) + fabs(c.rstd[n] - s) / s);
        for (int i = 0; i < C; i++) {
            const double xhat = (x[i] - m) * s;
            err_out = fmax(err_out, fabs(c.out[n * C + i] - (xhat * c.w[i] + c.b[i])) / cond);
            const double z = (c.out[n * C + i] - c.b[i]) / c.w[i]; /* undo the affine */
            nm += z;
            nv += z * z;
        }
        /* before the affine: mean 0, variance v / (v + eps) */
        err_norm = fmax(err_norm, (fabs(nm / C) + fabs(nv / C - v / (v + 1e-5))) / cond);
    }
    check_le("forward vs double (eps 1e-5, biased var)", err_out, 4 * C * FLT_U);
    check_le("saved mean and rstd vs double (relative)", err_stat, 1e-6);
    check_le("normalised rows: mean 0, var v/(v+eps)", err_norm, 4 * C * FLT_U);

    /* Fused residual: residual = a + b exactly, the rest as layernorm_forward,
     * also when residual is a itself (the in-place residual stream). */
    float *a = randoms(N * C, 1), *b2 = randoms(N * C, 1), *res = zeros(N * C);
    float *out2 = zeros(N * C), *mean2 = zeros(N), *rstd2 = zeros(N);
    residual_layernorm_forward_cpu(res, out2, mean2, rstd2, a, b2, c.w, c.b, N, C);
    float *sum = zeros(N * C);
    for (int i = 0; i < N * C; i++) sum[i] = a[i] + b2[i];
    layernorm_forward_cpu(c.out, c.mean, c.rstd, sum, c.w, c.b, N, C);
    check_same("residual = a + b", res, sum, N * C);
    check_same("residual LN out = LN(a + b)", out2, c.out, N * C);
    check_same("residual LN mean/rstd", mean2, c.mean, N);
    residual_layernorm_forward_cpu(a, out2, mean2, rstd2, a, b2, c.w, c.b, N, C);
    check_same("residual in place (residual == a)", a, sum, N * C);

    /* dweight and dbias sum over rows: same bits for any thread count. */
    enum { N2 = 37, C2 = 100 };
    float *x2 = randoms(N2 * C2, 1), *w2 = randoms(C2, 1), *bb2 = randoms(C2, 1);
    float *y2 = zeros(N2 * C2), *m2 = zeros(N2), *s2 = zeros(N2), *d2 = randoms(N2 * C2, 1);
    layernorm_forward_cpu(y2, m2, s2, x2, w2, bb2, N2, C2);
    float *di1 = zeros(N2 * C2), *dw1 = zeros(C2), *db1 = zeros(C2);
    float *di3 = zeros(N2 * C2), *dw3 = zeros(C2), *db3 = zeros(C2);
    omp_set_num_threads(1);
    layernorm_backward_cpu(di1, dw1, db1, d2, x2, w2, m2, s2, N2, C2);
    omp_set_num_threads(3);
    layernorm_backward_cpu(di3, dw3, db3, d2, x2, w2, m2, s2, N2, C2);
    check_same("backward dinp, 1 vs 3 threads", di1, di3, N2 * C2);
    check_same("backward dweight, 1 vs 3 threads", dw1, dw3, C2);
    check_same("backward dbias, 1 vs 3 threads", db1, db3, C2);
    float *frees[] = {c.out, c.mean, c.rstd, c.inp, c.w, c.b, (float *)c.r, g0_inp, g0_w,
                      g0_b,  dinp,   dw,     db,    gi,  gw,  gb,           a,      b2,
                      res,   out2,   mean2,  rstd2, sum, x2,  w2,           bb2,    y2,
                      m2,    s2,     d2,     di1,   dw1, db1, di3,          dw3,    db3};
    for (size_t i = 0; i < sizeof(frees) / sizeof(*frees); i++) free(frees[i]);
}

/* ----------------------------------------------------------------- matmul */

typedef struct {
    float *out, *inp, *w, *b;
    const float *r;
    int N, C, OC;
} mm_ctx;

static double mm_loss(void *p) {
    mm_ctx *c = p;
    matmul_forward_cpu(c->out, c->inp, c->w, c->b, c->N, c->C, c->OC);
    return dot_double(c->out, c->r, (size_t)c->N * c->OC);
}

/* max over elements of |got - want| / (sum of |terms| added): the float sum of
 * K terms is within K * u of that scale. want/scale are computed in double. */
static double normalized_err(const float *got, const double *want, const double *scale, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double e = fabs(got[i] - want[i]) / (scale[i] > 0 ? scale[i] : 1.0);
        if (!(e <= m)) m = e;
    }
    return m;
}

/* Forward and backward on one size against naive double loops. */
static void matmul_vs_naive(int N, int C, int OC) {
    float *inp = randoms((size_t)N * C, 1), *w = randoms((size_t)OC * C, 1);
    float *bias = randoms(OC, 1), *dout = randoms((size_t)N * OC, 1);
    float *out = zeros((size_t)N * OC), *out_nb = zeros((size_t)N * OC);
    double *want = xcalloc((size_t)N * OC, sizeof(double));
    double *want_nb = xcalloc((size_t)N * OC, sizeof(double));
    double *scale = xcalloc((size_t)N * OC, sizeof(double));
    matmul_forward_cpu(out, inp, w, bias, N, C, OC);
    matmul_forward_cpu(out_nb, inp, w, NULL, N, C, OC);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double s = 0, a = 0;
            for (int i = 0; i < C; i++) {
                s += (double)inp[(size_t)n * C + i] * w[(size_t)o * C + i];
                a += fabs((double)inp[(size_t)n * C + i] * w[(size_t)o * C + i]);
            }
            want_nb[(size_t)n * OC + o] = s;
            want[(size_t)n * OC + o] = s + bias[o];
            scale[(size_t)n * OC + o] = a + fabs(bias[o]);
        }
    char what[96];
    snprintf(what, sizeof(what), "forward N=%d C=%d OC=%d vs naive", N, C, OC);
    check_le(what, normalized_err(out, want, scale, (size_t)N * OC), (C + 1) * FLT_U);
    snprintf(what, sizeof(what), "forward N=%d C=%d OC=%d, bias NULL", N, C, OC);
    check_le(what, normalized_err(out_nb, want_nb, scale, (size_t)N * OC), (C + 1) * FLT_U);

    /* dinp is overwritten (NaN start would show through); dweight and dbias
     * accumulate onto their start values. */
    float *dinp = zeros((size_t)N * C), *dw = randoms((size_t)OC * C, 1), *db = randoms(OC, 1);
    fill(dinp, (size_t)N * C, NAN);
    float *dw0 = copy_of(dw, (size_t)OC * C), *db0 = copy_of(db, OC);
    matmul_backward_cpu(dinp, dw, db, dout, inp, w, N, C, OC);
    double *want_di = xcalloc((size_t)N * C, sizeof(double));
    double *scale_di = xcalloc((size_t)N * C, sizeof(double));
    for (int n = 0; n < N; n++)
        for (int i = 0; i < C; i++)
            for (int o = 0; o < OC; o++) {
                const double t = (double)dout[(size_t)n * OC + o] * w[(size_t)o * C + i];
                want_di[(size_t)n * C + i] += t;
                scale_di[(size_t)n * C + i] += fabs(t);
            }
    snprintf(what, sizeof(what), "dinp (=) N=%d C=%d OC=%d vs naive", N, C, OC);
    check_le(what, normalized_err(dinp, want_di, scale_di, (size_t)N * C), OC * FLT_U);
    double *want_dw = xcalloc((size_t)OC * C, sizeof(double));
    double *scale_dw = xcalloc((size_t)OC * C, sizeof(double));
    for (int o = 0; o < OC; o++)
        for (int i = 0; i < C; i++) {
            double s = dw0[(size_t)o * C + i], a = fabs(s);
            for (int n = 0; n < N; n++) {
                const double t = (double)dout[(size_t)n * OC + o] * inp[(size_t)n * C + i];
                s += t;
                a += fabs(t);
            }
            want_dw[(size_t)o * C + i] = s;
            scale_dw[(size_t)o * C + i] = a;
        }
    snprintf(what, sizeof(what), "dweight (+=) N=%d C=%d OC=%d vs naive", N, C, OC);
    check_le(what, normalized_err(dw, want_dw, scale_dw, (size_t)OC * C), (N + 1) * FLT_U);
    double *want_db = xcalloc(OC, sizeof(double)), *scale_db = xcalloc(OC, sizeof(double));
    for (int o = 0; o < OC; o++) {
        want_db[o] = db0[o];
        scale_db[o] = fabs(db0[o]);
        for (int n = 0; n < N; n++) {
            want_db[o] += dout[(size_t)n * OC + o];
            scale_db[o] += fabs(dout[(size_t)n * OC + o]);
        }
    }
    snprintf(what, sizeof(what), "dbias (+=) N=%d C=%d OC=%d vs naive", N, C, OC);
    check_le(what, normalized_err(db, want_db, scale_db, OC), (N + 1) * FLT_U);

    /* NULL dinp / dbias are skipped and change nothing else. */
    float *dw_only = copy_of(dw0, (size_t)OC * C);
    matmul_backward_cpu(NULL, dw_only, NULL, dout, inp, w, N, C, OC);
    snprintf(what, sizeof(what), "dweight with dinp, dbias NULL N=%d", N);
    check_same(what, dw_only, dw, (size_t)OC * C);

    /* Each element's sum runs in a fixed order: same bits for any threads. */
    float *out3 = zeros((size_t)N * OC), *dinp3 = zeros((size_t)N * C);
    float *dw3 = copy_of(dw0, (size_t)OC * C), *db3 = copy_of(db0, OC);
    omp_set_num_threads(3);
    matmul_forward_cpu(out3, inp, w, bias, N, C, OC);
    matmul_backward_cpu(dinp3, dw3, db3, dout, inp, w, N, C, OC);
    omp_set_num_threads(1);
    float *out1 = zeros((size_t)N * OC), *dinp1 = zeros((size_t)N * C);
    float *dw1 = copy_of(dw0, (size_t)OC * C), *db1 = copy_of(db0, OC);
    matmul_forward_cpu(out1, inp, w, bias, N, C, OC);
    matmul_backward_cpu(dinp1, dw1, db1, dout, inp, w, N, C, OC);
    snprintf(what, sizeof(what), "forward N=%d C=%d OC=%d, 1 vs 3 threads", N, C, OC);
    check_same(what, out1, out3, (size_t)N * OC);
    check_same("dinp, 1 vs 3 threads", dinp1, dinp3, (size_t)N * C);
    check_same("dweight, 1 vs 3 threads", dw1, dw3, (size_t)OC * C);
    check_same("dbias, 1 vs 3 threads", db1, db3, OC);
    omp_set_num_threads(2);

    void *frees[] = {inp,     w,        bias,    dout,     out,     out_nb, want,    want_nb,
                     scale,   dinp,     dw,      db,       dw0,     db0,    want_di, scale_di,
                     want_dw, scale_dw, want_db, scale_db, dw_only, out3,   dinp3,   dw3,
                     db3,     out1,     dinp1,   dw1,      db1};
    for (size_t i = 0; i < sizeof(frees) / sizeof(*frees); i++) free(frees[i]);
}

static void test_matmul(void) {
    printf("matmul\n");
    enum { N = 3, C = 4, OC = 5 };
    mm_ctx c = {zeros(N * OC),
                randoms(N * C, 1),
                randoms(OC * C, 1),
                randoms(OC, 1),
                randoms(N * OC, 1),
                N,
                C,
                OC};
    float *dinp = zeros(N * C), *dw = zeros(OC * C), *db = zeros(OC);
    matmul_backward_cpu(dinp, dw, db, c.r, c.inp, c.w, N, C, OC);
    /* L is linear in each input: central differences are exact up to rounding */
    gradcheck("dinp", mm_loss, &c, c.inp, dinp, N * C, 0.5f, 1e-5, 1e-5);
    gradcheck("dweight", mm_loss, &c, c.w, dw, OC * C, 0.5f, 1e-5, 1e-5);
    gradcheck("dbias", mm_loss, &c, c.b, db, OC, 0.5f, 1e-5, 1e-5);
    /* odd sizes (every tile is a remainder), sizes with full and partial
     * tiles, and sizes past one K block (256) and one column block (256) */
    matmul_vs_naive(7, 13, 5);
    matmul_vs_naive(67, 96, 130);
    matmul_vs_naive(100, 300, 600);
    matmul_vs_naive(260, 24, 37); /* dweight sums N = 260 rows: past one K block */
    float *frees[] = {c.out, c.inp, c.w, c.b, (float *)c.r, dinp, dw, db};
    for (size_t i = 0; i < sizeof(frees) / sizeof(*frees); i++) free(frees[i]);
}

/* ------------------------------------------------------------------- gelu */

typedef struct {
    float *out, *inp;
    const float *r;
    size_t n;
} gelu_ctx;

static double gelu_loss(void *p) {
    gelu_ctx *c = p;
    gelu_forward_cpu(c->out, c->inp, c->n);
    return dot_double(c->out, c->r, c->n);
}

static void test_gelu(void) {
    printf("gelu\n");
    enum { N = 101 };
    gelu_ctx c = {zeros(N), randoms(N, 4), randoms(N, 1), N};
    c.inp[0] = 0.0f;
    float *dinp = zeros(N);
    gelu_backward_cpu(dinp, c.inp, c.r, N);
    gradcheck("dinp", gelu_loss, &c, c.inp, dinp, N, 1e-2f, 1e-4, 1e-3);

    gelu_forward_cpu(c.out, c.inp, N);
    /* float rounding of u and of the exp is amplified by |u| in the tail:
     * measure in ulps of 1 + |x| (|gelu(x)| <= |x|) */
    double err = 0;
    for (int i = 0; i < N; i++) {
        const double x = c.inp[i];
        const double want = 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        err = fmax(err, fabs(c.out[i] - want) / (FLT_U * (1 + fabs(x))));
    }
    check_le("forward vs double tanh formula (ulps of 1 + |x|)", err, 4);
    /* exact ends: the tail below -20 is under 1e-260, 0 in float */
    const float ends[3] = {0.0f, 10.0f, -20.0f};
    float ge[3];
    gelu_forward_cpu(ge, ends, 3);
    check_le("gelu(0) = 0, gelu(10) = 10, gelu(-20) = 0",
             fabs(ge[0]) + fabs(ge[1] - 10.0f) + fabs(ge[2]), 0);

    float *alias = copy_of(c.r, N);
    gelu_backward_cpu(alias, c.inp, alias, N);
    check_same("backward in place (dinp == dout)", alias, dinp, N);
    free(alias);
    free(dinp);
    free(c.out);
    free(c.inp);
    free((float *)c.r);
}

/* -------------------------------------------------------------- attention */

typedef struct {
    float *out, *lse, *qkv;
    const float *r;
    int B, T, C, NH;
} attn_ctx;

static double attn_loss(void *p) {
    attn_ctx *c = p;
    attention_forward_cpu(c->out, c->lse, c->qkv, c->B, c->T, c->C, c->NH);
    return dot_double(c->out, c->r, (size_t)c->B * c->T * c->C);
}

/* Causal softmax attention in double, for one (B, T, C, NH) problem. */
static void attention_naive(double *out, double *lse, const float *qkv, int B, int T, int C,
                            int NH) {
    const int HS = C / NH;
    double *att = xcalloc(T, sizeof(double));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * HS;
                double mx = -INFINITY, sum = 0;
                for (int s = 0; s <= t; s++) {
                    const float *k = qkv + ((size_t)b * T + s) * 3 * C + C + h * HS;
                    double d = 0;
                    for (int i = 0; i < HS; i++) d += (double)q[i] * k[i];
                    att[s] = d / sqrt((double)HS);
                    mx = fmax(mx, att[s]);
                }
                for (int s = 0; s <= t; s++) sum += exp(att[s] - mx);
                for (int i = 0; i < HS; i++) {
                    double o = 0;
                    for (int s = 0; s <= t; s++)
                        o += exp(att[s] - mx) / sum *
                             qkv[((size_t)b * T + s) * 3 * C + 2 * C + h * HS + i];
                    out[((size_t)b * T + t) * C + h * HS + i] = o;
                }
                lse[((size_t)b * NH + h) * T + t] = mx + log(sum);
            }
    free(att);
}

static void test_attention(void) {
    printf("attention\n");
    enum { B = 2, T = 5, C = 8, NH = 2 };
    attn_ctx c = {zeros(B * T * C),
                  zeros(B * NH * T),
                  randoms(B * T * 3 * C, 1),
                  randoms(B * T * C, 1),
                  B,
                  T,
                  C,
                  NH};
    attn_loss(&c);
    float *dqkv = zeros(B * T * 3 * C);
    fill(dqkv, B * T * 3 * C, NAN); /* overwritten: a NaN start must not show */
    attention_backward_cpu(dqkv, c.r, c.qkv, c.out, c.lse, B, T, C, NH);
    gradcheck("dqkv (q, k and v parts)", attn_loss, &c, c.qkv, dqkv, B * T * 3 * C, 1e-2f, 1e-4,
              1e-3);

    /* Larger case against double, HS = 16 with a 3-head split. */
    enum { B2 = 2, T2 = 33, C2 = 48, NH2 = 3 };
    float *qkv2 = randoms(B2 * T2 * 3 * C2, 1), *out2 = zeros(B2 * T2 * C2);
    float *lse2 = zeros(B2 * NH2 * T2);
    double *want = xcalloc(B2 * T2 * C2, sizeof(double));
    double *want_lse = xcalloc(B2 * NH2 * T2, sizeof(double));
    attention_forward_cpu(out2, lse2, qkv2, B2, T2, C2, NH2);
    attention_naive(want, want_lse, qkv2, B2, T2, C2, NH2);
    double err = 0, err_lse = 0;
    for (int i = 0; i < B2 * T2 * C2; i++) err = fmax(err, fabs(out2[i] - want[i]));
    for (int i = 0; i < B2 * NH2 * T2; i++) err_lse = fmax(err_lse, fabs(lse2[i] - want_lse[i]));
    check_le("forward out vs double (T=33, HS=16)", err, 1e-6);
    check_le("lse = log sum exp(q.k / sqrt(HS)) vs double", err_lse, 1e-6);

    float *d2 = randoms(B2 * T2 * C2, 1), *dq1 = zeros(B2 * T2 * 3 * C2);
    float *dq3 = zeros(B2 * T2 * 3 * C2), *out3 = zeros(B2 * T2 * C2), *lse3 = zeros(B2 * NH2 * T2);
    omp_set_num_threads(1);
    attention_backward_cpu(dq1, d2, qkv2, out2, lse2, B2, T2, C2, NH2);
    omp_set_num_threads(3);
    attention_forward_cpu(out3, lse3, qkv2, B2, T2, C2, NH2);
    attention_backward_cpu(dq3, d2, qkv2, out2, lse2, B2, T2, C2, NH2);
    omp_set_num_threads(2);
    check_same("forward, 1 vs 3 threads", out2, out3, B2 * T2 * C2);
    check_same("backward, 1 vs 3 threads", dq1, dq3, B2 * T2 * 3 * C2);

    /* T = 1: one key, probability exactly 1, so out = v and lse = the score. */
    enum { C1 = 12, NH1 = 3, HS1 = C1 / NH1 };
    float *qkv1 = randoms(3 * C1, 1), out1[C1], lse1[NH1];
    attention_forward_cpu(out1, lse1, qkv1, 1, 1, C1, NH1);
    check_same("T=1: out = v", out1, qkv1 + 2 * C1, C1);
    double err1 = 0;
    for (int h = 0; h < NH1; h++) {
        double s = 0;
        for (int i = 0; i < HS1; i++) s += (double)qkv1[h * HS1 + i] * qkv1[C1 + h * HS1 + i];
        err1 = fmax(err1, fabs(lse1[h] - s / sqrt((double)HS1)));
    }
    check_le("T=1: lse = q.k / sqrt(HS)", err1, 1e-6);

    void *frees[] = {c.out, c.lse,    c.qkv, (float *)c.r, dqkv, qkv2, out2, lse2,
                     want,  want_lse, d2,    dq1,          dq3,  out3, lse3, qkv1};
    for (size_t i = 0; i < sizeof(frees) / sizeof(*frees); i++) free(frees[i]);
}

/* ------------------------------------------------------------- classifier */

typedef struct {
    float *logits, *losses;
    const int32_t *targets;
    int N, V, Vp;
    float dloss;
} cls_ctx;

/* L = dloss * sum of losses; dloss = 0 in the call keeps logits untouched. */
static double cls_loss(void *p) {
    cls_ctx *c = p;
    classifier_forward_backward_cpu(c->logits, c->losses, c->targets, c->N, c->V, c->Vp, 0.0f);
    double s = 0;
    for (int i = 0; i < c->N; i++) s += c->losses[i];
    return s * c->dloss;
}

/* -log softmax(x[:V])[target] in double. */
static double ce_double(const float *x, int V, int target) {
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < V; j++) mx = fmax(mx, x[j]);
    for (int j = 0; j < V; j++) sum += exp(x[j] - mx);
    return log(sum) - (x[target] - mx);
}

static void test_classifier(void) {
    printf("classifier\n");
    enum { N = 3, V = 7, VP = 10 };
    const int32_t targets[N] = {2, 0, 6};
    cls_ctx c = {randoms(N * VP, 2), zeros(N), targets, N, V, VP, 0.7f};
    for (int i = 0; i < N; i++)
        for (int j = V; j < VP; j++) c.logits[i * VP + j] = 1e4f; /* would swamp a wrong softmax */
    float *saved = copy_of(c.logits, N * VP);
    float *dlogits = copy_of(c.logits, N * VP), *losses = zeros(N);
    classifier_forward_backward_cpu(dlogits, losses, targets, N, V, VP, c.dloss);
    gradcheck("dlogits (padding included: 0)", cls_loss, &c, c.logits, dlogits, N * VP, 1e-2f, 1e-4,
              1e-3);
    check_same("dloss = 0 leaves logits untouched", c.logits, saved, N * VP);
    check_same("losses same with and without backward", c.losses, losses, N);

    double err_loss = 0, row_sum = 0, pad = 0;
    for (int i = 0; i < N; i++) {
        err_loss = fmax(err_loss, fabs(losses[i] - ce_double(saved + i * VP, V, targets[i])));
        double s = 0;
        for (int j = 0; j < V; j++) s += dlogits[i * VP + j];
        row_sum = fmax(row_sum, fabs(s));
        for (int j = V; j < VP; j++) pad = fmax(pad, fabs(dlogits[i * VP + j]));
    }
    check_le("loss vs double", err_loss, 1e-6);
    check_le("rows of dlogits sum to 0", row_sum, 1e-6);
    check_le("padding columns of dlogits are 0", pad, 0);

    /* GPT-2 vocab: equal logits give loss log(V) and p = 1/V everywhere. */
    enum { N2 = 2, V2 = 50257, VP2 = 50304 };
    const int32_t t2[N2] = {0, V2 - 1};
    float *big = zeros(N2 * VP2), *big_losses = zeros(N2);
    for (int i = 0; i < N2 * VP2; i++) big[i] = (i % VP2) < V2 ? 3.0f : NAN;
    classifier_forward_backward_cpu(big, big_losses, t2, N2, V2, VP2, 1.0f);
    /* exp(0) = 1 exactly, so the sum is exactly V: only final roundings remain */
    double e =
        fmax(fabs(big_losses[0] / log((double)V2) - 1), fabs(big_losses[1] / log((double)V2) - 1));
    for (int j = 1; j < V2 - 1; j++) e = fmax(e, fabs(big[j] * V2 - 1.0));
    for (int j = V2; j < VP2; j++) e = fmax(e, fabs(big[j]));
    check_le("V=50257 uniform: loss log V, p = 1/V (rel), NaN pad", e, 2 * FLT_U);
    free(big);
    free(big_losses);
    free(saved);
    free(dlogits);
    free(losses);
    free(c.logits);
    free(c.losses);
}

/* ------------------------------------------------------------------ adamw */

static void test_adamw(void) {
    printf("adamw\n");
    /* One step by hand: p = 1, g = 0.5, m = v = 0, t = 1, lr 1e-3, wd 0.1:
     * m = 0.05, v = 2.5e-4, mhat = 0.5, vhat = 0.25,
     * p = 1 * (1 - 1e-4) - 1e-3 * 0.5 / (0.5 + 1e-8) = 0.99890000002. */
    float p = 1.0f, g = 0.5f, m = 0.0f, v = 0.0f;
    const adamw_hyper one = {
        .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.1f, .t = 1};
    adamw_update_cpu(&p, &g, &m, &v, 1, 1.0f, &one);
    check_le("one step vs hand value 0.99890000002", fabs(p - 0.99890000002), 0.6e-7);
    /* m = (1 - b1) g and v = (1 - b2) g^2 with the float betas (0.9f != 0.9) */
    check_le(
        "m = (1-b1) g, v = (1-b2) g^2 (relative)",
        fmax(fabs(m / ((1 - (double)0.9f) * 0.5) - 1), fabs(v / ((1 - (double)0.999f) * 0.25) - 1)),
        2 * FLT_U);

    /* Five steps on many elements, with clipping and decay, each against the
     * formula in double (torch.optim.AdamW, decay applied to the old param)
     * from the same float state. The float result rounds p * decay and the
     * final sum (1 ulp of |p|) and the update m / (sqrt(v) + eps) about six
     * times (each ~1 ulp of lr): counted in ulps of |p| + lr, within 8. */
    enum { N = 1000, STEPS = 5 };
    const float lr = 6e-4f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f, clip = 0.5f;
    float *param = randoms(N, 1), *mm = zeros(N), *vv = zeros(N);
    double *dp = xcalloc(N, sizeof(double)), *dm = xcalloc(N, sizeof(double));
    double *dv = xcalloc(N, sizeof(double));
    double err = 0;
    for (int t = 1; t <= STEPS; t++) {
        float *grad = randoms(N, 1);
        for (int i = 0; i < N; i++) dp[i] = param[i], dm[i] = mm[i], dv[i] = vv[i];
        const adamw_hyper h = {
            .lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps, .weight_decay = wd, .t = t};
        adamw_update_cpu(param, grad, mm, vv, N, clip, &h);
        for (int i = 0; i < N; i++) {
            const double gi = (double)grad[i] * clip;
            dm[i] = b1 * dm[i] + (1 - (double)b1) * gi;
            dv[i] = b2 * dv[i] + (1 - (double)b2) * gi * gi;
            const double mhat = dm[i] / (1 - pow(b1, t)), vhat = dv[i] / (1 - pow(b2, t));
            dp[i] = dp[i] * (1 - (double)lr * wd) - lr * mhat / (sqrt(vhat) + eps);
            err = fmax(err, fabs(param[i] - dp[i]) / (FLT_U * (fabs(dp[i]) + lr)));
        }
        free(grad);
    }
    check_le("5 steps vs double formula (ulps of |p| + lr)", err, 8);

    float *param1 = randoms(N, 1), *grad = randoms(N, 1), *m1 = randoms(N, 0.1f);
    float *v1 = randoms(N, 0.1f);
    for (int i = 0; i < N; i++) v1[i] = fabsf(v1[i]);
    float *param3 = copy_of(param1, N), *m3 = copy_of(m1, N), *v3 = copy_of(v1, N);
    const adamw_hyper h7 = {
        .lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps, .weight_decay = wd, .t = 7};
    omp_set_num_threads(1);
    adamw_update_cpu(param1, grad, m1, v1, N, clip, &h7);
    omp_set_num_threads(3);
    adamw_update_cpu(param3, grad, m3, v3, N, clip, &h7);
    omp_set_num_threads(2);
    check_same("param, 1 vs 3 threads", param1, param3, N);
    void *frees[] = {param, mm, vv, dp, dm, dv, param1, grad, m1, v1, param3, m3, v3};
    for (size_t i = 0; i < sizeof(frees) / sizeof(*frees); i++) free(frees[i]);
}

/* ------------------------------------------------------------------- norm */

static void test_norm(void) {
    printf("sum_squares\n");
    /* Multiples of 0.5 square to multiples of 0.25: every partial sum is
     * exact in double, so the answer is exact whatever the order. */
    const size_t n = 1000003;
    float *x = zeros(n);
    double want = 0;
    for (size_t i = 0; i < n; i++) {
        x[i] = 0.5f * (float)((int)(i % 7) - 3);
        want += (double)x[i] * x[i];
    }
    check_le("exact case, n = 1000003", fabs(sum_squares_cpu(x, n) - want), 0);
    check_le("n = 5 (fewer elements than chunks)", fabs(sum_squares_cpu(x, 5) - 3.75), 0);
    check_le("n = 0", fabs(sum_squares_cpu(x, 0)), 0);

    rng_fill(x, n, 1, &seed);
    long double ref = 0;
    for (size_t i = 0; i < n; i++) ref += (long double)x[i] * x[i];
    omp_set_num_threads(1);
    const double s1 = sum_squares_cpu(x, n);
    omp_set_num_threads(3);
    const double s3 = sum_squares_cpu(x, n);
    omp_set_num_threads(2);
    /* each of 64 chunks x 4 lanes adds ~3900 terms in sequence: worst-case
     * relative error ~3900 * 2^-53 = 4.4e-13 */
    check_le("random vs long double (relative)", fabs((double)((s1 - ref) / ref)), 5e-13);
    check_le("1 vs 3 threads (bitwise)", s1 == s3 ? 0 : 1, 0);
    free(x);
}

/* ------------------------------------------------------ non-finite guard */

/* A step whose gradient norm or loss is NaN/Inf: clip_factor says skip
 * (negative), and AdamW fed that factor leaves every array as it was; a
 * finite norm keeps the usual factor, and the fold changes nothing then. */
static void test_skip_step(void) {
    printf("non-finite guard\n");
    const double bad[] = {NAN, INFINITY, -INFINITY};
    for (int i = 0; i < 3; i++) {
        check_le("clip_factor(non-finite, clip 1) < 0", clip_factor(bad[i], 1.0) < 0.0f ? 0 : 1, 0);
        check_le("clip_factor(non-finite, no clip) < 0", clip_factor(bad[i], 0.0) < 0.0f ? 0 : 1,
                 0);
        check_le("fold(4, non-finite loss) is NaN",
                 isnan(nonfinite_fold_value(4.0, bad[i])) ? 0 : 1, 0);
    }
    check_le("clip_factor(16, 1) = 1/(4+1e-6)", fabs(clip_factor(16.0, 1.0) - 1.0 / (4.0 + 1e-6)),
             1e-7);
    check_le("clip_factor(0.25, 1) = 1", clip_factor(0.25, 1.0) == 1.0f ? 0 : 1, 0);
    check_le("fold(4, finite loss) = 4", nonfinite_fold_value(4.0, 10.5) == 4.0 ? 0 : 1, 0);

    const size_t N = 1003;
    float *param = randoms(N, 1.0f), *grad = randoms(N, 1.0f), *m = randoms(N, 0.1f);
    float *v = randoms(N, 0.1f);
    for (size_t i = 0; i < N; i++) v[i] = fabsf(v[i]);
    grad[7] = NAN;
    float *p0 = copy_of(param, N), *g0 = copy_of(grad, N), *m0 = copy_of(m, N), *v0 = copy_of(v, N);
    const adamw_hyper h3 = {
        .lr = 6e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .t = 3};
    adamw_update_cpu(param, grad, m, v, N, clip_factor(NAN, 1.0), &h3);
    const int same = memcmp(param, p0, N * 4) == 0 && memcmp(m, m0, N * 4) == 0 &&
                     memcmp(v, v0, N * 4) == 0 && memcmp(grad, g0, N * 4) == 0;
    check_le("AdamW with CLIP_SKIP_STEP changes nothing (bitwise)", same ? 0 : 1, 0);
    grad[7] = 0.5f;
    adamw_update_cpu(param, grad, m, v, N, 1.0f, &h3);
    check_le("AdamW with factor 1 updates", memcmp(param, p0, N * 4) != 0 ? 0 : 1, 0);
    free(param), free(grad), free(m), free(v), free(p0), free(g0), free(m0), free(v0);
}

int main(void) {
    omp_set_num_threads(2);
    test_encoder();
    test_layernorm();
    test_matmul();
    test_gelu();
    test_attention();
    test_classifier();
    test_adamw();
    test_norm();
    test_skip_step();
    const int failed = check_failures();
    printf("%s: %d failed check(s)\n", failed ? "FAILED" : "PASSED", failed);
    return failed ? 1 : 0;
}
