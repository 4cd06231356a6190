/* Benchmark of the production flash attention entry points
 * (attention_forward_cuda / attention_backward_cuda): causal, bf16, default
 * GPT-2 124M shape B=32 NH=12 T=1024 HS=64 (or: bench_attention B NH T HS).
 * After 10 warm-ups, the median of 10 samples, each the mean of 10
 * back-to-back calls between two CUDA events (bench/attention_peers.py times
 * PyTorch's the same way). Prints, for the default kernels and (on Hopper)
 * their deterministic mode and the mma.sync kernels, one comparable line
 *   BENCH attention impl=<wgmma|mma.sync> B= H= T= D= fwd_ms= fwdbwd_ms=
 * (attention alone, as the PyTorch peers run it), and the default kernels
 * once more with dqkv's column sums, as the trainer runs them
 * (impl=<...>+colsum)
 * and a readable one with TFLOP/s on causal FLOPs (forward 4*B*NH*T*T*HS/2,
 * backward 2.5x forward). bench/bench_attention.sh puts them beside PyTorch
 * SDPA's. Tuning builds (GPT2_ATTN_TUNING) first time every variant of the
 * head size that runs here, by name. Exits 77 when there is no GPU. */
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "../tests/kernels/attention_harness.cuh"
#include "kernels/attention.h"
#ifdef GPT2_ATTN_TUNING
#include "kernels/cuda/tuning/attention_tuning.h"
#endif

// bf16 values ~ uniform(-2, 2) from a hash of the index (no host round trip)
static __global__ void fill_kernel(uint16_t *x, size_t n, uint32_t seed) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t h = (uint32_t)i * 2654435761u ^ seed;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    const float f = ((h & 0xFFFFFF) / 16777216.0f) * 4.f - 2.f;
    x[i] = (uint16_t)(__float_as_uint(f) >> 16);
}

struct bench_bufs {
    int B, T, C, NH;
    void *qkv, *dout, *out, *dqkv, *ws;
    void *colsum; // NULL, or dqkv's column sums (3C), as the trainer asks for them
    float *lse;
    const attention_cuda_options *opt;     // the production kernels these select
    const char *fwd_variant, *bwd_variant; // or tuning variants in their place (NULL: none)
};

static void run_fwd(const bench_bufs &b, cudaStream_t s) {
#ifdef GPT2_ATTN_TUNING
    if (b.fwd_variant) {
        attention_forward_cuda_variant(b.fwd_variant, b.out, b.lse, b.qkv, b.B, b.T, b.C, b.NH, s);
        return;
    }
#endif
    attention_forward_cuda(b.out, b.lse, b.qkv, b.B, b.T, b.C, b.NH, b.opt, s);
}
static void run_fwd_bwd(const bench_bufs &b, cudaStream_t s) {
    run_fwd(b, s);
#ifdef GPT2_ATTN_TUNING
    if (b.bwd_variant) {
        attention_backward_cuda_variant(b.bwd_variant, b.dqkv, b.dout, b.qkv, b.out, b.lse, b.B,
                                        b.T, b.C, b.NH, nullptr, b.ws, s);
        return;
    }
#endif
    attention_backward_cuda(b.dqkv, b.dout, b.qkv, b.out, b.lse, b.B, b.T, b.C, b.NH, b.colsum,
                            b.ws, b.opt, s);
}

// median over `samples` of the mean ms of `calls` back-to-back calls of fn,
// after `warm` untimed ones
static double time_median(void (*fn)(const bench_bufs &, cudaStream_t), const bench_bufs &b,
                          cudaStream_t s, int warm = 10, int samples = 10, int calls = 10) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < warm; i++) fn(b, s);
    std::vector<float> ms(samples);
    for (int i = 0; i < samples; i++) {
        CK(cudaEventRecord(e0, s));
        for (int c = 0; c < calls; c++) fn(b, s);
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms[i], e0, e1));
        ms[i] /= calls;
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    std::sort(ms.begin(), ms.end());
    return 0.5 * (ms[(samples - 1) / 2] + ms[samples / 2]);
}

