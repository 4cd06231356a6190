/* Benchmark of FP8 GEMMs against bf16 at a model's layer shapes: for each
 * of a transformer block's four linear layers (c_attn, attn.c_proj, c_fc,
 * mlp.c_proj), the forward product and the backward pair (input and weight
 * gradient) through the production bf16 entry points and through
 * the same entry points reading FP8 operands, plus the casts the FP8 path adds where they are not yet
 * fused into the producers (activations and output gradients, each with
 * its transposed copy). Median of REPS after WARMUP, CUDA events; one line
 * per layer and a total:
 *   BENCH fp8_gemm <in>x<out> tokens=N fwd_bf16_us= fwd_fp8_us= bwd_bf16_us= bwd_fp8_us= cast_us=
 * and the two ceilings (an 8192^3 product in bf16 and in FP8). The FP8
 * products accumulate fast where fp8_fast_accum says (the training
 * default: the forward), the FP8 ceiling always.
 *
 *   bench_fp8_gemm [C=768] [tokens=32768] [none|forward|all] */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "cuda_timing.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/fp8.h"
#include "kernels/matmul.h"
#include "model/fp8_layers.h"

enum { WARMUP = 3, REPS = 15 };
static cudaStream_t g_stream;

template <typename F> static double time_us(F f) { return median_us(g_stream, WARMUP, REPS, f); }

/* n bf16 (or fp8 bytes: the same fill read as either) of small random values */
static void *rand_buf(size_t bytes, unsigned seed) {
    std::vector<uint16_t> h((bytes + 1) / 2);
    srand(seed);
    for (auto &v : h) v = (uint16_t)(0x3C00 + (rand() & 0x3FF)) ^ (uint16_t)((rand() & 1) << 15);
    void *d;
    CUDA_CHECK(cudaMalloc(&d, h.size() * 2));
    CUDA_CHECK(cudaMemcpy(d, h.data(), bytes, cudaMemcpyHostToDevice));
    return d;
}

