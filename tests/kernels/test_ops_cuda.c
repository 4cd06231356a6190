/* GPU test of the CUDA kernel table (ops_cuda, kernels/cuda/) against the CPU
 * fp32 reference table (ops_cpu): every op but attention (test_attention_cuda
 * covers it), on fresh random inputs rounded to bf16 so that both backends
 * see the same values; every output and every gradient. Exits 77 (skipped)
 * when no GPU is visible.
 *
 * Each check prints one line:
 *   CHECK <op> <tensor> n=.. max_err=.. worst=<max err/tol> atol=.. rtol=.. bad=.. unwritten=.. PASS|FAIL
 * and the program ends with a summary line; exit 1 if any check failed.
 *
 * Protocol. Outputs that an op overwrites are filled with NaN first, and
 * every element must come back finite (written). Outputs that an op
 * accumulates into (+=) are pre-filled with the same random values on both
 * backends, so a kernel that overwrites instead fails. Reductions are run
 * twice on the same state and must agree bit for bit (deterministic).
 *
 * Tolerance: |gpu - ref| <= atol + rtol |ref|, with atol = a * rms(ref).
 * - rtol = 2^-7 (7.8e-3) where the GPU result is the exact (fp32) value
 *   rounded once to bf16: rounding to 8 significant bits errs by at most
 *   2^-8 |x|, and fp32 summation-order differences can push a value across a
 *   rounding boundary, so one bf16 ulp at worst. a = 1e-3 absorbs those fp32
 *   order differences (~1e-6 relative to the terms) where a sum cancels to
 *   near zero.
 * - gradients cuBLASLt accumulates (dweight, and dbias through BGRADB): the
 *   same rtol applied to |ref| + |increment| (see check_acc).
 * - residual + LayerNorm: the GPU normalises the bf16-rounded residual (what
 *   it stores and backward reads), so its LayerNorm outputs are compared with
 *   the CPU LayerNorm of that rounded residual, at the tolerances above.
 * - GELU epilogue outputs: cuBLASLt evaluates tanh with its own fp32
 *   approximation: a = 1e-2 (a wrong formula, e.g. erf GELU, shows up in the
 *   dedicated tanh-vs-erf check instead, which is tight).
 * - fp32 outputs (mean, rstd, losses): only summation order differs:
 *   rtol 1e-5 (losses 2e-5: fp32 sum of 50K exps in a tree vs double).
 * - AdamW: bit-exact by construction (same scalar ops in the same order,
 *   no contraction): master, m, v must match to 0 ulp; params = bf16(master).
 * - sum of squares: the GPU sums each 8 squares in fp32 and the rest in
 *   double: rel 1e-6; inputs of +-1 and +-0.5 make it exact. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "kernels/adamw.h"
#include "kernels/cuda_info.h"
#ifdef GPT2_LN_TUNING
#include "kernels/cuda/tuning/layernorm_tuning.h"
#endif
#include "kernels/matmul.h"
#include "kernels/muon.h"
#include "kernels/norm.h"
#include "kernels/ops.h"
#include "model/rng.h"

static const kernel_ops *G = &ops_cuda;
static const kernel_ops *H = &ops_cpu;
static rng_state rng;
static int n_checks, n_failed;

/* ------------------------------------------------------------ host helpers */

static float bf16_round(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return x; /* NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

static float *hbuf(size_t n) { return xmalloc((n ? n : 1) * sizeof(float)); }

/* n values mean + std * N(0,1), rounded to bf16. */
static float *hrand(size_t n, double mean, double std) {
    float *x = hbuf(n);
    for (size_t i = 0; i < n; i++) x[i] = bf16_round((float)(mean + std * rng_normal(&rng)));
    return x;
}

static float *hcopy(const float *x, size_t n) {
    float *y = hbuf(n);
    memcpy(y, x, n * sizeof(float));
    return y;
}

static int32_t *htokens(size_t n, int V) {
    int32_t *t = xmalloc(n * sizeof(int32_t));
    for (size_t i = 0; i < n; i++) t[i] = (int32_t)(rng_next(&rng) % (uint64_t)V);
    return t;
}

/* ------------------------------------------------------------ device helpers */

/* bf16 device copy of host fp32 values */
static void *dev_from(const float *h, size_t n) {
    void *d = G->alloc(n * 2);
    G->upload_f32(d, h, n);
    return d;
}

static void dev_poison(void *d, size_t n) {
    float *nan = hbuf(n);
    for (size_t i = 0; i < n; i++) nan[i] = NAN;
    G->upload_f32(d, nan, n);
    free(nan);
}

static void *dev_poisoned(size_t n) {
    void *d = G->alloc(n * 2);
    dev_poison(d, n);
    return d;
}

static float *dev_to_host(const void *d, size_t n) {
    float *h = hbuf(n);
    G->download_f32(h, d, n);
    return h;
}

/* fp32 device buffers (statistics, losses, optimizer state) */
static float *dev_f32_from(const float *h, size_t n) {
    float *d = G->alloc(n * 4);
    G->upload(d, h, n * 4);
    return d;
}

static float *dev_f32_poisoned(size_t n) {
    float *nan = hbuf(n);
    for (size_t i = 0; i < n; i++) nan[i] = NAN;
    float *d = dev_f32_from(nan, n);
    free(nan);
    return d;
}

static float *dev_f32_to_host(const float *d, size_t n) {
    float *h = hbuf(n);
    G->download(h, d, n * 4);
    return h;
}

static int32_t *dev_tokens(const int32_t *h, size_t n) {
    int32_t *d = G->alloc(n * sizeof(int32_t));
    G->upload(d, h, n * sizeof(int32_t));
    return d;
}

/* ------------------------------------------------------------ checks */

static void verdict(int pass) {
    n_checks++;
    if (!pass) n_failed++;
}

/* |gpu - ref| <= atol + rtol |ref|, atol = a_rel * rms(ref); every element
 * finite where ref is. */
static void check(const char *op, const char *what, const float *gpu, const float *ref, size_t n,
                  double rtol, double a_rel);

/* Every element within atol of the reference (an error bound worked out
 * for the case, in absolute terms). */
static void check_within(const char *op, const char *what, const float *gpu, const float *ref,
                         size_t n, double atol) {
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += (double)ref[i] * ref[i];
    const double rms = n && ss > 0 ? sqrt(ss / n) : 1.0;
    check(op, what, gpu, ref, n, 0.0, atol / rms);
}

static void check(const char *op, const char *what, const float *gpu, const float *ref, size_t n,
                  double rtol, double a_rel) {
    double ss = 0.0, err2 = 0.0;
    for (size_t i = 0; i < n; i++) ss += (double)ref[i] * ref[i];
    const double rms = n ? sqrt(ss / n) : 0.0;
    const double atol = a_rel * (rms > 0 ? rms : 1.0);
    size_t bad = 0, unwritten = 0, worst_i = 0;
    double max_err = 0.0, worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(gpu[i])) {
            if (isfinite(ref[i])) unwritten++;
            continue;
        }
        const double e = fabs((double)gpu[i] - ref[i]);
        const double r = e / (atol + rtol * fabs(ref[i]));
        err2 += e * e;
        if (e > max_err) max_err = e;
        if (r > worst) {
            worst = r;
            worst_i = i;
        }
        if (r > 1.0) bad++;
    }
    const int pass = bad == 0 && unwritten == 0;
    printf("CHECK %-34s %-8s n=%-9zu max_err=%.2e rel_l2=%.1e worst=%.3f (i=%zu gpu=%.5g ref=%.5g) "
           "atol=%.1e rtol=%.1e bad=%zu unwritten=%zu %s\n",
           op, what, n, max_err, ss > 0 ? sqrt(err2 / ss) : sqrt(err2), worst, worst_i,
           n ? gpu[worst_i] : 0.0, n ? ref[worst_i] : 0.0, atol, rtol, bad, unwritten,
           pass ? "PASS" : "FAIL");
    verdict(pass);
}

/* For outputs that cuBLASLt accumulates (beta = 1): it may round the new
 * product op(A) op(B) to bf16 before adding the old value (seen on small and
 * unaligned shapes), a second rounding of up to 2^-8 of the increment. So
 * the bound is atol + rtol (|ref| + |ref - prefill|). Overwriting instead of
 * accumulating still errs by |prefill| ~ rms and fails. */
