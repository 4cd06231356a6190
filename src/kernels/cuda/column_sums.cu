/* The second half of the deterministic column sums (bias gradients): partial
 * sums per chunk of rows, which their producers write (the matmul backward's
 * column-sum kernel, the FP8 GELU-backward cast, the attention backward),
 * added up per column in a fixed order into a bf16 vector. Its own
 * translation unit, so that the attention kernels build without the GEMMs
 * (scripts/build_attention_standalone.sh). */
#include "kernels/cuda/column_sums.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/matmul.h"

typedef __nv_bfloat16 bf16;

/* dst[j] += column j's sum over the nrows rows of src (nrows x ncols), in
 * column_sum_fixed_order's order. */
static __global__ void column_sum_add_kernel(bf16 *dst, const float *src, int nrows, int ncols) {
    const float total = column_sum_fixed_order(src, nrows, (size_t)ncols, ncols);
    const int j = blockIdx.x * COLSUM_X + threadIdx.x;
    if (threadIdx.y == 0 && j < ncols)
        dst[j] = __float2bfloat16_rn(__bfloat162float(dst[j]) + total);
}

extern "C" void bias_partials_add_cuda(void *dst, const float *partials, int chunks, int cols,
                                       cudaStream_t stream) {
    if (chunks <= 0 || cols <= 0) return;
    column_sum_add_kernel<<<(cols + COLSUM_X - 1) / COLSUM_X, dim3(COLSUM_X, COLSUM_Y), 0,
                            stream>>>((bf16 *)dst, partials, chunks, cols);
    CUDA_CHECK_LAUNCH("column_sum_add_kernel");
}
