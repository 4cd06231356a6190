/* Token + position embedding: out[b,t,:] = wte[inp[b,t],:] + wpe[t,:]. */
#ifndef GPT2_KERNELS_ENCODER_H
#define GPT2_KERNELS_ENCODER_H
#include <stddef.h>
#include <stdint.h>

/* out (B,T,C); inp (B,T) token ids; wte (Vp,C); wpe (maxT,C). */
void encoder_forward_cpu(float *out, const int32_t *inp, const float *wte, const float *wpe, int B,
                         int T, int C);
/* Accumulates (+=) into dwte and dwpe from dout (B,T,C). */
void encoder_backward_cpu(float *dwte, float *dwpe, const float *dout, const int32_t *inp, int B,
                          int T, int C);

#if (defined(GPT2_HAVE_CUDA) && GPT2_HAVE_CUDA) || defined(__CUDACC__)
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif
/* CUDA (src/kernels/cuda/encoder.cu): bf16 tensors, C a multiple of 8 and
 * 16-byte aligned rows. inp lives on the device. */
void encoder_forward_cuda(void *out, const int32_t *inp, const void *wte, const void *wpe, int B,
                          int T, int C, cudaStream_t stream);
/* Scratch the backward needs for B x T tokens (sorted token/row pairs). */
size_t encoder_backward_cuda_workspace_bytes(int B, int T);
/* Accumulates (+=) into dwte (V rows: every token is below V) and dwpe;
 * deterministic (sums in row order). */
void encoder_backward_cuda(void *dwte, void *dwpe, const void *dout, const int32_t *inp, int B,
                           int T, int C, int V, void *workspace, size_t workspace_bytes,
                           cudaStream_t stream);
#ifdef __cplusplus
}
#endif
#endif
#endif