static void check_acc(const char *op, const char *what, const float *gpu, const float *ref,
                      const float *prefill, size_t n, double rtol, double a_rel) {
    double ss = 0.0, err2 = 0.0;
    for (size_t i = 0; i < n; i++) ss += (double)ref[i] * ref[i];
    const double atol = a_rel * (ss > 0 ? sqrt(ss / n) : 1.0);
    size_t bad = 0, unwritten = 0, worst_i = 0;
    double max_err = 0.0, worst = 0.0, strict = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(gpu[i])) {
            unwritten++;
            continue;
        }
        const double e = fabs((double)gpu[i] - ref[i]);
        const double inc = fabs((double)ref[i] - prefill[i]);
        const double r = e / (atol + rtol * (fabs(ref[i]) + inc));
        const double rs = e / (atol + rtol * fabs(ref[i]));
        err2 += e * e;
        if (e > max_err) max_err = e;
        if (rs > strict) strict = rs;
        if (r > worst) {
            worst = r;
            worst_i = i;
        }
        if (r > 1.0) bad++;
    }
    const int pass = bad == 0 && unwritten == 0;
    printf("CHECK %-34s %-8s n=%-9zu max_err=%.2e rel_l2=%.1e worst=%.3f (i=%zu gpu=%.5g ref=%.5g) "
           "atol=%.1e rtol=%.1e(|ref|+|inc|) strict=%.3f bad=%zu unwritten=%zu %s\n",
           op, what, n, max_err, ss > 0 ? sqrt(err2 / ss) : sqrt(err2), worst, worst_i,
           n ? gpu[worst_i] : 0.0, n ? ref[worst_i] : 0.0, atol, rtol, strict, bad, unwritten,
           pass ? "PASS" : "FAIL");
    verdict(pass);
}

/* a and b equal bit for bit */
static void check_same(const char *op, const char *what, const void *a, const void *b,
                       size_t bytes) {
    size_t diff = 0;
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < bytes; i++) diff += x[i] != y[i];
    const int pass = diff == 0;
    printf("CHECK %-34s %-8s bytes=%-9zu differing_bytes=%zu (bitwise) %s\n", op, what, bytes, diff,
           pass ? "PASS" : "FAIL");
    verdict(pass);
}

/* a named boolean check with a detail line */
static void check_true(const char *op, const char *what, int pass, const char *detail) {
    printf("CHECK %-34s %-8s %s %s\n", op, what, detail, pass ? "PASS" : "FAIL");
    verdict(pass);
}

/* ------------------------------------------------------------ encoder */

static void test_encoder(int B, int T, int C, int V, int skewed) {
    char op[64];
    snprintf(op, sizeof op, "encoder B%d T%d C%d V%d skew%d", B, T, C, V, skewed);
    const size_t N = (size_t)B * T;
    int32_t *tok = htokens(N, V);
    /* Long runs in the sorted order, across the backward's tiles of 32
     * sorted positions: 1, half the rows one token; 2, every row one token;
     * 3, two tokens of 47% each, their runs meeting inside a tile. */
    if (skewed == 1)
        for (size_t i = 0; i < N; i += 2) tok[i] = 7 % V;
    if (skewed == 2)
        for (size_t i = 0; i < N; i++) tok[i] = 3 % V;
    if (skewed == 3)
        for (size_t i = 0; i < N; i++)
            if (i % 17 != 0) tok[i] = i < N / 2 ? 5 % V : 9 % V;
    float *wte = hrand((size_t)V * C, 0, 0.5), *wpe = hrand((size_t)T * C, 0, 0.5);
    float *out = hbuf(N * C);
    H->encoder_forward(out, tok, wte, wpe, B, T, C);
    int32_t *d_tok = dev_tokens(tok, N);
    void *d_wte = dev_from(wte, (size_t)V * C), *d_wpe = dev_from(wpe, (size_t)T * C);
    void *d_out = dev_poisoned(N * C);
    G->encoder_forward(d_out, d_tok, d_wte, d_wpe, B, T, C);
    float *g_out = dev_to_host(d_out, N * C);
    check(op, "out", g_out, out, N * C, 0x1p-7, 1e-3);

    /* backward: += into pre-filled gradients */
    float *dout = hrand(N * C, 0, 1.0);
    float *dwte = hrand((size_t)V * C, 0, 1.0), *dwpe = hrand((size_t)T * C, 0, 1.0);
    void *d_dout = dev_from(dout, N * C);
    void *d_dwte = dev_from(dwte, (size_t)V * C), *d_dwpe = dev_from(dwpe, (size_t)T * C);
    H->encoder_backward(dwte, dwpe, dout, tok, B, T, C, V);
    G->encoder_backward(d_dwte, d_dwpe, d_dout, d_tok, B, T, C, V);
    float *g_dwte = dev_to_host(d_dwte, (size_t)V * C),
          *g_dwpe = dev_to_host(d_dwpe, (size_t)T * C);
    check(op, "dwte", g_dwte, dwte, (size_t)V * C, 0x1p-7, 1e-3);
    check(op, "dwpe", g_dwpe, dwpe, (size_t)T * C, 0x1p-7, 1e-3);
    /* determinism: the same backward from the same state, twice */
    float *before = hcopy(g_dwte, (size_t)V * C);
    G->upload_f32(d_dwte, before, (size_t)V * C);
    G->encoder_backward(d_dwte, d_dwpe, d_dout, d_tok, B, T, C, V);
    float *again = dev_to_host(d_dwte, (size_t)V * C);
    float *once = hbuf((size_t)V * C);
    G->upload_f32(d_dwte, before, (size_t)V * C);
    G->encoder_backward(d_dwte, d_dwpe, d_dout, d_tok, B, T, C, V);
    G->download_f32(once, d_dwte, (size_t)V * C);
    check_same(op, "determ", again, once, (size_t)V * C * 4);

    void *dev[] = {d_tok, d_wte, d_wpe, d_out, d_dout, d_dwte, d_dwpe};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) G->release(dev[i]);
    float *host[] = {wte, wpe, out, g_out, dout, dwte, dwpe, g_dwte, g_dwpe, before, again, once};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
    free(tok);
}

/* ------------------------------------------------------------ layernorm */

