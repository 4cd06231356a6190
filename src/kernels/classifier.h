/* Fused classifier: softmax, cross-entropy and its gradient in one pass over
 * each row of logits, written in place so no probability matrix is kept. */
#ifndef GPT2_KERNELS_CLASSIFIER_H
#define GPT2_KERNELS_CLASSIFIER_H
#include <stdint.h>

/* logits (N,Vp) rows; only the first V columns are real (the rest is padding
 * and never affects the loss). losses[i] = -log softmax(logits[i,:V])[targets[i]].
 * When dloss != 0, logits is replaced by dlogits = (softmax - onehot) * dloss
 * for the first V columns and 0 for the padding; with dloss == 0 logits are left
 * untouched (evaluation). */
void classifier_forward_backward_cpu(float *logits, float *losses, const int32_t *targets, int N,
                                     int V, int Vp, float dloss);

#if (defined(GPT2_HAVE_CUDA) && GPT2_HAVE_CUDA) || defined(__CUDACC__)
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif
/* CUDA (src/kernels/cuda/classifier.cu): bf16 logits (Vp a multiple of 8,
 * 16-byte aligned rows), fp32 math and losses, targets on the device. A
 * target outside [0, V) gives a NaN loss. */
void classifier_forward_backward_cuda(void *logits, float *losses, const int32_t *targets, int N,
                                      int V, int Vp, float dloss, cudaStream_t stream);
/* The same with dloss != 0, for an FP8 lm head: dlogits go into out8 (N,Vp
 * row-major) as FP8 E5M2, fp8(bf16(dlogits) * *scale) with fp8_cast_cuda's
 * encoding (the bytes fp8_cast_cuda makes of the plain kernel's dlogits),
 * and the logits are not written. No stats: with |dlogits| <= |dloss| a
 * scale can be chosen that never saturates (gpt2's FP8 lm head takes a
 * power of two). Vp a multiple of 8, out8 8-byte aligned. */
void classifier_forward_backward_fp8_cuda(void *logits, float *losses, const int32_t *targets,
                                          int N, int V, int Vp, float dloss, uint8_t *out8,
                                          const float *scale, cudaStream_t stream);
/* acc[i] += losses[i] for i < N (fp32, device): losses summed over
 * micro-steps on the GPU, downloaded only when a step is logged. */
void loss_accumulate_cuda(float *acc, const float *losses, int N, cudaStream_t stream);
#ifdef __cplusplus
}
#endif
#endif
#endif
