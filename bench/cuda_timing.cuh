/* The benchmarks' GPU timer: a callable's median time on a stream, by CUDA
 * events around each of `reps` runs after `warmup` untimed ones. */
#ifndef GPT2_BENCH_CUDA_TIMING_CUH
#define GPT2_BENCH_CUDA_TIMING_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "kernels/cuda/cuda_check.h"

/* Microseconds: the median of reps runs of f on stream s. */
template <typename F> static double median_us(cudaStream_t s, int warmup, int reps, F f) {
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    for (int i = 0; i < warmup; i++) f();
    std::vector<float> t;
    for (int i = 0; i < reps; i++) {
        CUDA_CHECK(cudaEventRecord(a, s));
        f();
        CUDA_CHECK(cudaEventRecord(b, s));
        CUDA_CHECK(cudaEventSynchronize(b));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1000.0f);
    }
    std::sort(t.begin(), t.end());
    CUDA_CHECK(cudaEventDestroy(a));
    CUDA_CHECK(cudaEventDestroy(b));
    return t[t.size() / 2];
}
#endif