static void test_layernorm(int N, int C) {
    char op[64];
    const size_t n = (size_t)N * C;
    float *a = hrand(n, 0.5, 1.0), *b = hrand(n, -0.2, 0.5);
    float *w = hrand(C, 1.0, 0.1), *bias = hrand(C, 0.0, 0.1);
    void *d_a = dev_from(a, n), *d_b = dev_from(b, n), *d_w = dev_from(w, C),
         *d_bias = dev_from(bias, C);

    /* plain */
    snprintf(op, sizeof op, "layernorm_forward N%d C%d", N, C);
    float *out = hbuf(n), *mean = hbuf(N), *rstd = hbuf(N);
    H->layernorm_forward(out, mean, rstd, a, w, bias, N, C);
    void *d_out = dev_poisoned(n);
    float *d_mean = dev_f32_poisoned(N), *d_rstd = dev_f32_poisoned(N);
    G->layernorm_forward(d_out, d_mean, d_rstd, d_a, d_w, d_bias, N, C);
    float *g_out = dev_to_host(d_out, n), *g_mean = dev_f32_to_host(d_mean, N),
          *g_rstd = dev_f32_to_host(d_rstd, N);
    check(op, "out", g_out, out, n, 0x1p-7, 1e-3);
    check(op, "mean", g_mean, mean, N, 1e-5, 1e-5);
    check(op, "rstd", g_rstd, rstd, N, 1e-5, 1e-5);
    free(g_out);
    free(g_mean);
    free(g_rstd);

    /* residual + layernorm, out of place and in place (residual = a). The
     * residual is checked against a + b; the LayerNorm outputs against the CPU
     * LayerNorm of the GPU's bf16 residual, which is what the GPU normalises
     * (and what backward reads) by design. */
    for (int inplace = 0; inplace < 2; inplace++) {
        snprintf(op, sizeof op, "residual_layernorm N%d C%d%s", N, C, inplace ? " inplace" : "");
        float *res = hbuf(n);
        H->residual_layernorm_forward(res, out, mean, rstd, a, b, w, bias, N, C);
        void *d_res = inplace ? dev_from(a, n) : dev_poisoned(n);
        dev_poison(d_out, n);
        float *nan = hbuf(N);
        for (int i = 0; i < N; i++) nan[i] = NAN;
        G->upload(d_mean, nan, N * 4);
        G->upload(d_rstd, nan, N * 4);
        free(nan);
        G->residual_layernorm_forward(d_res, d_out, d_mean, d_rstd, inplace ? d_res : d_a, d_b, d_w,
                                      d_bias, N, C);
        float *g_res = dev_to_host(d_res, n);
        g_out = dev_to_host(d_out, n);
        g_mean = dev_f32_to_host(d_mean, N);
        g_rstd = dev_f32_to_host(d_rstd, N);
        check(op, "residual", g_res, res, n, 0x1p-7, 1e-3);
        H->layernorm_forward(out, mean, rstd, g_res, w, bias, N, C);
        check(op, "out", g_out, out, n, 0x1p-7, 1e-3);
        check(op, "mean", g_mean, mean, N, 1e-5, 1e-5);
        check(op, "rstd", g_rstd, rstd, N, 1e-5, 1e-5);
        G->release(d_res);
        free(res);
        free(g_res);
        free(g_out);
        free(g_mean);
        free(g_rstd);
    }

    /* backward: statistics of the plain forward (fp32, same on both) */
    snprintf(op, sizeof op, "layernorm_backward N%d C%d", N, C);
    H->layernorm_forward(out, mean, rstd, a, w, bias, N, C);
    float *dout = hrand(n, 0, 1.0);
    float *dinp = hrand(n, 0, 1.0), *dw = hrand(C, 0, 1.0), *db = hrand(C, 0, 1.0);
    void *d_dout = dev_from(dout, n), *d_dinp = dev_from(dinp, n), *d_dw = dev_from(dw, C),
         *d_db = dev_from(db, C);
    float *d_m = dev_f32_from(mean, N), *d_s = dev_f32_from(rstd, N);
    float *dinp0 = hcopy(dinp, n), *dw0 = hcopy(dw, C), *db0 = hcopy(db, C);
    /* with the fused column sums of the new dinp (dinp_colsum) */
    float *cs = hrand(C, 0, 1.0);
    void *d_cs = dev_from(cs, C);
    float *cs0 = hcopy(cs, C); /* before the CPU adds into cs */
    H->layernorm_backward(dinp, dw, db, dout, a, w, mean, rstd, N, C, cs);
    G->layernorm_backward(d_dinp, d_dw, d_db, d_dout, d_a, d_w, d_m, d_s, N, C, d_cs);
    float *g_dinp = dev_to_host(d_dinp, n), *g_dw = dev_to_host(d_dw, C),
          *g_db = dev_to_host(d_db, C), *g_cs = dev_to_host(d_cs, C);
    check(op, "dinp", g_dinp, dinp, n, 0x1p-7, 1e-3);
    check(op, "dweight", g_dw, dw, C, 0x1p-7, 1e-3);
    check(op, "dbias", g_db, db, C, 0x1p-7, 1e-3);
    /* The GPU sums the bf16-rounded dinp it stores, each off by at most
     * 2^-8 of itself (relative, dinp's own error included), and rounds the
     * sum once: the bound is 2^-8 (sum of |dinp| + |colsum|) per column. */
    double cs_bound = 0.0;
    for (int c = 0; c < C; c++) {
        double col = fabs(cs[c]);
        for (int i = 0; i < N; i++) col += fabs(dinp[(size_t)i * C + c]);
        if (col > cs_bound) cs_bound = col;
    }
    check_within(op, "dinp_colsum", g_cs, cs, C, 0x1p-8 * cs_bound);
#ifdef GPT2_LN_TUNING
    /* The tuning variant (rows copied into shared memory by the copy
     * engine, sm_90a) gives the production kernel's bits, with the column
     * sums; 2 stages wrap its rings most often, 4 least. */
    {
        const size_t ws_bytes = layernorm_backward_cuda_workspace_bytes(N, C);
        void *ws = G->alloc(ws_bytes);
        for (int stages = 2; stages <= 4; stages += 2) {
            G->upload_f32(d_dinp, dinp0, n);
            G->upload_f32(d_dw, dw0, C);
            G->upload_f32(d_db, db0, C);
            G->upload_f32(d_cs, cs0, C);
            if (!layernorm_backward_cuda_bulk(stages, d_dinp, d_dw, d_db, d_dout, d_a, d_w, d_m,
                                              d_s, N, C, d_cs, ws, ws_bytes, ops_cuda_stream())) {
                printf("  %s: the bulk variant does not run here (no sm_90a code, or no room)\n",
                       op);
                break;
            }
            float *got[4] = {dev_to_host(d_dinp, n), dev_to_host(d_dw, C), dev_to_host(d_db, C),
                             dev_to_host(d_cs, C)};
            const float *want[4] = {g_dinp, g_dw, g_db, g_cs};
            const char *name[4] = {"dinp", "dweight", "dbias", "dinp_colsum"};
            for (int t = 0; t < 4; t++) {
                char what[48];
                snprintf(what, sizeof what, "bulk%d_same_%s", stages, name[t]);
                check_same(op, what, got[t], want[t], (t ? (size_t)C : n) * 4);
                free(got[t]);
            }
        }
        G->release(ws);
    }
#endif
    free(cs0);
    /* determinism */
    float *r1[3], *r2[3];
    for (int rep = 0; rep < 2; rep++) {
        G->upload_f32(d_dinp, dinp0, n);
        G->upload_f32(d_dw, dw0, C);
        G->upload_f32(d_db, db0, C);
        G->layernorm_backward(d_dinp, d_dw, d_db, d_dout, d_a, d_w, d_m, d_s, N, C, NULL);
        float **r = rep ? r2 : r1;
        r[0] = dev_to_host(d_dinp, n);
        r[1] = dev_to_host(d_dw, C);
        r[2] = dev_to_host(d_db, C);
    }
    check_same(op, "determ", r1[1], r2[1], C * 4);
    check_same(op, "determ", r1[2], r2[2], C * 4);
    check_same(op, "determ", r1[0], r2[0], n * 4);
    /* the column sums change nothing else */
    check_same(op, "colsum_same_dinp", r1[0], g_dinp, n * 4);
    check_same(op, "colsum_same_dweight", r1[1], g_dw, C * 4);
    for (int i = 0; i < 3; i++) {
        free(r1[i]);
        free(r2[i]);
    }

    void *dev[] = {d_a,    d_b,    d_w,  d_bias, d_out, d_mean, d_rstd,
                   d_dout, d_dinp, d_dw, d_db,   d_m,   d_s,    d_cs};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) G->release(dev[i]);
    float *host[] = {a,  b,     w,   bias, out,    mean, rstd, dout, dinp, dw,
                     db, dinp0, dw0, db0,  g_dinp, g_dw, g_db, cs,   g_cs};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}

/* ------------------------------------------------------------ matmul */

/* Forward (plain, with bias, and bias+GELU when gelu) and backward of one
 * shape. offset_rows > 0 places every activation tensor that many rows into
 * a larger buffer, so the pointers are only 16-byte (or 128-byte) aligned. */
static const char *fusion_name(int fused) {
    return fused == MATMUL_FUSE_DEFAULT                                   ? ""
           : fused == 0                                                   ? " unfused"
           : fused == (MATMUL_FUSE_DEFAULT & ~MATMUL_FUSE_OWN_GEMM)       ? " cublaslt"
           : fused == (MATMUL_FUSE_DEFAULT & ~MATMUL_FUSE_OWN_GEMM_TIMED) ? " ours"
           : fused == ((MATMUL_FUSE_DEFAULT & ~MATMUL_FUSE_OWN_GEMM) | MATMUL_FUSE_DGELU_BGRAD)
               ? " cublaslt +dgelu_bgrad"
               : " +bgradb";
}

