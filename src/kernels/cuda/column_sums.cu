/* The second half of the deterministic column sums (bias gradients): partial
 * sums per chunk of rows, which their producers write (the matmul backward's
 * column-sum kernel, the FP8 GELU-backward cast, the attention backward),
 * added up per column in a fixed order into a bf16 vector. Its own
 * translation unit, so that the attention kernels build without the GEMMs
 * (scripts/build_attention_standalone.sh). */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/matmul.h"

typedef __nv_bfloat16 bf16;

enum { RED_X = 32, RED_Y = 16 }; /* columns x stripes of chunks per block */

/* dst[j] += sum over r < nrows of src[r, j], r in a fixed order (stripes of
 * RED_Y, then the stripes in order). */
static __global__ void column_sum_add_kernel(bf16 *dst, const float *src, int nrows, int ncols) {
    __shared__ float sh[RED_Y][RED_X + 1];
    const int j = blockIdx.x * RED_X + threadIdx.x;
    float acc = 0.f;
    if (j < ncols)
#pragma unroll 8 // the loads issued together, the adds still in row order
        for (int r = threadIdx.y; r < nrows; r += RED_Y) acc += src[(size_t)r * ncols + j];
    sh[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < ncols) {
        float total = 0.f;
#pragma unroll
        for (int y = 0; y < RED_Y; y++) total += sh[y][threadIdx.x];
        dst[j] = __float2bfloat16_rn(__bfloat162float(dst[j]) + total);
    }
}

extern "C" void bias_partials_add_cuda(void *dst, const float *partials, int chunks, int cols,
                                       cudaStream_t stream) {
    if (chunks <= 0 || cols <= 0) return;
    column_sum_add_kernel<<<(cols + RED_X - 1) / RED_X, dim3(RED_X, RED_Y), 0, stream>>>(
        (bf16 *)dst, partials, chunks, cols);
    CUDA_CHECK_LAUNCH("column_sum_add_kernel");
}
