/* LayerNorm over the last dimension (eps 1e-5, as GPT-2), optionally fused
 * with the residual add that precedes it. Statistics are FP32 on every backend. */
#ifndef GPT2_KERNELS_LAYERNORM_H
#define GPT2_KERNELS_LAYERNORM_H

/* out = LN(inp) * weight + bias over N rows of C; mean and rstd (N) are saved
 * for backward. */
void layernorm_forward_cpu(float *out, float *mean, float *rstd, const float *inp,
                           const float *weight, const float *bias, int N, int C);
/* residual = a + b, then out = LN(residual): the residual stream add and the
 * LayerNorm that reads it in one pass. */
void residual_layernorm_forward_cpu(float *residual, float *out, float *mean, float *rstd,
                                    const float *a, const float *b, const float *weight,
                                    const float *bias, int N, int C);
/* Accumulates (+=) into dinp, dweight, dbias. */
void layernorm_backward_cpu(float *dinp, float *dweight, float *dbias, const float *dout,
                            const float *inp, const float *weight, const float *mean,
                            const float *rstd, int N, int C);

#if (defined(GPT2_HAVE_CUDA) && GPT2_HAVE_CUDA) || defined(__CUDACC__)
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/fp8.h"
#ifdef __cplusplus
extern "C" {
#endif
/* CUDA (src/kernels/cuda/layernorm.cu): bf16 tensors, fp32 statistics; C a
 * multiple of 8 up to 2048, 16-byte aligned rows. Same contracts as above
 * (residual may alias a or b; the backward accumulates). */
void layernorm_forward_cuda(void *out, float *mean, float *rstd, const void *inp,
                            const void *weight, const void *bias, int N, int C,
                            cudaStream_t stream);
void residual_layernorm_forward_cuda(void *residual, void *out, float *mean, float *rstd,
                                     const void *a, const void *b, const void *weight,
                                     const void *bias, int N, int C, cudaStream_t stream);
/* residual_layernorm_forward_cuda (residual NULL: layernorm_forward_cuda of
 * a) with the output cast to FP8 instead of stored in bf16: out (and
 * out_t, the transposed copy, where non-NULL: N a multiple of 16) and stats
 * get the bytes and stats that fp8_cast_cuda of the bf16 output would give
 * with *scale and format f (kernels/fp8.h), bit for bit; mean and rstd
 * (may be NULL) as before. */
void layernorm_forward_fp8_cuda(void *residual, uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats,
                                float *mean, float *rstd, const void *a, const void *b,
                                const void *weight, const void *bias, int N, int C,
                                const float *scale, fp8_format f, cudaStream_t stream);
/* Scratch for the per-block fp32 partial sums of dweight, dbias and
 * dinp_colsum. */
size_t layernorm_backward_cuda_workspace_bytes(int N, int C);
/* dinp_colsum (may be NULL): += the column sums of the updated dinp, of its
 * bf16 values (kernels/ops.h). */
void layernorm_backward_cuda(void *dinp, void *dweight, void *dbias, const void *dout,
                             const void *inp, const void *weight, const float *mean,
                             const float *rstd, int N, int C, void *dinp_colsum, void *workspace,
                             size_t workspace_bytes, cudaStream_t stream);
/* layernorm_backward_cuda, and the updated dinp also cast to FP8: out, its
 * transposed copy out_t (N a multiple of 16) and stats get the bytes and
 * stats that fp8_cast_cuda of the stored bf16 dinp would give with *scale
 * and format f, bit for bit (the FP8 output gradient of the projection
 * that wrote the residual stream before the LayerNorm). dinp is what
 * layernorm_backward_cuda stores, bit for bit; dweight, dbias and
 * dinp_colsum the same sums, added in another order. Same workspace. */
void layernorm_backward_fp8_cuda(void *dinp, void *dweight, void *dbias, const void *dout,
                                 const void *inp, const void *weight, const float *mean,
                                 const float *rstd, int N, int C, void *dinp_colsum,
                                 void *workspace, size_t workspace_bytes, uint8_t *out,
                                 uint8_t *out_t, fp8_cast_stats *stats, const float *scale,
                                 fp8_format f, cudaStream_t stream);
#ifdef __cplusplus
}
#endif
#endif
#endif