static void test_matmul(int N, int C, int OC, int gelu, int with_bias, int offset_rows, int fused) {
    char op[80];
    snprintf(op, sizeof op, "matmul N%d C%d OC%d%s%s%s", N, C, OC, with_bias ? "" : " nobias",
             offset_rows ? " unaligned" : "", fusion_name(fused));
    matmul_cuda_set_fusion(fused);
    const size_t nin = (size_t)N * C, nout = (size_t)N * OC, nw = (size_t)OC * C;
    const size_t oin = (size_t)offset_rows * C, oout = (size_t)offset_rows * OC;
    float *inp = hrand(nin, 0, 1.0), *w = hrand(nw, 0, 1.0 / sqrt((double)C));
    float *bias = with_bias ? hrand(OC, 0, 0.5) : NULL;
    void *d_inp_buf = G->alloc((nin + oin) * 2), *d_out_buf = G->alloc((nout + oout) * 2);
    void *d_inp = ops_at(G, d_inp_buf, oin), *d_out = ops_at(G, d_out_buf, oout);
    G->upload_f32(d_inp, inp, nin);
    void *d_w = dev_from(w, nw), *d_bias = bias ? dev_from(bias, OC) : NULL;

    /* forward */
    float *out = hbuf(nout);
    H->matmul_forward(out, inp, w, bias, N, C, OC);
    dev_poison(d_out, nout);
    G->matmul_forward(d_out, d_inp, d_w, d_bias, N, C, OC);
    float *g_out = dev_to_host(d_out, nout);
    check(op, "fwd", g_out, out, nout, 0x1p-7, 1e-3);
    free(g_out);

    float *pre = NULL, *act = NULL;
    void *d_pre_buf = NULL, *d_pre = NULL;
    if (gelu) {
        /* out = gelu(pre): the CPU table's matmul_gelu_forward is the reference */
        pre = hbuf(nout);
        act = hbuf(nout);
        H->matmul_gelu_forward(act, pre, inp, w, bias, N, C, OC);
        d_pre_buf = G->alloc((nout + oout) * 2);
        d_pre = ops_at(G, d_pre_buf, oout);
        dev_poison(d_pre, nout);
        dev_poison(d_out, nout);
        G->matmul_gelu_forward(d_out, d_pre, d_inp, d_w, d_bias, N, C, OC);
        float *g_pre = dev_to_host(d_pre, nout), *g_act = dev_to_host(d_out, nout);
        check(op, "pre", g_pre, pre, nout, 0x1p-7, 1e-3);
        check(op, "gelu", g_act, act, nout, 0x1p-7, 1e-2);
        free(g_pre);
        free(g_act);
    }

    /* backward: dinp overwritten, dweight and dbias accumulated */
    float *dout = hrand(nout, 0, 1.0);
    float *dw = hrand(nw, 0, 1.0), *db = with_bias ? hrand(OC, 0, 1.0) : NULL;
    float *dinp = hbuf(nin);
    void *d_dout_buf = G->alloc((nout + oout) * 2), *d_dinp_buf = G->alloc((nin + oin) * 2);
    void *d_dout = ops_at(G, d_dout_buf, oout), *d_dinp = ops_at(G, d_dinp_buf, oin);
    G->upload_f32(d_dout, dout, nout);
    dev_poison(d_dinp, nin);
    void *d_dw = dev_from(dw, nw), *d_db = db ? dev_from(db, OC) : NULL;
    float *dw0 = hcopy(dw, nw), *db0 = db ? hcopy(db, OC) : NULL;
    H->matmul_backward(dinp, dw, db, dout, inp, w, N, C, OC);
    G->matmul_backward(d_dinp, d_dw, d_db, d_dout, d_inp, d_w, N, C, OC);
    float *g_dinp = dev_to_host(d_dinp, nin), *g_dw = dev_to_host(d_dw, nw);
    check(op, "dinp", g_dinp, dinp, nin, 0x1p-7, 1e-3);
    check_acc(op, "dweight", g_dw, dw, dw0, nw, 0x1p-7, 1e-3);
    if (db) {
        float *g_db = dev_to_host(d_db, OC);
        check_acc(op, "dbias", g_db, db, db0, OC, 0x1p-7, 1e-3);
        /* determinism of the bias reduction */
        G->upload_f32(d_db, db0, OC);
        G->matmul_backward(d_dinp, d_dw, d_db, d_dout, d_inp, d_w, N, C, OC);
        float *g_db2 = dev_to_host(d_db, OC);
        G->upload_f32(d_db, db0, OC);
        G->matmul_backward(d_dinp, d_dw, d_db, d_dout, d_inp, d_w, N, C, OC);
        float *g_db3 = dev_to_host(d_db, OC);
        check_same(op, "determ", g_db2, g_db3, (size_t)OC * 4);
        free(g_db);
        free(g_db2);
        free(g_db3);
    }
    free(g_dinp);
    free(g_dw);

    if (gelu) {
        /* the layer after the gelu: its input was gelu(pre) (act), its dinp is
         * multiplied by gelu'(pre). Shapes: this layer maps OC -> C. */
        char op2[96];
        snprintf(op2, sizeof op2, "matmul_backward_gelu N%d C%d OC%d%s%s", N, OC, C,
                 offset_rows ? " unaligned" : "", fusion_name(fused));
        const size_t nw2 = (size_t)C * OC;
        float *w2 = hrand(nw2, 0, 1.0 / sqrt((double)OC));
        float *dout2 = hrand(nin, 0, 1.0); /* (N, C) */
        float *dw2 = hrand(nw2, 0, 1.0), *db2 = hrand(C, 0, 1.0);
        float *dpre = hbuf(nout), *dw2_0 = hcopy(dw2, nw2), *db2_0 = hcopy(db2, C);
        /* pre as stored on the GPU (bf16) for both */
        for (size_t i = 0; i < nout; i++) {
            pre[i] = bf16_round(pre[i]);
            act[i] = bf16_round(act[i]);
        }
        void *d_w2 = dev_from(w2, nw2), *d_dw2 = dev_from(dw2, nw2), *d_db2 = dev_from(db2, C);
        G->upload_f32(d_pre, pre, nout);
        void *d_act = ops_at(G, d_out_buf, oout);
        G->upload_f32(d_act, act, nout);
        void *d_dout2 = ops_at(G, d_dinp_buf, oin);
        G->upload_f32(d_dout2, dout2, nin);
        void *d_dpre = ops_at(G, d_dout_buf, oout);
        dev_poison(d_dpre, nout);
        /* dpre_colsum: the column sums of dpre (the bias gradient of the
         * layer that produced pre), added into a filled vector */
        float *cs = hrand(OC, 0, 1.0);
        void *d_cs = dev_from(cs, OC);
        H->matmul_backward_gelu(dpre, dw2, db2, dout2, act, w2, pre, N, OC, C, cs);
        G->matmul_backward_gelu(d_dpre, d_dw2, d_db2, d_dout2, d_act, d_w2, d_pre, N, OC, C, d_cs);
        float *g_dpre = dev_to_host(d_dpre, nout), *g_dw2 = dev_to_host(d_dw2, nw2),
              *g_db2 = dev_to_host(d_db2, C), *g_cs = dev_to_host(d_cs, OC);
        /* dgelu: gelu' evaluated in fp32 from the same bf16 pre; cuBLASLt's
         * own tanh approximation: a = 1e-2 as for the forward epilogue */
        check(op2, "dinp", g_dpre, dpre, nout, 0x1p-7, 1e-2);
        check_acc(op2, "dweight", g_dw2, dw2, dw2_0, nw2, 0x1p-7, 1e-3);
        check_acc(op2, "dbias", g_db2, db2, db2_0, C, 0x1p-7, 1e-3);
        /* each summed element within dinp's tolerance, the sum rounded once */
        double cs_bound = 0.0;
        for (int c = 0; c < OC; c++) {
            double col = 0x1p-8 * fabs(cs[c]);
            for (int i = 0; i < N; i++) col += 0x1p-7 + 1e-2 * fabs(dpre[(size_t)i * OC + c]);
            if (col > cs_bound) cs_bound = col;
        }
        check_within(op2, "dpre_colsum", g_cs, cs, OC, cs_bound);
        G->release(d_cs);
        free(cs);
        free(g_cs);
        G->release(d_w2);
        G->release(d_dw2);
        G->release(d_db2);
        float *host[] = {w2, dout2, dw2, db2, dpre, dw2_0, db2_0, g_dpre, g_dw2, g_db2};
        for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
    }

    void *dev[] = {d_inp_buf,  d_out_buf,  d_w,  d_bias, d_pre_buf,
                   d_dout_buf, d_dinp_buf, d_dw, d_db};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) G->release(dev[i]);
    float *host[] = {inp, w, bias, out, pre, act, dout, dw, db, dinp, dw0, db0};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
    matmul_cuda_set_fusion(MATMUL_FUSE_DEFAULT);
}

/* Is cuBLASLt's GELU the tanh form? inp = identity rows so that pre equals
 * chosen bf16 values x exactly (bias 0); then out = bf16(gelu(x)) and, for
 * x in [-4, -1], the tanh and erf forms differ by several bf16 ulps. */
/* out = residual + inp W^T + bias, the add in the GEMM's epilogue: against
 * the CPU's product plus the residual (one bf16 rounding of the fp32 sum,
 * so the usual bound); residual untouched. */
static void test_matmul_residual(int N, int C, int OC, int with_bias) {
    char op[80];
    snprintf(op, sizeof op, "matmul_residual N%d C%d OC%d%s", N, C, OC, with_bias ? "" : " nobias");
    matmul_cuda_set_fusion(MATMUL_FUSE_DEFAULT);
    const size_t nin = (size_t)N * C, nout = (size_t)N * OC, nw = (size_t)OC * C;
    float *inp = hrand(nin, 0, 1.0), *w = hrand(nw, 0, 1.0 / sqrt((double)C));
    float *bias = with_bias ? hrand(OC, 0, 0.5) : NULL, *res = hrand(nout, 0, 2.0);
    void *d_inp = dev_from(inp, nin), *d_w = dev_from(w, nw), *d_res = dev_from(res, nout);
    void *d_bias = bias ? dev_from(bias, OC) : NULL, *d_out = dev_poisoned(nout);
    float *out = hbuf(nout);
    H->matmul_residual_forward(out, res, inp, w, bias, N, C, OC);
    G->matmul_residual_forward(d_out, d_res, d_inp, d_w, d_bias, N, C, OC);
    float *g_out = dev_to_host(d_out, nout), *g_res = dev_to_host(d_res, nout);
    check(op, "fwd", g_out, out, nout, 0x1p-7, 1e-3);
    check_same(op, "residual", g_res, res, nout * sizeof(float));
    free(g_out);
    free(g_res);
    free(out);
    free(inp);
    free(w);
    free(bias);
    free(res);
    G->release(d_inp);
    G->release(d_w);
    G->release(d_res);
    if (d_bias) G->release(d_bias);
    G->release(d_out);
}

/* Generation runs a new length every token (transient_shapes): those
 * products must be right, tune nothing and leave the tuned plans in place.
 * Before, 300 lengths pushed out every plan of the step, which made and
 * tuned them again at the next training step. */
