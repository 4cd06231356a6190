/* LayerNorm backward's tuning variant (layernorm_tuning.cu), compiled only
 * in tuning builds (CMake -DGPT2_LN_TUNING=ON), for bench_ops_cuda and
 * test_ops_cuda; the trainer runs kernels/layernorm.h's production kernel
 * either way. */
#ifndef GPT2_KERNELS_CUDA_TUNING_LAYERNORM_TUNING_H
#define GPT2_KERNELS_CUDA_TUNING_LAYERNORM_TUNING_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "kernels/layernorm.h" /* the production contract, its workspace's size */

#ifdef __cplusplus
extern "C" {
#endif
/* layernorm_backward_cuda (kernels/layernorm.h) with its rows of x, dout
 * and the old dinp copied into shared memory by the copy engine, a ring of
 * `stages` rows (2 or more) a row group, in place of the register kernel.
 * Same contract and the same bits. Returns 0, having done nothing, where
 * it cannot run: no sm_90a code, another GPU than compute capability 9.0,
 * or the stages do not fit the block's shared memory; else 1. */
int layernorm_backward_cuda_bulk(int stages, void *dinp, void *dweight, void *dbias,
                                 const void *dout, const void *inp, const void *weight,
                                 const float *mean, const float *rstd, int N, int C,
                                 void *dinp_colsum, void *workspace, size_t workspace_bytes,
                                 cudaStream_t stream);
#ifdef __cplusplus
}
#endif
#endif
