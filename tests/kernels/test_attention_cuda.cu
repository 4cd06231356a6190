/* GPU test of the causal flash attention kernels (kernels/cuda/attention*.cu):
 * forward (out, lse) and backward (dq, dk, dv) against a float64 host
 * reference of plain causal attention, computed from the same bf16-rounded
 * inputs. Exits 77 (skipped) when there is no GPU.
 *
 * Metric per tensor: ||ours - ref||_2 / ||ref||_2. Tolerance 1e-2 for the bf16
 * tensors: bf16 keeps 8 significant bits (unit roundoff 2^-9 ~ 2e-3); the
 * kernels round P and dS to bf16 once before their matmuls and the results
 * once on output, each a random relative error of ~1e-3 that partly averages
 * out, so a correct kernel lands at a few 1e-3, while an indexing, masking or
 * softmax bug gives errors of order 1. lse is fp32 end to end: 1e-4.
 * Outputs and workspace are filled with NaN bytes before each call, and every
 * element must come back finite (every element written). T = 1000 and the
 * small odd lengths exercise partial tiles. Every kernel production can run
 * here is tested: the default family; where the Hopper (wgmma) kernels run,
 * also their deterministic mode (attention_cuda_options.deterministic: the
 * same tolerances, and dqkv of a second backward bit for bit the first's)
 * and the mma.sync kernels (attention_hopper=false, and every other GPU's
 * path). Tuning builds (GPT2_ATTN_TUNING) add every variant by name, the
 * wgmma kernels' cp.async fallbacks among them. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "attention_harness.cuh"
#include "kernels/attention.h"
#ifdef GPT2_ATTN_TUNING
#include "kernels/cuda/tuning/attention_tuning.h"
#endif

static const double TOL_BF16 = 1e-2, TOL_LSE = 1e-4;

static uint16_t f2bf(float f) { // round to nearest even (inputs are finite)
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static float bf2f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double rng_uniform(void) { // splitmix64 -> (0, 1)
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return ((z >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double rng_normal(void) {
    return sqrt(-2.0 * log(rng_uniform())) * cos(6.283185307179586 * rng_uniform());
}

/* float64 causal attention, forward and backward, over every (b, h) in parallel. */
static void reference(std::vector<double> &out, std::vector<double> &lse, std::vector<double> &dqkv,
                      const std::vector<float> &qkv, const std::vector<float> &dout, int B, int T,
                      int NH, int HS) {
    const int C = NH * HS;
    const size_t ld = (size_t)3 * C;
    const double scale = 1.0 / sqrt((double)HS);
    out.assign((size_t)B * T * C, 0.0);
    lse.assign((size_t)B * NH * T, 0.0);
    dqkv.assign((size_t)B * T * ld, 0.0);
    auto head = [&](int bh) {
        const int b = bh / NH, h = bh % NH;
        const float *x = qkv.data() + (size_t)b * T * ld + (size_t)h * HS;
        const float *dy = dout.data() + (size_t)b * T * C + (size_t)h * HS;
        double *y = out.data() + (size_t)b * T * C + (size_t)h * HS;
        double *dx = dqkv.data() + (size_t)b * T * ld + (size_t)h * HS;
        std::vector<double> p(T);
        for (int t = 0; t < T; t++) {
            double mx = -INFINITY;
            for (int s = 0; s <= t; s++) {
                double acc = 0.0;
                for (int d = 0; d < HS; d++)
                    acc += (double)x[(size_t)t * ld + d] * x[(size_t)s * ld + C + d];
                p[s] = acc * scale;
                mx = std::max(mx, p[s]);
            }
            double sum = 0.0;
            for (int s = 0; s <= t; s++) sum += exp(p[s] - mx);
            const double l = mx + log(sum);
            lse[(size_t)bh * T + t] = l;
            for (int s = 0; s <= t; s++) {
                const double ps = exp(p[s] - l);
                for (int d = 0; d < HS; d++)
                    y[(size_t)t * C + d] += ps * x[(size_t)s * ld + 2 * C + d];
            }
        }
        for (int t = 0; t < T; t++) {
            double D = 0.0;
            for (int d = 0; d < HS; d++) D += (double)dy[(size_t)t * C + d] * y[(size_t)t * C + d];
            const double l = lse[(size_t)bh * T + t];
            for (int s = 0; s <= t; s++) {
                double sc = 0.0, dp = 0.0;
                for (int d = 0; d < HS; d++) {
                    sc += (double)x[(size_t)t * ld + d] * x[(size_t)s * ld + C + d];
                    dp += (double)dy[(size_t)t * C + d] * x[(size_t)s * ld + 2 * C + d];
                }
                const double ps = exp(sc * scale - l), ds = ps * (dp - D) * scale;
                for (int d = 0; d < HS; d++) {
                    dx[(size_t)t * ld + d] += ds * x[(size_t)s * ld + C + d];
                    dx[(size_t)s * ld + C + d] += ds * x[(size_t)t * ld + d];
                    dx[(size_t)s * ld + 2 * C + d] += ps * dy[(size_t)t * C + d];
                }
            }
        }
    };
    const int nthreads = std::max(1u, std::min(std::thread::hardware_concurrency(), 64u));
    std::vector<std::thread> pool;
    for (int w = 0; w < nthreads; w++)
        pool.emplace_back([&, w] {
            for (int bh = w; bh < B * NH; bh += nthreads) head(bh);
        });
    for (auto &th : pool) th.join();
}