static void test_transient_shapes(void) {
    const char *op = "matmul transient shapes";
    const int N0 = 4096, C = 768, OC = 768, N_LENGTHS = 300;
    matmul_cuda_set_fusion(MATMUL_FUSE_DEFAULT);
    float *inp = hrand((size_t)N0 * C, 0, 1.0), *w = hrand((size_t)OC * C, 0, 1.0 / sqrt(C));
    float *bias = hrand(OC, 0, 0.5);
    void *d_inp = dev_from(inp, (size_t)N0 * C), *d_w = dev_from(w, (size_t)OC * C);
    void *d_bias = dev_from(bias, OC), *d_out = dev_poisoned((size_t)N0 * OC);
    G->matmul_forward(d_out, d_inp, d_w, d_bias, N0, C, OC); /* the step's shape */
    const matmul_plan_counts before = matmul_cuda_plan_counts();
    G->transient_shapes(true);
    for (int n = 1; n <= N_LENGTHS; n++) G->matmul_forward(d_out, d_inp, d_w, d_bias, n, C, OC);
    G->transient_shapes(false);
    const matmul_plan_counts during = matmul_cuda_plan_counts();
    float *out = hbuf((size_t)N_LENGTHS * OC);
    H->matmul_forward(out, inp, w, bias, N_LENGTHS, C, OC);
    float *g_out = dev_to_host(d_out, (size_t)N_LENGTHS * OC);
    check(op, "fwd (last length)", g_out, out, (size_t)N_LENGTHS * OC, 0x1p-7, 1e-3);
    G->matmul_forward(d_out, d_inp, d_w, d_bias, N0, C, OC);
    const matmul_plan_counts after = matmul_cuda_plan_counts();
    char detail[160];
    snprintf(detail, sizeof detail, "plans made %ld -> %ld, tuned %ld -> %ld over %d lengths",
             before.plans_made, during.plans_made, before.plans_tuned, during.plans_tuned,
             N_LENGTHS);
    check_true(op, "none made or tuned",
               during.plans_made == before.plans_made && during.plans_tuned == before.plans_tuned,
               detail);
    snprintf(detail, sizeof detail, "plans made %ld -> %ld, tuned %ld -> %ld", during.plans_made,
             after.plans_made, during.plans_tuned, after.plans_tuned);
    check_true(op, "the step's plan kept",
               after.plans_made == during.plans_made && after.plans_tuned == during.plans_tuned,
               detail);
    free(g_out);
    free(out);
    free(inp);
    free(w);
    free(bias);
    G->release(d_inp);
    G->release(d_w);
    G->release(d_bias);
    G->release(d_out);
}

/* The GELU forward's kernel by measurement (MATMUL_FUSE_OWN_GEMM_TIMED): a
 * shape's first call times ours and cuBLASLt's on its own buffers, once, and
 * still leaves the product there; with the flag cleared, or for one-off
 * shapes, nothing is timed. */
static void test_gelu_choice(void) {
    const char *op = "matmul_gelu_forward timed choice";
    const int N = 512, C = 256, OC = 1024; /* a shape no other test runs */
    const size_t nin = (size_t)N * C, nout = (size_t)N * OC;
    float *inp = hrand(nin, 0, 1.0), *w = hrand((size_t)OC * C, 0, 1.0 / sqrt(C));
    float *bias = hrand(OC, 0, 0.5), *pre = hbuf(nout), *act = hbuf(nout);
    H->matmul_gelu_forward(act, pre, inp, w, bias, N, C, OC);
    void *d_inp = dev_from(inp, nin), *d_w = dev_from(w, (size_t)OC * C);
    void *d_bias = dev_from(bias, OC), *d_out = G->alloc(nout * 2), *d_pre = G->alloc(nout * 2);
    long timed[4];
    timed[0] = matmul_cuda_plan_counts().gelu_choices_timed;
    matmul_cuda_set_fusion(MATMUL_FUSE_DEFAULT & ~MATMUL_FUSE_OWN_GEMM_TIMED);
    G->matmul_gelu_forward(d_out, d_pre, d_inp, d_w, d_bias, N, C, OC);
    matmul_cuda_set_fusion(MATMUL_FUSE_DEFAULT);
    G->transient_shapes(true);
    G->matmul_gelu_forward(d_out, d_pre, d_inp, d_w, d_bias, N, C, OC);
    G->transient_shapes(false);
    timed[1] = matmul_cuda_plan_counts().gelu_choices_timed;
    for (int call = 0; call < 2; call++) { /* the timed first call, then the chosen kernel */
        dev_poison(d_out, nout);
        dev_poison(d_pre, nout);
        G->matmul_gelu_forward(d_out, d_pre, d_inp, d_w, d_bias, N, C, OC);
        timed[2 + call] = matmul_cuda_plan_counts().gelu_choices_timed;
        float *g_pre = dev_to_host(d_pre, nout), *g_act = dev_to_host(d_out, nout);
        check(op, call ? "pre (chosen)" : "pre (timed)", g_pre, pre, nout, 0x1p-7, 1e-3);
        check(op, call ? "gelu (chosen)" : "gelu (timed)", g_act, act, nout, 0x1p-7, 1e-2);
        free(g_pre);
        free(g_act);
    }
    char detail[160];
    snprintf(detail, sizeof detail, "shapes timed %ld -> %ld (untimed calls) -> %ld -> %ld",
             timed[0], timed[1], timed[2], timed[3]);
    check_true(op, "timed once",
               timed[1] == timed[0] && timed[2] == timed[1] + 1 && timed[3] == timed[2], detail);
    free(inp);
    free(w);
    free(bias);
    free(pre);
    free(act);
    G->release(d_inp);
    G->release(d_w);
    G->release(d_bias);
    G->release(d_out);
    G->release(d_pre);
}

static void test_gelu_form(void) {
    const int C = 64, N = 64;
    float *inp = hbuf((size_t)N * C), *w = hbuf((size_t)C * C);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++)
            inp[(size_t)i * C + c] = bf16_round((float)(-4.0 + 3.0 * (i * C + c) / (N * C - 1.0)));
    for (int o = 0; o < C; o++)
        for (int c = 0; c < C; c++) w[(size_t)o * C + c] = o == c ? 1.0f : 0.0f;
    float *zero = hbuf(C);
    for (int c = 0; c < C; c++) zero[c] = 0.0f;
    void *d_inp = dev_from(inp, (size_t)N * C), *d_w = dev_from(w, (size_t)C * C),
         *d_b = dev_from(zero, C);
    void *d_out = dev_poisoned((size_t)N * C), *d_pre = dev_poisoned((size_t)N * C);
    G->matmul_gelu_forward(d_out, d_pre, d_inp, d_w, d_b, N, C, C);
    float *g = dev_to_host(d_out, (size_t)N * C), *gp = dev_to_host(d_pre, (size_t)N * C);
    double e_tanh = 0, e_erf = 0, pre_err = 0;
    for (size_t i = 0; i < (size_t)N * C; i++) {
        const double x = inp[i];
        const double t = 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
        const double e = 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
        e_tanh += fabs(g[i] - t);
        e_erf += fabs(g[i] - e);
        pre_err += fabs(gp[i] - x);
    }
    char detail[160];
    snprintf(detail, sizeof detail, "mean|gpu-tanh|=%.3e mean|gpu-erf|=%.3e pre_exact=%s",
             e_tanh / (N * C), e_erf / (N * C), pre_err == 0 ? "yes" : "no");
    /* bf16 rounding alone leaves ~1/4 ulp on average; the erf form is
     * several ulps away on [-4, -1] */
    check_true("cublaslt_gelu_is_tanh", "form", e_tanh * 2 < e_erf && pre_err == 0, detail);
    G->release(d_inp);
    G->release(d_w);
    G->release(d_b);
    G->release(d_out);
    G->release(d_pre);
    free(inp);
    free(w);
    free(zero);
    free(g);
    free(gp);
}

/* gelu_forward on its own (recompute_gelu): the same values as the fused
 * forward's gelu from the same bf16 pre, to bf16 rounding. */
static void test_gelu_forward(size_t n) {
    char op[64];
    snprintf(op, sizeof op, "gelu_forward n%zu", n);
    float *pre = hrand(n, 0, 2.0), *ref = hbuf(n);
    H->gelu_forward(ref, pre, n);
    void *d_pre = dev_from(pre, n), *d_out = dev_poisoned(n);
    G->gelu_forward(d_out, d_pre, n);
    float *g = dev_to_host(d_out, n);
    check(op, "out", g, ref, n, 0x1p-7, 1e-3);
    G->release(d_pre);
    G->release(d_out);
    free(pre);
    free(ref);
    free(g);
}

/* loss_accumulate: acc += losses, fp32, exact. */
static void test_loss_accumulate(int N) {
    char op[64];
    snprintf(op, sizeof op, "loss_accumulate N%d", N);
    float *acc = hrand((size_t)N, 5, 1), *losses = hrand((size_t)N, 5, 1);
    float *d_acc = dev_f32_from(acc, (size_t)N), *d_losses = dev_f32_from(losses, (size_t)N);
    H->loss_accumulate(acc, losses, N);
    G->loss_accumulate(d_acc, d_losses, N);
    float *g = dev_f32_to_host(d_acc, (size_t)N);
    check_same(op, "acc", g, acc, (size_t)N * 4);
    G->release(d_acc);
    G->release(d_losses);
    free(acc);
    free(losses);
    free(g);
}

