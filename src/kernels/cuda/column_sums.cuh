/* The fixed-order column sum of partials that the deterministic bias
 * gradients end with (column_sums.cu's kernel, the LayerNorm backward's
 * reduce): blocks of COLSUM_X columns x COLSUM_Y stripes of rows. */
#ifndef GPT2_KERNELS_CUDA_COLUMN_SUMS_CUH
#define GPT2_KERNELS_CUDA_COLUMN_SUMS_CUH

#include <cuda_runtime.h>

enum { COLSUM_X = 32, COLSUM_Y = 16 }; /* a block: columns x stripes of rows */

/* Column j = blockIdx.x * COLSUM_X + threadIdx.x of src (nrows x ld fp32)
 * summed over its rows: stripe y takes rows y, y + COLSUM_Y, ... in order,
 * then the stripes are added in y order. The result is valid in the
 * threads with threadIdx.y == 0 and j < ncols; every thread of the block
 * calls it. */
__device__ __forceinline__ float column_sum_fixed_order(const float *src, int nrows, size_t ld,
                                                        int ncols) {
    __shared__ float sh[COLSUM_Y][COLSUM_X + 1];
    const int j = blockIdx.x * COLSUM_X + threadIdx.x;
    float acc = 0.f;
    if (j < ncols)
#pragma unroll 8 // the loads issued together, the adds still in row order
        for (int r = threadIdx.y; r < nrows; r += COLSUM_Y) acc += src[(size_t)r * ld + j];
    sh[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    float total = 0.f;
    if (threadIdx.y == 0)
#pragma unroll
        for (int y = 0; y < COLSUM_Y; y++) total += sh[y][threadIdx.x];
    return total;
}

#endif
