/* Benchmark of the CUDA kernel table (ops_cuda) at GPT-2 124M shapes: the
 * production entry points, timed with CUDA events on the compute stream
 * (median of REPS after WARMUP), one line per op:
 *   BENCH <op> <shape> median_us=<t> <rate>
 * rate is TFLOP/s for GEMMs and GB/s (bytes each kernel must move, read
 * once and written once) for the memory-bound ops.
 *
 *   bench_ops_cuda [tokens=32768] [autotune=1] [channels=768] [only=]
 * (channels: the model width C, 1600 is GPT-2 1.5B's; only: a prefix of the
 * op names to time, e.g. "layernorm") */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "cuda_timing.cuh"
#include "kernels/cuda/cuda_check.h"
#ifdef GPT2_LN_TUNING
#include "kernels/cuda/tuning/layernorm_tuning.h"
#endif
#include "kernels/matmul.h"
#include "kernels/ops.h"

enum { WARMUP = 3, REPS = 20 };
static const kernel_ops *G = &ops_cuda;

template <typename F> static double time_us(F f) {
    return median_us(ops_cuda_stream(), WARMUP, REPS, f);
}

/* device buffer of n bf16 values, N(0, std) */
static void *rand_bf16(size_t n, float std, unsigned seed) {
    std::vector<float> h(n);
    srand(seed);
    for (size_t i = 0; i < n; i++)
        h[i] = std * ((float)rand() / RAND_MAX * 2.0f - 1.0f) * 1.7320508f;
    void *d = G->alloc(n * 2);
    G->upload_f32(d, h.data(), n);
    return d;
}

static float *rand_f32(size_t n, float lo, float hi, unsigned seed) {
    std::vector<float> h(n);
    srand(seed);
    for (size_t i = 0; i < n; i++) h[i] = lo + (hi - lo) * (float)rand() / RAND_MAX;
    float *d = (float *)G->alloc(n * 4);
    G->upload(d, h.data(), n * 4);
    return d;
}

static const char *g_only = ""; /* time only the ops whose names start with it */
static bool wanted(const char *op) { return strncmp(op, g_only, strlen(g_only)) == 0; }

template <typename F> static void line_gemm(const char *op, const char *shape, F f, double flops) {
    if (!wanted(op)) return;
    const double us = time_us(f);
    printf("BENCH %-28s %-26s median_us=%9.1f %7.1f TFLOP/s\n", op, shape, us, flops / us * 1e-6);
}
template <typename F> static void line_mem(const char *op, const char *shape, F f, double bytes) {
    if (!wanted(op)) return;
    const double us = time_us(f);
    printf("BENCH %-28s %-26s median_us=%9.1f %7.1f GB/s\n", op, shape, us, bytes / us * 1e-3);
}