/* ------------------------------------------------------------ classifier */

static void test_classifier(int N, int V, int Vp, double scale) {
    char op[64];
    snprintf(op, sizeof op, "classifier N%d V%d Vp%d", N, V, Vp);
    const size_t n = (size_t)N * Vp;
    float *logits = hrand(n, 0, scale);
    int32_t *tg = htokens(N, V);
    /* targets in the kernel's three kinds of 8-column vectors: the first
     * (all real columns), the last all real, and the part-padding one */
    const int fixed[3] = {0, V / 8 * 8 - 1, V - 1};
    for (int i = 0; i < 3 && i < N; i++) tg[i] = fixed[i];
    void *d_logits = dev_from(logits, n);
    int32_t *d_tg = dev_tokens(tg, N);
    float *d_losses = dev_f32_poisoned(N);

    /* evaluation: dloss = 0 leaves the logits untouched */
    float *ref_l = hbuf(N), *ev = hcopy(logits, n);
    H->classifier_forward_backward(ev, ref_l, tg, N, V, Vp, 0.0f);
    G->classifier_forward_backward(d_logits, d_losses, d_tg, N, V, Vp, 0.0f);
    float *g_l = dev_f32_to_host(d_losses, N), *g_same = dev_to_host(d_logits, n);
    check(op, "loss_eval", g_l, ref_l, N, 2e-5, 2e-5);
    check_same(op, "untouched", g_same, logits, n * 4);
    free(g_l);
    free(g_same);

    /* training: dlogits in place */
    const float dloss = 1.0f / N;
    float *d = hcopy(logits, n);
    H->classifier_forward_backward(d, ref_l, tg, N, V, Vp, dloss);
    float *nan = hbuf(N);
    for (int i = 0; i < N; i++) nan[i] = NAN;
    G->upload(d_losses, nan, N * 4);
    G->classifier_forward_backward(d_logits, d_losses, d_tg, N, V, Vp, dloss);
    g_l = dev_f32_to_host(d_losses, N);
    float *g_d = dev_to_host(d_logits, n);
    check(op, "loss", g_l, ref_l, N, 2e-5, 2e-5);
    check(op, "dlogits", g_d, d, n, 0x1p-7, 1e-5);
    size_t pad_nonzero = 0;
    for (int i = 0; i < N; i++)
        for (int j = V; j < Vp; j++) pad_nonzero += g_d[(size_t)i * Vp + j] != 0.0f;
    char detail[64];
    snprintf(detail, sizeof detail, "nonzero_padding=%zu of %zu", pad_nonzero,
             (size_t)N * (Vp - V));
    check_true(op, "padding", pad_nonzero == 0, detail);
    /* determinism of the row reductions */
    G->upload_f32(d_logits, logits, n);
    G->classifier_forward_backward(d_logits, d_losses, d_tg, N, V, Vp, dloss);
    float *g_d2 = dev_to_host(d_logits, n), *g_l2 = dev_f32_to_host(d_losses, N);
    check_same(op, "determ", g_d2, g_d, n * 4);
    check_same(op, "determ", g_l2, g_l, (size_t)N * 4);

    G->release(d_logits);
    G->release(d_tg);
    G->release(d_losses);
    float *host[] = {logits, ref_l, ev, d, nan, g_l, g_d, g_d2, g_l2};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
    free(tg);
}

/* ------------------------------------------------------------ norm, adamw */

static void test_sum_squares(size_t n, size_t offset, int exact) {
    char op[64];
    snprintf(op, sizeof op, "grad_sum_squares n%zu off%zu%s", n, offset, exact ? " exact" : "");
    float *x = exact ? hbuf(n) : hrand(n, 0, 1e-2);
    if (exact)
        for (size_t i = 0; i < n; i++) x[i] = (i % 3 == 0 ? -1.0f : 0.5f);
    void *buf = G->alloc((n + offset) * 2);
    void *d = ops_at(G, buf, offset);
    G->upload_f32(d, x, n);
    double ref = 0.0, got = 0.0, again = 0.0;
    double *d_sum = G->alloc(sizeof(double));
    H->grad_sum_squares(&ref, x, n);
    G->grad_sum_squares(d_sum, d, n);
    G->download(&got, d_sum, sizeof got);
    G->grad_sum_squares(d_sum, d, n);
    G->download(&again, d_sum, sizeof again);
    G->release(d_sum);
    const double rel = fabs(got - ref) / ref;
    char detail[128];
    snprintf(detail, sizeof detail, "gpu=%.17g ref=%.17g rel=%.2e tol=%.0e", got, ref, rel,
             exact ? 0.0 : 1e-6);
    check_true(op, "sum", exact ? got == ref : rel <= 1e-6, detail);
    snprintf(detail, sizeof detail, "second=%.17g", again);
    check_true(op, "determ", memcmp(&got, &again, sizeof got) == 0, detail);
    G->release(buf);
    free(x);
}

/* The clip factor on the device is the CPU's, bit for bit, on both sides of
 * the clip (factor < 1 and clamped to 1) and with clipping off. */
static void test_clip_scale(void) {
    const double sums[] = {0.0, 1e-12, 0.25, 1.0, 3.7, 1234.5678, 1e9};
    const double max_norms[] = {0.0, -1.0, 0.5, 1.0, 10.0};
    double *d_sum = G->alloc(sizeof(double));
    float *d_scale = G->alloc(sizeof(float));
    int mismatches = 0, clipped = 0;
    char detail[160] = "all equal";
    for (size_t i = 0; i < sizeof sums / sizeof sums[0]; i++)
        for (size_t j = 0; j < sizeof max_norms / sizeof max_norms[0]; j++) {
            float ref = 0.0f, got = 0.0f;
            H->clip_scale(&ref, &sums[i], max_norms[j]);
            G->upload(d_sum, &sums[i], sizeof(double));
            G->clip_scale(d_scale, d_sum, max_norms[j]);
            G->download(&got, d_scale, sizeof got);
            if (ref < 1.0f) clipped++;
            if (memcmp(&ref, &got, sizeof ref) != 0) {
                mismatches++;
                snprintf(detail, sizeof detail, "sum=%g max_norm=%g gpu=%.9g cpu=%.9g", sums[i],
                         max_norms[j], got, ref);
            }
        }
    check_true("clip_scale", "bits", mismatches == 0, detail);
    snprintf(detail, sizeof detail, "%d of 35 cases clip", clipped);
    check_true("clip_scale", "cases", clipped > 5 && clipped < 30, detail);
    G->release(d_sum);
    G->release(d_scale);
}

static uint32_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* masked: weight decay by chunk flags (1, 0, 0, 1, 0, 0, ...), as one launch
 * over a shard of many tensors applies it; else on every element. */
