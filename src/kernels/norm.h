/* Squared L2 norm of a gradient range, the building block of global-norm clipping. */
#ifndef GPT2_KERNELS_NORM_H
#define GPT2_KERNELS_NORM_H
#include <stddef.h>

/* Sum of squares accumulated in double, deterministic for a fixed thread count. */
double sum_squares_cpu(const float *x, size_t n);

#if (defined(GPT2_HAVE_CUDA) && GPT2_HAVE_CUDA) || defined(__CUDACC__)
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif
/* CUDA (src/kernels/cuda/norm.cu): writes sum_squares_cuda_blocks() partial
 * sums (double) of the squares of n bf16 values; the caller adds them in
 * index order. The split of the range depends only on n and the pointer's
 * 16-byte alignment: deterministic. */
int sum_squares_cuda_blocks(void);
void sum_squares_cuda(double *partials, const void *x, size_t n, cudaStream_t stream);
#ifdef __cplusplus
}
#endif
#endif
#endif