typedef struct {
    double rel;       // ||ours - ref|| / ||ref||
    size_t nonfinite; // elements left unwritten (NaN poison) or overflowed
    size_t worst;     // index of the largest |ours - ref|
} cmp_result;

/* Compares n elements: ours at ours[i*stride_o + off(i)], ref likewise, where
 * element i is (row i / w, column i % w) of a strided slab. */
static cmp_result compare(const double *ref, size_t ref_ld, const float *ours, size_t ours_ld,
                          size_t rows, size_t w) {
    cmp_result r = {0.0, 0, 0};
    double num = 0.0, den = 0.0, worst = -1.0;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < w; j++) {
            const double a = ours[i * ours_ld + j], e = ref[i * ref_ld + j];
            if (!isfinite(a)) {
                r.nonfinite++;
                continue;
            }
            num += (a - e) * (a - e);
            den += e * e;
            if (fabs(a - e) > worst) {
                worst = fabs(a - e);
                r.worst = i * w + j;
            }
        }
    r.rel = den > 0 ? sqrt(num / den) : sqrt(num);
    return r;
}

typedef struct {
    int B, T, NH, HS;
} test_case;

/* variant: NULL (the kernels opt selects), or a tuning variant's name, run
 * in place of the production forward or backward main kernel. */
static int run_case(const test_case &tc, const attention_cuda_options *opt,
                    const char *variant = NULL) {
    const bool deterministic = opt && opt->deterministic;
    const int B = tc.B, T = tc.T, NH = tc.NH, HS = tc.HS, C = NH * HS;
    const size_t n_qkv = (size_t)B * T * 3 * C, n_out = (size_t)B * T * C,
                 n_lse = (size_t)B * NH * T;
    rng_state = 0x1234567ull + (uint64_t)T * 1000003ull + (uint64_t)HS * 7919ull + B * 31 + NH;

    // inputs, rounded to bf16; the reference sees the rounded values
    std::vector<uint16_t> h_qkv(n_qkv), h_dout(n_out);
    std::vector<float> f_qkv(n_qkv), f_dout(n_out);
    for (size_t i = 0; i < n_qkv; i++) {
        const int part = (int)((i / C) % 3); // q, k: std 1.5 (peaky softmax); v: std 1
        h_qkv[i] = f2bf((float)(rng_normal() * (part < 2 ? 1.5 : 1.0)));
        f_qkv[i] = bf2f(h_qkv[i]);
    }
    for (size_t i = 0; i < n_out; i++) {
        h_dout[i] = f2bf((float)rng_normal());
        f_dout[i] = bf2f(h_dout[i]);
    }
    static std::vector<double> r_out, r_lse, r_dqkv;
    static test_case cached = {0, 0, 0, 0};
    if (memcmp(&cached, &tc, sizeof tc) != 0) {
        reference(r_out, r_lse, r_dqkv, f_qkv, f_dout, B, T, NH, HS);
        cached = tc;
    }

    // dqkv's column sums are added (+=) to these starting values
    std::vector<uint16_t> h_colsum0(3 * (size_t)C);
    for (size_t j = 0; j < h_colsum0.size(); j++)
        h_colsum0[j] = f2bf(0.25f * (float)(j % 7) - 0.75f);

    void *d_qkv, *d_dout, *d_out, *d_dqkv, *d_ws, *d_colsum;
    float *d_lse;
    const size_t ws = attention_backward_workspace_bytes(B, T, C, NH);
    CK(cudaMalloc(&d_qkv, n_qkv * 2));
    CK(cudaMalloc(&d_dout, n_out * 2));
    CK(cudaMalloc(&d_out, n_out * 2));
    CK(cudaMalloc(&d_dqkv, n_qkv * 2));
    CK(cudaMalloc(&d_lse, n_lse * 4));
    CK(cudaMalloc(&d_ws, ws));
    CK(cudaMalloc(&d_colsum, 3 * (size_t)C * 2));
    CK(cudaMemcpy(d_colsum, h_colsum0.data(), 3 * (size_t)C * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_qkv, h_qkv.data(), n_qkv * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_dout, h_dout.data(), n_out * 2, cudaMemcpyHostToDevice));
    // poison: 0xFF bytes are NaN in bf16 and fp32
    CK(cudaMemset(d_out, 0xFF, n_out * 2));
    CK(cudaMemset(d_lse, 0xFF, n_lse * 4));
    CK(cudaMemset(d_dqkv, 0xFF, n_qkv * 2));
    CK(cudaMemset(d_ws, 0xFF, ws));
#ifdef GPT2_ATTN_TUNING
    bool variant_bwd = false;
    for (int i = 0; variant && i < attention_cuda_variant_count(); i++)
        if (strcmp(attention_cuda_variant_info(i)->name, variant) == 0)
            variant_bwd = attention_cuda_variant_info(i)->backward;
    if (variant && !variant_bwd)
        attention_forward_cuda_variant(variant, d_out, d_lse, d_qkv, B, T, C, NH, 0);
    else
#endif
        attention_forward_cuda(d_out, d_lse, d_qkv, B, T, C, NH, opt, 0);
    CK(cudaGetLastError());
#ifdef GPT2_ATTN_TUNING
    if (variant_bwd)
        attention_backward_cuda_variant(variant, d_dqkv, d_dout, d_qkv, d_out, d_lse, B, T, C, NH,
                                        d_colsum, d_ws, 0);
    else
#endif
        attention_backward_cuda(d_dqkv, d_dout, d_qkv, d_out, d_lse, B, T, C, NH, d_colsum, d_ws,
                                opt, 0);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<uint16_t> g_colsum(3 * (size_t)C);
    CK(cudaMemcpy(g_colsum.data(), d_colsum, 3 * (size_t)C * 2, cudaMemcpyDeviceToHost));

    std::vector<uint16_t> g_out(n_out), g_dqkv(n_qkv);
    int repeats = 1; // deterministic mode: a second backward gives the same bits
    if (deterministic) {
        std::vector<uint16_t> first(n_qkv);
        CK(cudaMemcpy(first.data(), d_dqkv, n_qkv * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemset(d_dqkv, 0xFF, n_qkv * 2));
        CK(cudaMemcpy(d_colsum, h_colsum0.data(), 3 * (size_t)C * 2, cudaMemcpyHostToDevice));
        attention_backward_cuda(d_dqkv, d_dout, d_qkv, d_out, d_lse, B, T, C, NH, d_colsum, d_ws,
                                opt, 0);
        CK(cudaGetLastError());
        CK(cudaMemcpy(g_dqkv.data(), d_dqkv, n_qkv * 2, cudaMemcpyDeviceToHost));
        std::vector<uint16_t> again(3 * (size_t)C);
        CK(cudaMemcpy(again.data(), d_colsum, 3 * (size_t)C * 2, cudaMemcpyDeviceToHost));
        repeats = memcmp(first.data(), g_dqkv.data(), n_qkv * 2) == 0 &&
                  memcmp(again.data(), g_colsum.data(), 3 * (size_t)C * 2) == 0;
    }
    std::vector<float> g_lse(n_lse), f_out(n_out), f_dqkv(n_qkv);
    CK(cudaMemcpy(g_out.data(), d_out, n_out * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(g_dqkv.data(), d_dqkv, n_qkv * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(g_lse.data(), d_lse, n_lse * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n_out; i++) f_out[i] = bf2f(g_out[i]);
    for (size_t i = 0; i < n_qkv; i++) f_dqkv[i] = bf2f(g_dqkv[i]);
    CK(cudaFree(d_qkv));
    CK(cudaFree(d_dout));
    CK(cudaFree(d_out));
    CK(cudaFree(d_dqkv));
    CK(cudaFree(d_lse));
    CK(cudaFree(d_ws));
    CK(cudaFree(d_colsum));

    // The column sums, summed here in double: off by the final bf16
    // rounding and the kernels' fp32 sums at most. q: the stored dQ's; k:
    // zero (softmax ignores a shift of every key's score by the same
    // amount); v: dO's (each query's probabilities add up to 1).
    const size_t W = 3 * (size_t)C;
    std::vector<double> want(W), mag(W);
    for (size_t j = 0; j < W; j++) {
        want[j] = bf2f(h_colsum0[j]);
        mag[j] = fabs(want[j]);
    }
    for (size_t r = 0; r < (size_t)B * T; r++)
        for (size_t j = 0; j < (size_t)C; j++) {
            const double q = f_dqkv[r * W + j], d = f_dout[r * C + j];
            want[j] += q, mag[j] += fabs(q);
            want[2 * C + j] += d, mag[2 * C + j] += fabs(d);
        }
    double colsum_err = 0.0; // the worst error over its bound (a NaN: infinite)
    size_t colsum_worst = 0;
    for (size_t j = 0; j < W; j++) {
        double err =
            fabs(bf2f(g_colsum[j]) - want[j]) / (0.0079 * fabs(want[j]) + 1e-5 * mag[j] + 1e-30);
        if (err != err) err = INFINITY;
        if (err > colsum_err) colsum_err = err, colsum_worst = j;
    }
    // the two identities in the float64 reference's gradients: per column,
    // sum dK = 0 and sum dV = sum dO, to 1e-9 of the sums of magnitudes
    double identity_err = 0.0;
    for (size_t j = 0; j < (size_t)C; j++) {
        double sk = 0, mk = 0, sv = 0, mv = 0;
        for (size_t r = 0; r < (size_t)B * T; r++) {
            const double dk = r_dqkv[r * W + C + j], dv = r_dqkv[r * W + 2 * C + j],
                         d = f_dout[r * C + j];
            sk += dk, mk += fabs(dk), sv += dv - d, mv += fabs(dv) + fabs(d);
        }
        identity_err = fmax(identity_err,
                            fmax(fabs(sk) / (1e-9 * mk + 1e-300), fabs(sv) / (1e-9 * mv + 1e-300)));
    }

    const char *names[5] = {"out", "lse", "dq", "dk", "dv"};
    cmp_result res[5];
    res[0] = compare(r_out.data(), C, f_out.data(), C, (size_t)B * T, C);
    res[1] = compare(r_lse.data(), 1, g_lse.data(), 1, n_lse, 1);
    for (int k = 0; k < 3; k++) // q, k, v slabs of dqkv: rows B*T, width C, stride 3C
        res[2 + k] = compare(r_dqkv.data() + (size_t)k * C, 3 * (size_t)C,
                             f_dqkv.data() + (size_t)k * C, 3 * (size_t)C, (size_t)B * T, C);
    int ok = 1;
    printf("B=%d T=%4d NH=%d HS=%3d [%s%s]:", B, T, NH, HS,
           variant ? variant : attention_cuda_kernels(HS, opt),
           deterministic ? ", deterministic" : "");
    for (int k = 0; k < 5; k++) {
        const double tol = k == 1 ? TOL_LSE : TOL_BF16;
        const int good = res[k].rel <= tol && res[k].nonfinite == 0;
        ok &= good;
        printf(" %s %.2e%s", names[k], res[k].rel, good ? "" : "!");
        if (res[k].nonfinite) printf("(%zu unwritten)", res[k].nonfinite);
    }
    const int colsum_ok = colsum_err <= 1.0, identity_ok = identity_err <= 1.0;
    printf(" colsum %.2f%s", colsum_err, colsum_ok ? "" : "!");
    if (!identity_ok)
        printf(" sum dK = 0, sum dV = sum dO: off by %.2f of the bound!", identity_err);
    ok &= colsum_ok & identity_ok;
    if (!colsum_ok) printf(" (column %zu: %g)", colsum_worst, (double)bf2f(g_colsum[colsum_worst]));
    if (deterministic) {
        printf(" dqkv %s", repeats ? "repeats" : "differs between runs!");
        ok &= repeats;
    }
    printf("  %s\n", ok ? "ok" : "FAIL");
    for (int k = 0; k < 5 && !ok; k++) { // where it went wrong, for debugging
        if (res[k].rel <= (k == 1 ? TOL_LSE : TOL_BF16) && !res[k].nonfinite) continue;
        const size_t w = k == 1 ? 1 : (size_t)C, i = res[k].worst, row = i / w, col = i % w;
        double ours, ref;
        if (k == 0)
            ours = f_out[i], ref = r_out[i];
        else if (k == 1)
            ours = g_lse[i], ref = r_lse[i];
        else
            ours = f_dqkv[row * 3 * C + (k - 2) * C + col],
            ref = r_dqkv[row * 3 * C + (k - 2) * C + col];
        if (k == 1)
            printf("    worst lse: bh %zu t %zu: %g vs %g\n", row / T, row % T, ours, ref);
        else
            printf("    worst %s: b %zu t %zu h %zu d %zu: %g vs %g\n", names[k], row / T, row % T,
                   col / HS, col % HS, ours, ref);
    }
    return ok;
}

/* --quick: only the cases with T <= 256 (for compute-sanitizer runs).
 * --racecheck: those less the one whose schedule goes to global memory
 * ({2500, 64, 4, 64}): racecheck watches shared memory only, and that case's
 * 10,000 heads keep it running for many minutes.
 * --variants=TEXT (tuning builds): of the tuning variants only those whose
 * names contain TEXT (the production kernels run all the same). */
int main(int argc, char **argv) {
    int racecheck = 0, quick = 0;
    const char *variants = "";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--racecheck") == 0)
            racecheck = quick = 1;
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strncmp(argv[i], "--variants=", 11) == 0)
            variants = argv[i] + 11;
        else {
            fprintf(
                stderr,
                "test_attention_cuda: unknown argument '%s' (use --quick, --racecheck, --variants=TEXT)\n",
                argv[i]);
            return 2;
        }
    }
#ifndef GPT2_ATTN_TUNING
    if (*variants) printf("--variants: this build has no tuning variants (GPT2_ATTN_TUNING)\n");
#endif
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("test_attention_cuda: no GPU, skipped\n");
        return 77;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("test_attention_cuda on %s (sm_%d%d); tolerance rel L2 %.0e (bf16), %.0e (lse)\n",
           prop.name, prop.major, prop.minor, TOL_BF16, TOL_LSE);
    // {40, 256, 4, HS} and {3, 1100, 16, HS}: more units of work than an H100
    // has SMs, so that the blocks of a persistent backward (and, at head
    // size 128, forward) walk several (an odd number of key blocks, 9, in
    // the second); {2500, 64, 4, 64}: so many
    // (75 a block) that its blocks' rows of the schedule outgrow their
    // shared memory and go to the workspace; {4500, 16, 4, 128}: so many
    // (136 a block) that the persistent forward's table outgrows its shared
    // memory and the forward runs one query tile a block
    const test_case cases[] = {
        {1, 1, 1, 64},      {2, 64, 3, 64},    {3, 200, 2, 64},   {2, 1000, 2, 64},
        {2, 1024, 2, 64},   {2, 2048, 2, 64},  {1, 4096, 1, 64},  {40, 256, 4, 64},
        {3, 1100, 16, 64},  {2500, 64, 4, 64}, {1, 1, 1, 128},    {2, 64, 3, 128},
        {2, 77, 2, 128},    {3, 200, 2, 128},  {2, 1000, 2, 128}, {2, 1024, 2, 128},
        {2, 2048, 2, 128},  {1, 4096, 1, 128}, {40, 256, 4, 128}, {3, 1100, 16, 128},
        {4500, 16, 4, 128},
    };
    // Where the Hopper (wgmma) kernels are the default, the mma.sync ones are
    // tested too: they are the path of every other GPU.
    const attention_cuda_options defaults = {true, false}, deterministic = {true, true},
                                 mma = {false, false}, mma_deterministic = {false, true};
    const char *family = attention_cuda_kernels(64, &defaults),
               *mma_family = attention_cuda_kernels(64, &mma);
    const bool hopper = strcmp(family, mma_family) != 0;
    printf("kernels by default: %s\n", family);
    int failed = 0, total = 0;
    if (attention_cuda_options_supported(&mma_deterministic)) { // the mma.sync kernels have none
        printf("deterministic mode accepted for the mma.sync kernels  FAIL\n");
        failed++;
    }
    if (hopper && !attention_cuda_options_supported(&deterministic)) {
        printf("deterministic mode refused where the wgmma kernels run  FAIL\n");
        failed++;
    }
    for (const test_case &tc : cases) {
        if (quick && tc.T > 256) continue;
        if (racecheck && tc.B * tc.NH >= 10000) continue;
#ifdef GPT2_ATTN_TUNING
        for (int i = 0; i < attention_cuda_variant_count(); i++) { // every variant that runs here
            const attention_cuda_variant *v = attention_cuda_variant_info(i);
            if (v->head_size != tc.HS || (!hopper && strcmp(v->family, mma_family) != 0) ||
                !strstr(v->name, variants))
                continue;
            failed += !run_case(tc, NULL, v->name);
            total++;
        }
#endif
        failed += !run_case(tc, &defaults);
        total++;
        if (hopper) {
            failed += !run_case(tc, &deterministic);
            failed += !run_case(tc, &mma);
            total += 2;
        }
    }
    printf("test_attention_cuda: %d/%d cases passed\n", total - failed, total);
    return failed ? 1 : 0;
}