static void test_adamw(size_t n, size_t offset, int masked) {
    char op[64];
    snprintf(op, sizeof op, "adamw n%zu off%zu%s", n, offset, masked ? " masked" : "");
    const size_t n_chunks = (n + ADAMW_DECAY_CHUNK - 1) / ADAMW_DECAY_CHUNK;
    uint8_t *flags = NULL, *d_flags = NULL;
    if (masked) {
        flags = malloc(n_chunks);
        for (size_t c = 0; c < n_chunks; c++) flags[c] = c % 3 == 0;
        d_flags = G->alloc(n_chunks);
        G->upload(d_flags, flags, n_chunks);
    }
    float *master = hrand(n, 0, 0.05), *m = hbuf(n), *v = hbuf(n);
    for (size_t i = 0; i < n; i++) m[i] = v[i] = 0.0f;
    float *mbuf = G->alloc((n + offset) * 4), *vbuf = G->alloc((n + offset) * 4),
          *pbuf = G->alloc((n + offset) * 4);
    float *d_master = pbuf + offset, *d_m = mbuf + offset, *d_v = vbuf + offset;
    G->upload(d_master, master, n * 4);
    G->upload(d_m, m, n * 4);
    G->upload(d_v, v, n * 4);
    void *gbuf = G->alloc((n + offset) * 2), *parbuf = G->alloc((n + offset) * 2);
    void *d_g = ops_at(G, gbuf, offset), *d_par = ops_at(G, parbuf, offset);
    const float betas[2][2] = {{0.9f, 0.95f}, {0.3f, 0.999f}}; /* both lerp formulas */
    for (int t = 1; t <= 3; t++) {
        const float b1 = betas[t == 3][0], b2 = betas[t == 3][1];
        float *grad = hrand(n, 0, 1e-2);
        G->upload_f32(d_g, grad, n);
        dev_poison(d_par, n);
        const float lr = 6e-4f, eps = 1e-8f, wd = 0.1f, scale = t == 2 ? 0.5f : 1.0f;
        float *d_scale = G->alloc(sizeof(float));
        G->upload(d_scale, &scale, sizeof scale);
        const adamw_hyper h = {
            .lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps, .weight_decay = wd, .t = t};
        H->adamw_update(master, master, grad, m, v, n, flags, &scale, &h);
        G->adamw_update(d_par, d_master, d_g, d_m, d_v, n, d_flags, d_scale, &h);
        G->release(d_scale);
        float *g_master = dev_f32_to_host(d_master, n), *g_m = dev_f32_to_host(d_m, n),
              *g_v = dev_f32_to_host(d_v, n), *g_par = dev_to_host(d_par, n);
        const float *ref[3] = {master, m, v};
        float *got[3] = {g_master, g_m, g_v};
        const char *names[3] = {"master", "m", "v"};
        char name[48];
        for (int k = 0; k < 3; k++) {
            uint32_t max_ulp = 0;
            size_t diff = 0;
            for (size_t i = 0; i < n; i++) {
                const uint32_t a = float_bits(got[k][i]), b = float_bits(ref[k][i]);
                const uint32_t d = a > b ? a - b : b - a;
                if (d) diff++;
                if (d > max_ulp || !isfinite(got[k][i])) max_ulp = isfinite(got[k][i]) ? d : ~0u;
            }
            char detail[96];
            snprintf(detail, sizeof detail, "n=%zu t=%d differing=%zu max_ulp=%u (tol 0)", n, t,
                     diff, max_ulp);
            snprintf(name, sizeof name, "%s", names[k]);
            check_true(op, name, diff == 0, detail);
        }
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) bad += g_par[i] != bf16_round(g_master[i]);
        char detail[96];
        snprintf(detail, sizeof detail, "t=%d params!=bf16(master): %zu", t, bad);
        check_true(op, "params", bad == 0, detail);
        free(grad);
        free(g_master);
        free(g_m);
        free(g_v);
        free(g_par);
    }
    G->release(mbuf);
    G->release(vbuf);
    G->release(pbuf);
    G->release(gbuf);
    G->release(parbuf);
    if (masked) G->release(d_flags);
    free(flags);
    free(master);
    free(m);
    free(v);
}

/* A step that must update nothing (non-finite norm or loss): the device's
 * clip factor is CLIP_SKIP_STEP like the CPU's, the loss folds into the norm
 * as on the CPU, and AdamW fed that factor leaves master, m, v and the bf16
 * parameters as they were, bit for bit (vector and scalar kernels). */
static void test_skip_step(size_t n, size_t offset) {
    char op[64];
    snprintf(op, sizeof op, "skip_step n%zu off%zu", n, offset);
    const double sums[] = {NAN, INFINITY, 2.5};
    const double losses[] = {10.5, NAN, INFINITY};
    double *d_sum = G->alloc(sizeof(double)), *d_loss = G->alloc(sizeof(double));
    float *d_scale = G->alloc(sizeof(float));
    int wrong = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double ref_sum = sums[i], got_sum = 0.0;
            float ref = 0.0f, got = 0.0f;
            H->nonfinite_fold(&ref_sum, &losses[j]);
            H->clip_scale(&ref, &ref_sum, 1.0);
            G->upload(d_sum, &sums[i], sizeof(double));
            G->upload(d_loss, &losses[j], sizeof(double));
            G->nonfinite_fold(d_sum, d_loss);
            G->clip_scale(d_scale, d_sum, 1.0);
            G->download(&got, d_scale, sizeof got);
            G->download(&got_sum, d_sum, sizeof got_sum);
            const int skip = i < 2 || j > 0;
            wrong += memcmp(&ref, &got, sizeof ref) != 0 || (got < 0.0f) != skip ||
                     (isnan(got_sum) != isnan(ref_sum));
        }
    char detail[96];
    snprintf(detail, sizeof detail, "%d of 9 (norm, loss) cases differ from the CPU or the rule",
             wrong);
    check_true(op, "factor", wrong == 0, detail);

    float *master = hrand(n, 0, 0.05), *m = hrand(n, 0, 0.01), *v = hrand(n, 0, 0.01);
    for (size_t i = 0; i < n; i++) v[i] = fabsf(v[i]);
    float *grad = hrand(n, 0, 1e-2);
    grad[n / 2] = NAN;
    float *mbuf = G->alloc((n + offset) * 4), *vbuf = G->alloc((n + offset) * 4),
          *pbuf = G->alloc((n + offset) * 4);
    float *d_master = pbuf + offset, *d_m = mbuf + offset, *d_v = vbuf + offset;
    G->upload(d_master, master, n * 4);
    G->upload(d_m, m, n * 4);
    G->upload(d_v, v, n * 4);
    void *gbuf = G->alloc((n + offset) * 2), *parbuf = G->alloc((n + offset) * 2);
    void *d_g = ops_at(G, gbuf, offset), *d_par = ops_at(G, parbuf, offset);
    G->upload_f32(d_g, grad, n);
    G->upload_f32(d_par, master, n);
    float *par_before = dev_to_host(d_par, n);
    const float skip = CLIP_SKIP_STEP;
    G->upload(d_scale, &skip, sizeof skip);
    const adamw_hyper h = {
        .lr = 6e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .t = 3};
    G->adamw_update(d_par, d_master, d_g, d_m, d_v, n, NULL, d_scale, &h);
    float *g_master = dev_f32_to_host(d_master, n), *g_m = dev_f32_to_host(d_m, n),
          *g_v = dev_f32_to_host(d_v, n), *g_par = dev_to_host(d_par, n);
    const int same = memcmp(g_master, master, n * 4) == 0 && memcmp(g_m, m, n * 4) == 0 &&
                     memcmp(g_v, v, n * 4) == 0 && memcmp(g_par, par_before, n * 4) == 0;
    snprintf(detail, sizeof detail, "master, m, v, params unchanged: %s", same ? "yes" : "no");
    check_true(op, "adamw", same, detail);
    G->release(d_sum);
    G->release(d_loss);
    G->release(d_scale);
    G->release(mbuf);
    G->release(vbuf);
    G->release(pbuf);
    G->release(gbuf);
    G->release(parbuf);
    float *host[] = {master, m, v, grad, par_before, g_master, g_m, g_v, g_par};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}

/* ------------------------------------------------------------ memory */

static void test_memory(void) {
    /* upload_f32 rounds to nearest even; download_f32 is exact; zero zeroes */
    const float in[6] = {1.0f,
                         1.00390625f /* 1 + 2^-8: tie, to even (1) */,
                         1.01171875f /* 1 + 3*2^-8: tie, to even (1 + 2^-6) */,
                         -3.1415926f,
                         1e-30f,
                         65504.0f};
    float out[6], expect[6];
    for (int i = 0; i < 6; i++) expect[i] = bf16_round(in[i]);
    void *d = G->alloc(6 * 2);
    G->upload_f32(d, in, 6);
    G->download_f32(out, d, 6);
    check_same("upload_f32/download_f32", "rne", out, expect, sizeof out);
    G->zero(d, 6 * 2);
    G->download_f32(out, d, 6);
    int zeros = 1;
    for (int i = 0; i < 6; i++) zeros &= out[i] == 0.0f;
    check_true("zero", "bytes", zeros, "6 bf16 zeroed");
    G->release(d);
    /* a large conversion spans several staging chunks */
    const size_t n = (size_t)40 << 20;
    float *big = hrand(n, 0, 1.0), *back = hbuf(n);
    void *db = G->alloc(n * 2);
    G->upload_f32(db, big, n);
    G->download_f32(back, db, n);
    check_same("upload_f32/download_f32", "40M", back, big, n * 4);
    G->release(db);
    free(big);
    free(back);
}

/* ------------------------------------------------------------ muon */

/* Muon's three ops on count rows x cols matrices of a shard (gaps between
 * them, as between tensors), the CPU reference given the same bf16
 * gradient: the momentum buffer bit for bit and x to bf16's rounding; the
 * bf16 Newton-Schulz against the fp32 one: every element within 20% of the
 * result's rms and the error's rms within 3% of it (measured on an H100:
 * 1.0%, the worst element 11%: five bf16 iterations; a transposed or
 * misplaced product errs by 100% or more), the result's rms within 5%;
 * the update bit for bit from the same x. */