int main(int argc, char **argv) {
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("bench_attention: no GPU, skipped\n");
        return 77;
    }
    bench_bufs b = {};
    b.B = argc > 1 ? atoi(argv[1]) : 32;
    b.NH = argc > 2 ? atoi(argv[2]) : 12;
    b.T = argc > 3 ? atoi(argv[3]) : 1024;
    const int HS = argc > 4 ? atoi(argv[4]) : 64;
    b.C = b.NH * HS;
    const size_t n_qkv = (size_t)b.B * b.T * 3 * b.C, n_out = (size_t)b.B * b.T * b.C;
    const size_t ws = attention_backward_workspace_bytes(b.B, b.T, b.C, b.NH);
    CK(cudaMalloc(&b.qkv, n_qkv * 2));
    CK(cudaMalloc(&b.dqkv, n_qkv * 2));
    CK(cudaMalloc(&b.dout, n_out * 2));
    CK(cudaMalloc(&b.out, n_out * 2));
    CK(cudaMalloc(&b.lse, (size_t)b.B * b.NH * b.T * 4));
    CK(cudaMalloc(&b.ws, ws));
    fill_kernel<<<(unsigned)((n_qkv + 255) / 256), 256>>>((uint16_t *)b.qkv, n_qkv, 1u);
    fill_kernel<<<(unsigned)((n_out + 255) / 256), 256>>>((uint16_t *)b.dout, n_out, 2u);
    CK(cudaGetLastError());
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));

    const double fwd_flop = 4.0 * b.B * b.NH * (double)b.T * b.T * HS / 2;
    const double all_flop = 3.5 * fwd_flop;
    // The default kernels, then (where they differ) the deterministic mode
    // and the mma.sync kernels
    const attention_cuda_options passes[3] = {{true, false}, {true, true}, {false, false}};
    const bool hopper =
        strcmp(attention_cuda_kernels(HS, &passes[0]), attention_cuda_kernels(HS, &passes[2])) != 0;
#ifdef GPT2_ATTN_TUNING
    // tile-shape variants by name: a forward variant timed alone, a backward
    // one after the default forward
    for (int i = 0; i < attention_cuda_variant_count(); i++) {
        const attention_cuda_variant *v = attention_cuda_variant_info(i);
        if (v->head_size != HS ||
            (!hopper && strcmp(v->family, attention_cuda_kernels(HS, &passes[2])) != 0))
            continue;
        if (v->backward) {
            b.bwd_variant = v->name;
            const double t = time_median(run_fwd_bwd, b, s);
            printf("  variant %-32s fwd+bwd %.3f ms (%.0f TFLOP/s)  %s\n", v->name, t,
                   all_flop / t * 1e-9, v->what);
        } else {
            b.fwd_variant = v->name;
            const double t = time_median(run_fwd, b, s);
            printf("  variant %-32s fwd %.3f ms (%.0f TFLOP/s)  %s\n", v->name, t,
                   fwd_flop / t * 1e-9, v->what);
        }
        b.fwd_variant = b.bwd_variant = NULL;
    }
#endif
    for (int pass = 0; pass < (hopper ? 3 : 1); pass++) {
        b.opt = &passes[pass];
        const double t_fwd = time_median(run_fwd, b, s);
        const double t_all = time_median(run_fwd_bwd, b, s);
        CK(cudaDeviceSynchronize());
        const bool wgmma =
            strcmp(attention_cuda_kernels(HS, b.opt), attention_cuda_kernels(HS, &passes[2])) != 0;
        printf("BENCH attention impl=%s B=%d H=%d T=%d D=%d fwd_ms=%.4f fwdbwd_ms=%.4f\n",
               !wgmma      ? "mma.sync"
               : pass == 1 ? "wgmma-det"
                           : "wgmma",
               b.B, b.NH, b.T, HS, t_fwd, t_all);
        printf("  %s, %s%s: fwd %.3f ms (%.0f TFLOP/s), fwd+bwd %.3f ms (%.0f TFLOP/s; bwd "
               "%.3f ms, %.0f TFLOP/s)\n",
               prop.name, attention_cuda_kernels(HS, b.opt), pass == 1 ? ", deterministic" : "",
               t_fwd, fwd_flop / t_fwd * 1e-9, t_all, all_flop / t_all * 1e-9, t_all - t_fwd,
               2.5 * fwd_flop / (t_all - t_fwd) * 1e-9);
    }
    // as the trainer runs it: with dqkv's column sums (c_attn's bias gradient)
    CK(cudaMalloc(&b.colsum, (size_t)3 * b.C * 2));
    CK(cudaMemset(b.colsum, 0, (size_t)3 * b.C * 2));
    b.opt = &passes[0];
    const double t_fwd = time_median(run_fwd, b, s), t_all = time_median(run_fwd_bwd, b, s);
    printf("BENCH attention impl=%s+colsum B=%d H=%d T=%d D=%d fwd_ms=%.4f fwdbwd_ms=%.4f\n",
           hopper ? "wgmma" : "mma.sync", b.B, b.NH, b.T, HS, t_fwd, t_all);
    CK(cudaFree(b.colsum));
    CK(cudaFree(b.qkv));
    CK(cudaFree(b.dqkv));
    CK(cudaFree(b.dout));
    CK(cudaFree(b.out));
    CK(cudaFree(b.lse));
    CK(cudaFree(b.ws));
    CK(cudaStreamDestroy(s));
    return 0;
}