int main(int argc, char **argv) {
    const int C = argc > 1 ? atoi(argv[1]) : 768, N = argc > 2 ? atoi(argv[2]) : 32768;
    const char *mode = argc > 3 ? argv[3] : "forward";
    fp8_fast_accum fast;
    if (!fp8_fast_accum_named(mode, &fast)) {
        fprintf(stderr, "bench_fp8_gemm: fast accumulation '%s': use none, forward or all\n", mode);
        return 2;
    }
    CUDA_CHECK(cudaStreamCreate(&g_stream));
    cublaslt_ctx lt;
    CUBLAS_CHECK(cublasLtCreate(&lt.handle));
    lt.workspace_bytes = 32u << 20;
    CUDA_CHECK(cudaMalloc(&lt.workspace, lt.workspace_bytes));
    lt.autotune = true;
    const size_t big = (size_t)N * 4 * C; /* the largest activation, elements */
    void *x = rand_buf(big * 2, 1), *y = rand_buf(big * 2, 2), *w = rand_buf((size_t)16 * C * C, 3);
    void *dw = rand_buf((size_t)16 * C * C, 5);
    void *bias = rand_buf((size_t)8 * C, 6), *out = rand_buf(big * 2, 7);
    void *ws = rand_buf((size_t)8 << 20, 8);
    uint8_t *q8 = (uint8_t *)rand_buf(big, 9), *q8t = (uint8_t *)rand_buf(big, 10);
    uint8_t *g8 = (uint8_t *)rand_buf(big, 14), *g8t = (uint8_t *)rand_buf(big, 15);
    uint8_t *w8 = (uint8_t *)rand_buf((size_t)8 * C * C, 16);
    uint8_t *w8t = (uint8_t *)rand_buf((size_t)8 * C * C, 17);
    float one = 1.0f, *d_one;
    fp8_cast_stats *stats;
    CUDA_CHECK(cudaMalloc(&d_one, 4));
    CUDA_CHECK(cudaMalloc(&stats, sizeof *stats));
    CUDA_CHECK(cudaMemcpy(d_one, &one, 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(stats, 0, sizeof *stats));
    /* the FP8 operands (random bytes: the timing does not depend on them) */
    const fp8_linear_operands q = {q8, q8t, w8, w8t, g8, g8t, d_one, d_one, d_one, fast};

    const int layers[4][2] = {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}};
    double sum[5] = {0, 0, 0, 0, 0};
    for (auto &l : layers) {
        const int in = l[0], o = l[1];
        const double fwd16 =
            time_us([&] { matmul_forward_cuda(out, x, w, bias, N, in, o, NULL, &lt, g_stream); });
        const double fwd8 = time_us(
            [&] { matmul_forward_cuda(out, NULL, NULL, bias, N, in, o, &q, &lt, g_stream); });
        const double bwd16 = time_us([&] {
            matmul_backward_cuda(out, dw, NULL, y, x, w, NULL, N, in, o, NULL, ws, (size_t)8 << 20,
                                 NULL, &lt, g_stream);
        });
        const double bwd8 = time_us([&] {
            matmul_backward_cuda(out, dw, NULL, y, NULL, NULL, NULL, N, in, o, NULL, ws,
                                 (size_t)8 << 20, &q, &lt, g_stream);
        });
        const double cast = time_us([&] {
            fp8_cast_cuda(q8, q8t, stats, x, N, in, d_one, FP8_E4M3, g_stream);
            fp8_cast_cuda(q8, q8t, stats, y, N, o, d_one, FP8_E5M2, g_stream);
        });
        const double fl = 2.0 * N * (double)in * o;
        printf("BENCH fp8_gemm %dx%d tokens=%d fwd_bf16_us=%.1f fwd_fp8_us=%.1f (%.2fx, %.0f "
               "TFLOP/s) bwd_bf16_us=%.1f bwd_fp8_us=%.1f (%.2fx, %.0f TFLOP/s) cast_us=%.1f (%.0f "
               "GB/s)\n",
               in, o, N, fwd16, fwd8, fwd16 / fwd8, fl / fwd8 * 1e-6, bwd16, bwd8, bwd16 / bwd8,
               2 * fl / bwd8 * 1e-6, cast, 4.0 * N * (in + o) / cast * 1e-3);
        sum[0] += fwd16, sum[1] += fwd8, sum[2] += bwd16, sum[3] += bwd8, sum[4] += cast;
    }
    printf("BENCH fp8_gemm block C=%d tokens=%d fast_accum=%s bf16_us=%.1f fp8_us=%.1f (%.2fx) "
           "fp8_with_casts_us=%.1f (%.2fx)\n",
           C, N, mode, sum[0] + sum[2], sum[1] + sum[3], (sum[0] + sum[2]) / (sum[1] + sum[3]),
           sum[1] + sum[3] + sum[4], (sum[0] + sum[2]) / (sum[1] + sum[3] + sum[4]));

    /* ceilings: 8192^3 */
    const int S = 8192;
    void *a16 = rand_buf((size_t)S * S * 2, 11), *b16 = rand_buf((size_t)S * S * 2, 12);
    void *d16 = rand_buf((size_t)S * S * 2, 13);
    const double c16 =
        time_us([&] { matmul_forward_cuda(d16, a16, b16, NULL, S, S, S, NULL, &lt, g_stream); });
    const fp8_linear_operands q8s = {
        (const uint8_t *)a16, NULL, (const uint8_t *)b16, NULL, NULL, NULL, d_one, d_one, d_one,
        FP8_FAST_ACCUM_ALL};
    const double c8 =
        time_us([&] { matmul_forward_cuda(d16, NULL, NULL, NULL, S, S, S, &q8s, &lt, g_stream); });
    const double fl = 2.0 * S * (double)S * S;
    printf("BENCH fp8_gemm ceiling 8192^3 bf16_us=%.1f (%.0f TFLOP/s) fp8_us=%.1f (%.0f TFLOP/s)\n",
           c16, fl / c16 * 1e-6, c8, fl / c8 * 1e-6);
    matmul_cuda_print_tuning(stdout);
    return 0;
}