static void test_muon(int rows, int cols, int count) {
    char op[64];
    snprintf(op, sizeof op, "muon %dx%d x%d", rows, cols, count);
    const size_t n = (size_t)rows * cols, stride = n + 3 * 128, total = stride * count;
    int64_t *offsets = xmalloc((size_t)count * sizeof *offsets);
    for (int k = 0; k < count; k++) offsets[k] = (int64_t)(k * stride + 128);
    int64_t *d_offsets = G->alloc((size_t)count * sizeof *offsets);
    G->upload(d_offsets, offsets, (size_t)count * sizeof *offsets);
    const muon_batch hb = {rows, cols, count, offsets}, db = {rows, cols, count, d_offsets};
    float *grad = hrand(total, 0, 1e-2), *buf = hrand(total, 0, 1e-2);
    void *d_grad = G->alloc(total * 2);
    G->upload_f32(d_grad, grad, total);
    float *grad_b = dev_to_host(d_grad, total); /* the bf16 values the GPU reads */
    float *d_buf = dev_f32_from(buf, total);
    const float scale = 0.75f;
    float *d_scale = dev_f32_from(&scale, 1);
    float *x = hbuf(n * count);
    void *d_x = G->alloc(n * count * 2);
    H->muon_momentum(x, buf, grad_b, &hb, &scale, 0.95f);
    G->muon_momentum(d_x, d_buf, d_grad, &db, d_scale, 0.95f);
    float *g_buf = dev_f32_to_host(d_buf, total), *g_x = dev_to_host(d_x, n * count);
    check_same(op, "buf", g_buf, buf, total * 4);
    check(op, "x", g_x, x, n * count, 1.0 / 256, 0.0);

    /* the same bf16 x into both orthogonalisations */
    for (size_t i = 0; i < n * count; i++) x[i] = g_x[i];
    H->muon_orthogonalize(x, count, rows, cols);
    G->muon_orthogonalize(d_x, count, rows, cols);
    float *g_o = dev_to_host(d_x, n * count);
    check(op, "orth", g_o, x, n * count, 0.0, 0.20);
    double ss_ref = 0, ss_gpu = 0, ss_err = 0;
    for (size_t i = 0; i < n * count; i++) {
        ss_ref += (double)x[i] * x[i];
        ss_gpu += (double)g_o[i] * g_o[i];
        ss_err += ((double)g_o[i] - x[i]) * ((double)g_o[i] - x[i]);
    }
    char detail[96];
    snprintf(detail, sizeof detail, "rms gpu/cpu %.4f (tol 5%%), error rms / rms %.4f (tol 3%%)",
             sqrt(ss_gpu / ss_ref), sqrt(ss_err / ss_ref));
    check_true(op, "orth rms",
               fabs(sqrt(ss_gpu / ss_ref) - 1.0) < 0.05 && sqrt(ss_err / ss_ref) < 0.03, detail);

    float *master = hrand(total, 0, 0.05);
    float *d_master = dev_f32_from(master, total);
    void *d_par = dev_poisoned(total);
    const muon_hyper h = {.momentum = 0.95f,
                          .lr = 0.02f,
                          .weight_decay = 0.01f,
                          .scale = muon_shape_scale(rows, cols)};
    H->muon_apply(master, master, g_o, &hb, &scale, &h);
    G->muon_apply(d_par, d_master, d_x, &db, d_scale, &h);
    float *g_master = dev_f32_to_host(d_master, total), *g_par = dev_to_host(d_par, total);
    check_same(op, "master", g_master, master, total * 4);
    size_t bad = 0;
    for (int k = 0; k < count; k++)
        for (size_t j = 0; j < n; j++)
            bad += g_par[offsets[k] + j] != bf16_round(g_master[offsets[k] + j]);
    snprintf(detail, sizeof detail, "params!=bf16(master): %zu", bad);
    check_true(op, "params", bad == 0, detail);

    const float skip = CLIP_SKIP_STEP;
    G->upload(d_scale, &skip, sizeof skip);
    G->muon_momentum(d_x, d_buf, d_grad, &db, d_scale, 0.95f);
    G->muon_apply(d_par, d_master, d_x, &db, d_scale, &h);
    float *s_buf = dev_f32_to_host(d_buf, total), *s_master = dev_f32_to_host(d_master, total);
    check_true(op, "skip",
               memcmp(s_buf, g_buf, total * 4) == 0 && memcmp(s_master, g_master, total * 4) == 0,
               "a skipped step changes neither buf nor master");
    free(s_buf);
    free(s_master);
    free(g_master);
    free(g_par);
    free(master);
    G->release(d_master);
    G->release(d_par);
    free(g_o);
    free(g_buf);
    free(g_x);
    free(x);
    free(grad);
    free(grad_b);
    free(buf);
    free(offsets);
    G->release(d_offsets);
    G->release(d_grad);
    G->release(d_buf);
    G->release(d_scale);
    G->release(d_x);
}

int main(void) {
    if (cuda_device_count() < 1) {
        printf("test_ops_cuda: no GPU visible, skipped\n");
        return 77;
    }
    char name[128];
    cuda_device_describe(0, name, sizeof name);
    printf("test_ops_cuda on %s\n", name);
    ops_cuda_init(0, NULL);
    rng_seed(&rng, 20240520);

    test_memory();

    test_encoder(4, 256, 768, 50304, 0);
    test_encoder(3, 7, 64, 100, 0);
    test_encoder(8, 64, 128, 1000, 1);
    test_encoder(2, 100, 64, 50, 2); /* 200 rows: one run over 7 tiles, the last partial */
    test_encoder(4, 250, 256, 1000, 3);

    /* the kernels' widths: 1 (C = 64), 3, 4, 5, 7 and 8 vectors of 8 a lane
     * (C = 2048, the largest), and row counts that leave the backward's
     * blocks uneven */
    test_layernorm(1024, 768);
    test_layernorm(7, 64);
    test_layernorm(33, 1600);
    test_layernorm(4099, 1600);
    test_layernorm(1031, 1024);
    test_layernorm(517, 1280);
    test_layernorm(300, 2048);

    test_gelu_form();
    test_gelu_choice();
    /* the defaults (on sm_90a our own GEMM for the GELU products, the
     * forward's where timed faster), ours alone, cuBLASLt's epilogues,
     * none, and the two off by default */
    const int cublaslt = MATMUL_FUSE_DEFAULT & ~MATMUL_FUSE_OWN_GEMM,
              own = MATMUL_FUSE_DEFAULT & ~MATMUL_FUSE_OWN_GEMM_TIMED,
              dgelu_bgrad = cublaslt | MATMUL_FUSE_DGELU_BGRAD;
    const int fusions[6] = {MATMUL_FUSE_DEFAULT,
                            own,
                            cublaslt,
                            0,
                            dgelu_bgrad,
                            MATMUL_FUSE_DEFAULT | MATMUL_FUSE_BGRADB};
    for (int f = 0; f < 6; f++) {
        test_matmul(1024, 768, 3072, 1, 1, 0, fusions[f]); /* fc (+ fc_proj's backward_gelu) */
        test_matmul(7, 64, 256, 1, 1, 1, fusions[f]);      /* odd rows, 128-byte aligned */
    }
    /* our GEMM's tiles: several tiles a warpgroup (more tiles than SMs),
     * activations a row into their buffers; a K of 25 steps (GPT-2 XL's
     * C = 1600) */
    test_matmul(4096, 128, 512, 1, 1, 1, own);
    test_matmul(256, 1600, 6400, 1, 1, 0, own);
    const int D = MATMUL_FUSE_DEFAULT;
    test_matmul(1024, 768, 2304, 0, 1, 0, D); /* qkv */
    test_matmul(1024, 768, 768, 0, 1, 0, D);  /* attn proj */
    test_matmul(1024, 3072, 768, 0, 1, 0, D); /* fc proj */
    test_matmul(256, 768, 50304, 0, 0, 0, D); /* lm head: no bias */
    test_matmul(5, 72, 40, 0, 1, 1, D);       /* 16-byte aligned rows */
    test_transient_shapes();
    test_matmul_residual(1024, 768, 768, 1);  /* attn.c_proj */
    test_matmul_residual(1024, 3072, 768, 1); /* mlp.c_proj */
    test_matmul_residual(7, 64, 256, 0);

    test_gelu_forward((size_t)1024 * 3072);
    test_gelu_forward(8);
    test_loss_accumulate(32768);
    test_loss_accumulate(5);

    test_classifier(256, 50257, 50304, 2.0);
    test_classifier(7, 100, 128, 4.0);
    test_classifier(5, 120001, 120064, 3.0); /* a row too big for shared memory */

    test_sum_squares(10000003, 0, 0);
    test_sum_squares(10000003, 0, 1);
    test_sum_squares(1001, 3, 0);

    test_clip_scale();
    test_adamw(1000003, 0, 0);
    test_adamw(1001, 1, 0);
    test_adamw(1000003, 0, 1);
    test_adamw(100 * ADAMW_DECAY_CHUNK + 5, 0, 1); /* a partial last chunk, scalar tail */
    test_skip_step(1000003, 0);
    test_skip_step(1001, 1);
    /* Muon's shapes at 124M: square (c_attn's three, attn.c_proj), wide
     * (mlp.c_proj), tall (c_fc); and a single small one */
    test_muon(768, 768, 4);
    test_muon(768, 3072, 2);
    test_muon(3072, 768, 2);
    test_muon(64, 256, 1);

    printf("SUMMARY test_ops_cuda: %d checks, %d failed: %s\n", n_checks, n_failed,
           n_failed ? "FAIL" : "PASS");
    return n_failed ? 1 : 0;
}