int main(int argc, char **argv) {
    const int N = argc > 1 ? atoi(argv[1]) : 32768, C = argc > 3 ? atoi(argv[3]) : 768;
    const int V = 50257, Vp = 50304, T = 1024, B = N / T > 0 ? N / T : 1;
    if (C <= 0 || C % 64 != 0) {
        fprintf(stderr, "bench_ops_cuda: channels = %d: give a positive multiple of 64\n", C);
        return 2;
    }
    cuda_backend_options opt = cuda_backend_defaults();
    if (argc > 4) g_only = argv[4];
    if (argc > 2) opt.matmul_autotune = atoi(argv[2]) != 0; /* 0: the heuristic's algorithms */
    ops_cuda_init(0, &opt);
    char name[256];
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    snprintf(name, sizeof name, "%s", prop.name);
    printf("bench_ops_cuda on %s, %d tokens (B=%d, T=%d), C=%d\n", name, N, B, T, C);
    char shape[64];

    /* activations */
    void *x = rand_bf16((size_t)N * C, 1.0f, 1), *y = rand_bf16((size_t)N * C, 1.0f, 2);
    void *out = rand_bf16((size_t)N * C, 1.0f, 3), *res = rand_bf16((size_t)N * C, 1.0f, 4);
    void *big = rand_bf16((size_t)N * 4 * C, 1.0f, 5),
         *big2 = rand_bf16((size_t)N * 4 * C, 1.0f, 6);
    /* the GELU backward's pre, apart from its dinp (big) as in the trainer */
    void *pre = rand_bf16((size_t)N * 4 * C, 1.0f, 23);
    void *w = rand_bf16((size_t)4 * C * C, 0.02f, 7), *dw = rand_bf16((size_t)4 * C * C, 0.02f, 8);
    void *bias = rand_bf16(4 * C, 0.02f, 9), *dbias = rand_bf16(4 * C, 0.02f, 10);
    void *lnw = rand_bf16(C, 1.0f, 11), *lnb = rand_bf16(C, 0.1f, 12);
    float *mean = rand_f32(N, -0.1f, 0.1f, 13), *rstd = rand_f32(N, 0.9f, 1.1f, 14);
    std::vector<int32_t> htok(N);
    for (int i = 0; i < N; i++) htok[i] = (int32_t)((i * 2654435761u) % V);
    int32_t *tok = (int32_t *)G->alloc((size_t)N * 4);
    G->upload(tok, htok.data(), (size_t)N * 4);
    void *wte = rand_bf16((size_t)Vp * C, 0.02f, 15), *dwte = rand_bf16((size_t)Vp * C, 0.02f, 16);
    void *wpe = rand_bf16((size_t)T * C, 0.02f, 17), *dwpe = rand_bf16((size_t)T * C, 0.02f, 18);
    const double act = (double)N * C * 2; /* bytes of one (N, C) bf16 tensor */

    snprintf(shape, sizeof shape, "N%d C%d", N, C);
    line_mem(
        "encoder_forward", shape, [&] { G->encoder_forward(out, tok, wte, wpe, B, T, C); },
        3 * act);
    line_mem(
        "encoder_backward", shape, [&] { G->encoder_backward(dwte, dwpe, out, tok, B, T, C, V); },
        3 * act);
    /* as in text: a few tokens fill much of a batch (",", " the", ".") */
    std::vector<int32_t> htext(htok);
    for (int i = 0; i < N; i++)
        if (i % 7 == 0)
            htext[i] = 11;
        else if (i % 11 == 0)
            htext[i] = 13;
        else if (i % 19 == 0)
            htext[i] = 262;
    int32_t *text_tok = (int32_t *)G->alloc((size_t)N * 4);
    G->upload(text_tok, htext.data(), (size_t)N * 4);
    line_mem(
        "encoder_backward (text-like)", shape,
        [&] { G->encoder_backward(dwte, dwpe, out, text_tok, B, T, C, V); }, 3 * act);
    line_mem(
        "layernorm_forward", shape,
        [&] { G->layernorm_forward(out, mean, rstd, x, lnw, lnb, N, C); }, 2 * act);
    line_mem(
        "residual_layernorm_forward", shape,
        [&] { G->residual_layernorm_forward(res, out, mean, rstd, x, y, lnw, lnb, N, C); },
        4 * act);
    line_mem(
        "layernorm_backward", shape,
        [&] { G->layernorm_backward(res, dw, dbias, y, x, lnw, mean, rstd, N, C, NULL); }, 4 * act);
    line_mem(
        "layernorm_backward +colsum", shape,
        [&] { G->layernorm_backward(res, dw, dbias, y, x, lnw, mean, rstd, N, C, lnb); }, 4 * act);
    if (G->layernorm_forward_fp8 && G->layernorm_backward_fp8) {
        /* the LayerNorms of fp8=true: also the FP8 copy of their output and
         * its transposed copy (1 byte an element each), unit scale */
        uint8_t *o8 = (uint8_t *)G->alloc((size_t)N * C), *o8t = (uint8_t *)G->alloc((size_t)N * C);
        fp8_cast_stats *stats = (fp8_cast_stats *)G->alloc(sizeof(fp8_cast_stats));
        float *unit = rand_f32(1, 1.0f, 1.0f, 24);
        line_mem(
            "layernorm_forward_fp8", shape,
            [&] {
                G->layernorm_forward_fp8(NULL, o8, o8t, stats, mean, rstd, x, NULL, lnw, lnb, N, C,
                                         unit, FP8_E4M3);
            },
            2 * act);
        line_mem(
            "residual_layernorm_forward_fp8", shape,
            [&] {
                G->layernorm_forward_fp8(res, o8, o8t, stats, mean, rstd, x, y, lnw, lnb, N, C,
                                         unit, FP8_E4M3);
            },
            4 * act);
        line_mem(
            "layernorm_backward_fp8 +colsum", shape,
            [&] {
                G->layernorm_backward_fp8(res, dw, dbias, y, x, lnw, mean, rstd, N, C, lnb, o8, o8t,
                                          stats, unit, FP8_E5M2);
            },
            5 * act);
    }
#ifdef GPT2_LN_TUNING
    /* LayerNorm backward's tuning variant (its rows copied into shared
     * memory by the copy engine) at 2 to 4 stages a row group, then the
     * production kernel once more: the two production lines apart are the
     * clock's drift over the variants */
    {
        const size_t ws_bytes = layernorm_backward_cuda_workspace_bytes(N, C);
        void *ws = G->alloc(ws_bytes);
        cudaStream_t stream = (cudaStream_t)ops_cuda_stream();
        for (int stages = 2; stages <= 4; stages++)
            for (void *colsum : {(void *)NULL, lnb}) {
                char op[48];
                snprintf(op, sizeof op, "layernorm_backward bulk%d%s", stages,
                         colsum ? " +colsum" : "");
                auto run = [&] {
                    return layernorm_backward_cuda_bulk(stages, res, dw, dbias, y, x, lnw, mean,
                                                        rstd, N, C, colsum, ws, ws_bytes, stream);
                };
                if (!wanted(op)) continue;
                if (!run()) {
                    printf("BENCH %-28s %-26s not run (no sm_90a code here, or no room)\n", op,
                           shape);
                    continue;
                }
                line_mem(op, shape, run, 4 * act);
            }
        line_mem(
            "layernorm_backward (again)", shape,
            [&] { G->layernorm_backward(res, dw, dbias, y, x, lnw, mean, rstd, N, C, NULL); },
            4 * act);
        line_mem(
            "layernorm_backward +colsum (again)", shape,
            [&] { G->layernorm_backward(res, dw, dbias, y, x, lnw, mean, rstd, N, C, lnb); },
            4 * act);
        G->release(ws);
    }
#endif

    const struct {
        const char *name;
        int c, oc, gelu;
    } gemms[] = {{"qkv", C, 3 * C, 0},
                 {"attn_proj", C, C, 0},
                 {"fc(+gelu)", C, 4 * C, 1},
                 {"fc_proj", 4 * C, C, 0}};
    for (auto &g : gemms) {
        const double fl = 2.0 * N * g.c * g.oc;
        snprintf(shape, sizeof shape, "N%d C%d OC%d", N, g.c, g.oc);
        char op[64];
        snprintf(op, sizeof op, "matmul_fwd %s", g.name);
        line_gemm(
            op, shape,
            [&] {
                if (g.gelu)
                    G->matmul_gelu_forward(big2, big, x, w, bias, N, g.c, g.oc);
                else
                    G->matmul_forward(big, g.c == C ? x : big2, w, bias, N, g.c, g.oc);
            },
            fl);
        snprintf(op, sizeof op, "matmul_bwd %s", g.name);
        /* fc_proj's backward is the GELU one (its input was gelu(fc)) */
        const bool bg = g.c == 4 * C;
        line_gemm(
            op, shape,
            [&] {
                if (bg)
                    G->matmul_backward_gelu(big, dw, NULL, y, big2, w, pre, N, g.c, g.oc, bias);
                else
                    G->matmul_backward(g.c == C ? out : big2, dw, dbias, big, x, w, N, g.c, g.oc);
            },
            2 * fl);
    }

    /* the epilogue choices, timed: fc forward (by default ours or
     * GELU_AUX_BIAS, whichever its first call timed faster; our GEMM on
     * sm_90a, GELU_AUX_BIAS or GEMM + gelu kernel) and fc_proj backward (our GEMM
     * with the column sums, DGELU or GEMM + gelu backward kernel; BGRADB or
     * the column-sum kernel for dbias) */
    const struct {
        const char *name;
        int flags;
    } fus[] = {
        {"default", MATMUL_FUSE_DEFAULT},
        {"ours", MATMUL_FUSE_DEFAULT & ~MATMUL_FUSE_OWN_GEMM_TIMED},
        {"cublaslt", MATMUL_FUSE_DEFAULT & ~MATMUL_FUSE_OWN_GEMM},
        {"unfused", 0},
        {"+dgelu_bgrad", (MATMUL_FUSE_DEFAULT & ~MATMUL_FUSE_OWN_GEMM) | MATMUL_FUSE_DGELU_BGRAD},
        {"+bgradb", MATMUL_FUSE_DEFAULT | MATMUL_FUSE_BGRADB}};
    for (auto &f : fus) {
        matmul_cuda_set_fusion(f.flags);
        char op[64];
        snprintf(shape, sizeof shape, "N%d C%d OC%d", N, C, 4 * C);
        snprintf(op, sizeof op, "fc fwd %s", f.name);
        line_gemm(
            op, shape, [&] { G->matmul_gelu_forward(big2, big, x, w, bias, N, C, 4 * C); },
            2.0 * N * C * 4 * C);
        snprintf(shape, sizeof shape, "N%d C%d OC%d", N, 4 * C, C);
        snprintf(op, sizeof op, "fc_proj bwd %s", f.name);
        line_gemm(
            op, shape,
            [&] { G->matmul_backward_gelu(big, dw, NULL, y, big2, w, pre, N, 4 * C, C, bias); },
            4.0 * N * C * 4 * C);
        snprintf(shape, sizeof shape, "N%d C%d OC%d", N, C, 4 * C);
        snprintf(op, sizeof op, "fc bwd %s", f.name);
        line_gemm(
            op, shape, [&] { G->matmul_backward(out, dw, dbias, big, x, w, N, C, 4 * C); },
            4.0 * N * C * 4 * C);
        snprintf(shape, sizeof shape, "N%d C%d OC%d", N, C, 3 * C);
        snprintf(op, sizeof op, "qkv bwd %s", f.name);
        line_gemm(
            op, shape, [&] { G->matmul_backward(out, dw, dbias, big, x, w, N, C, 3 * C); },
            4.0 * N * C * 3 * C);
    }
    matmul_cuda_set_fusion(MATMUL_FUSE_DEFAULT);

    /* the same products without their bias gradients: the difference is
     * what the deterministic column sums cost (c_attn's dbias over dqkv,
     * c_fc's over d(fch)) */
    snprintf(shape, sizeof shape, "N%d C%d OC%d", N, C, 3 * C);
    line_gemm(
        "qkv bwd no dbias", shape,
        [&] { G->matmul_backward(out, dw, NULL, big, x, w, N, C, 3 * C); }, 4.0 * N * C * 3 * C);
    snprintf(shape, sizeof shape, "N%d C%d OC%d", N, 4 * C, C);
    line_gemm(
        "fc_proj bwd no colsum", shape,
        [&] { G->matmul_backward_gelu(big, dw, NULL, y, big2, w, pre, N, 4 * C, C, NULL); },
        4.0 * N * C * 4 * C);

    /* lm head and classifier, in the model's chunk of rows (64 MiB of logits) and at 8192 */
    const int chunk = (int)((64u << 20) / ((size_t)Vp * 2));
    void *logits = G->alloc((size_t)8192 * Vp * 2);
    for (int rows : {chunk, 8192}) {
        if (rows > N) continue;
        snprintf(shape, sizeof shape, "N%d C%d Vp%d", rows, C, Vp);
        const double fl = 2.0 * rows * C * Vp;
        line_gemm(
            "lm_head fwd", shape, [&] { G->matmul_forward(logits, x, wte, NULL, rows, C, Vp); },
            fl);
        line_gemm(
            "lm_head bwd", shape,
            [&] { G->matmul_backward(out, dwte, NULL, logits, x, wte, rows, C, Vp); }, 2 * fl);
        line_mem(
            "classifier (dloss)", shape,
            [&] { G->classifier_forward_backward(logits, mean, tok, rows, V, Vp, 1e-4f); },
            2.0 * rows * Vp * 2);
    }

    /* optimizer over the whole 124M flat buffer (its 2 GB filled only when timed) */
    if (wanted("grad_sum_squares") || wanted("adamw_update")) {
        const size_t P = 124475904;
        void *grad = rand_bf16(P, 1e-3f, 19), *params = G->alloc(P * 2);
        float *master = rand_f32(P, -0.05f, 0.05f, 20), *m = rand_f32(P, -1e-3f, 1e-3f, 21),
              *v = rand_f32(P, 0.0f, 1e-6f, 22);
        snprintf(shape, sizeof shape, "n%zu", P);
        double *sum = (double *)G->alloc(sizeof(double));
        float *scale = (float *)G->alloc(sizeof(float));
        line_mem(
            "grad_sum_squares", shape, [&] { G->grad_sum_squares(sum, grad, P); }, 2.0 * P);
        G->clip_scale(scale, sum, 0.0); /* 1 */
        adamw_hyper h = {
            .lr = 6e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .t = 1};
        line_mem(
            "adamw_update", shape,
            [&] {
                G->adamw_update(params, master, grad, m, v, P, NULL, scale, &h);
                h.t++;
            },
            28.0 * P);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    matmul_cuda_print_tuning(stdout);
    return 0;
}
