/* Sum of squares of a bf16 gradient range on the GPU, for global-norm
 * clipping.
 *
 * Design: a fixed grid (SS_BLOCKS x SS_THREADS, whatever the device), each
 * thread walking a fixed grid-stride set of 8-element vectors: each vector's
 * squares are summed in fp32, then added to a per-thread double. Blocks
 * reduce in double through a fixed shuffle tree and write one partial each;
 * one thread adds the partials in index order into the device result, which
 * the clip factor then reads on the device. Same input, same bits, on any
 * GPU. One pass over the bf16 data, no atomics. */
#include "kernels/norm.h"

#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/cuda_check.h"

enum { SS_BLOCKS = 1024, SS_THREADS = 256 };

static __device__ __forceinline__ double warp_sum_double(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* The sum of every thread's v over an SS_THREADS block, by a fixed tree;
 * the result is thread 0's. */
static __device__ __forceinline__ double block_sum_double(double v) {
    __shared__ double sh[SS_THREADS / 32];
    v = warp_sum_double(v);
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x >= 32) return 0.0;
    return warp_sum_double(threadIdx.x < SS_THREADS / 32 ? sh[threadIdx.x] : 0.0);
}

static __global__ void __launch_bounds__(SS_THREADS)
    sum_squares_kernel(double *partials, const bf16 *x, size_t n, int vectorized) {
    const size_t tid = (size_t)blockIdx.x * SS_THREADS + threadIdx.x;
    const size_t stride = (size_t)SS_BLOCKS * SS_THREADS;
    const size_t n8 = vectorized ? n / 8 : 0;
    double acc = 0.0;
    for (size_t i = tid; i < n8; i += stride) {
        float f[8];
        load8(f, x + i * 8);
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < 8; k++) s += f[k] * f[k];
        acc += (double)s;
    }
    for (size_t i = n8 * 8 + tid; i < n; i += stride) {
        const float f = __bfloat162float(x[i]);
        acc += (double)(f * f);
    }
    acc = block_sum_double(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

/* One thread adds the partials in index order: a fixed order, a few
 * microseconds for 1024 doubles, and no host round trip. */
static __global__ void add_partials_kernel(double *sum, const double *partials, int n) {
    double total = 0.0;
    for (int i = 0; i < n; i++) total += partials[i];
    *sum = total;
}

static __global__ void clip_scale_kernel(float *scale, const double *sum_squares, double max_norm) {
    *scale = clip_factor(*sum_squares, max_norm);
}

static __global__ void nonfinite_fold_kernel(double *sum_squares, const double *value) {
    *sum_squares = nonfinite_fold_value(*sum_squares, *value);
}

static __global__ void __launch_bounds__(SS_THREADS)
    sum_f32_kernel(double *sum, const float *x, size_t n) {
    double acc = 0.0;
    for (size_t i = threadIdx.x; i < n; i += SS_THREADS) acc += (double)x[i];
    acc = block_sum_double(acc);
    if (threadIdx.x == 0) *sum = acc;
}

extern "C" void sum_f32_cuda(double *sum, const float *x, size_t n, cudaStream_t stream) {
    sum_f32_kernel<<<1, SS_THREADS, 0, stream>>>(sum, x, n);
    CUDA_CHECK_LAUNCH("sum_f32_kernel");
}

extern "C" int sum_squares_cuda_blocks(void) { return SS_BLOCKS; }

extern "C" void sum_squares_cuda(double *sum, double *partials, const void *x, size_t n,
                                 cudaStream_t stream) {
    sum_squares_kernel<<<SS_BLOCKS, SS_THREADS, 0, stream>>>(partials, (const bf16 *)x, n,
                                                             is_aligned16(x));
    CUDA_CHECK_LAUNCH("sum_squares_kernel");
    add_partials_kernel<<<1, 1, 0, stream>>>(sum, partials, SS_BLOCKS);
    CUDA_CHECK_LAUNCH("add_partials_kernel");
}

extern "C" void clip_scale_cuda(float *scale, const double *sum_squares, double max_norm,
                                cudaStream_t stream) {
    clip_scale_kernel<<<1, 1, 0, stream>>>(scale, sum_squares, max_norm);
    CUDA_CHECK_LAUNCH("clip_scale_kernel");
}

extern "C" void nonfinite_fold_cuda(double *sum_squares, const double *value, cudaStream_t stream) {
    nonfinite_fold_kernel<<<1, 1, 0, stream>>>(sum_squares, value);
    CUDA_CHECK_LAUNCH("nonfinite_fold_kernel");
}
