/* The device's ceilings, measured where the run runs, for the per-op
 * table's floors (profile_ops): the rate of a large bf16 GEMM through the
 * production path (cuBLASLt via the CUDA kernel table, 8192^3, operands of
 * hashed random values: zeros run faster than real data) and the bandwidth
 * of a device-to-device copy (bytes read plus written), and on GPUs with FP8
 * tensor cores the same GEMM with FP8 operands. Medians of a few
 * runs after a warm-up, timed with events on the kernel table's stream. */
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda_info.h"
#include "kernels/ops.h"

enum { GEMM_SIZE = 8192, REPS = 5 };
static const size_t COPY_BYTES = (size_t)512 << 20;

/* x[i] = uniform in [-1, 1) from a hash of i (no host round trip). */
static __global__ void fill_hashed_kernel(bf16 *x, size_t n, uint32_t seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        x[i] = __float2bfloat16_rn((float)(h >> 8) * (1.0f / 8388608.0f) - 1.0f);
    }
}

/* Median ms of REPS runs of f after one warm-up run. */
template <typename F> static float median_ms(cudaStream_t stream, F f) {
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    f();
    float t[REPS];
    for (int r = 0; r < REPS; r++) {
        CUDA_CHECK(cudaEventRecord(a, stream));
        f();
        CUDA_CHECK(cudaEventRecord(b, stream));
        CUDA_CHECK(cudaEventSynchronize(b));
        CUDA_CHECK(cudaEventElapsedTime(&t[r], a, b));
    }
    CUDA_CHECK(cudaEventDestroy(a));
    CUDA_CHECK(cudaEventDestroy(b));
    std::sort(t, t + REPS);
    return t[REPS / 2];
}

/* Device memory, or NULL when there is none left (the ceiling is then 0). */
static void *try_alloc(size_t bytes) {
    void *p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
    }
    return p;
}

/* FLOP/s of the same product with FP8 operands (a and w cast to E4M3 at
 * scale 1, as the model's products read them) and fast accumulation, or 0
 * without the memory. */
static double fp8_gemm_rate(cudaStream_t stream, const bf16 *a, const bf16 *w, bf16 *out) {
    const size_t n = (size_t)GEMM_SIZE * GEMM_SIZE;
    uint8_t *a8 = (uint8_t *)try_alloc(n), *w8 = (uint8_t *)try_alloc(n);
    float *one = (float *)try_alloc(sizeof(float));
    auto *stats = (fp8_cast_stats *)try_alloc(sizeof(fp8_cast_stats));
    double rate = 0.0;
    if (a8 && w8 && one && stats) {
        const float h_one = 1.0f;
        CUDA_CHECK(cudaMemcpyAsync(one, &h_one, sizeof h_one, cudaMemcpyHostToDevice, stream));
        CUDA_CHECK(cudaMemsetAsync(stats, 0, sizeof(fp8_cast_stats), stream));
        ops_cuda.fp8_cast(a8, nullptr, stats, a, GEMM_SIZE, GEMM_SIZE, one, FP8_E4M3);
        ops_cuda.fp8_cast(w8, nullptr, stats, w, GEMM_SIZE, GEMM_SIZE, one, FP8_E4M3);
        /* with fast accumulation: the rate the tensor cores reach */
        const fp8_linear_operands q = {a8,      nullptr, w8,  nullptr, nullptr,
                                       nullptr, one,     one, one,     FP8_FAST_ACCUM_ALL};
        const float ms = median_ms(stream, [&] {
            ops_cuda.matmul_forward_fp8(out, nullptr, GEMM_SIZE, GEMM_SIZE, GEMM_SIZE, &q);
        });
        rate = 2.0 * GEMM_SIZE * (double)GEMM_SIZE * GEMM_SIZE / (ms * 1e-3);
    }
    cudaFree(a8);
    cudaFree(w8);
    cudaFree(one);
    cudaFree(stats);
    return rate;
}

extern "C" void cuda_measure_ceilings(double *gemm_flops_per_s, double *fp8_flops_per_s,
                                      double *copy_bytes_per_s) {
    *gemm_flops_per_s = 0.0;
    *fp8_flops_per_s = 0.0;
    *copy_bytes_per_s = 0.0;
    cudaStream_t stream = ops_cuda_stream();
    const size_t n = (size_t)GEMM_SIZE * GEMM_SIZE;
    bf16 *a = (bf16 *)try_alloc(n * 2), *w = (bf16 *)try_alloc(n * 2),
         *out = (bf16 *)try_alloc(n * 2);
    if (a && w && out) {
        fill_hashed_kernel<<<1024, 256, 0, stream>>>(a, n, 1u);
        fill_hashed_kernel<<<1024, 256, 0, stream>>>(w, n, 2u);
        CUDA_CHECK_LAUNCH("fill_hashed_kernel");
        const float ms = median_ms(stream, [&] {
            ops_cuda.matmul_forward(out, a, w, nullptr, GEMM_SIZE, GEMM_SIZE, GEMM_SIZE);
        });
        *gemm_flops_per_s = 2.0 * GEMM_SIZE * (double)GEMM_SIZE * GEMM_SIZE / (ms * 1e-3);
        int device = 0;
        CUDA_CHECK(cudaGetDevice(&device));
        if (ops_cuda.matmul_forward_fp8 && cuda_compute_capability(device) >= 89)
            *fp8_flops_per_s = fp8_gemm_rate(stream, a, w, out);
    }
    cudaFree(a);
    cudaFree(w);
    cudaFree(out);
    void *src = try_alloc(COPY_BYTES), *dst = try_alloc(COPY_BYTES);
    if (src && dst) {
        fill_hashed_kernel<<<1024, 256, 0, stream>>>((bf16 *)src, COPY_BYTES / 2, 3u);
        CUDA_CHECK_LAUNCH("fill_hashed_kernel");
        const float ms = median_ms(stream, [&] {
            CUDA_CHECK(cudaMemcpyAsync(dst, src, COPY_BYTES, cudaMemcpyDeviceToDevice, stream));
        });
        *copy_bytes_per_s = 2.0 * (double)COPY_BYTES / (ms * 1e-3);
    }
    cudaFree(src);
    cudaFree(dst);
}
