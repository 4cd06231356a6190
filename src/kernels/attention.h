/* Causal multi-head self-attention on the packed qkv projection, flash style:
 * the forward keeps only the log-sum-exp of every score row, and backward
 * recomputes the probabilities from it (no T x T matrix is stored). */
#ifndef GPT2_KERNELS_ATTENTION_H
#define GPT2_KERNELS_ATTENTION_H

#include <stdbool.h>

/* The head sizes HS = C/NH the CUDA kernels are built for; the CPU
 * reference takes any. */
static inline bool attention_cuda_head_size_ok(int HS) { return HS == 64 || HS == 128; }

/* qkv (B,T,3C) packed as [q | k | v], each C = NH heads of HS = C/NH.
 * out (B,T,C) heads concatenated; lse (B,NH,T) = log sum_s exp(q.k_s/sqrt(HS)). */
void attention_forward_cpu(float *out, float *lse, const float *qkv, int B, int T, int C,
                           int NH);
/* dqkv (B,T,3C) is overwritten. out and lse are the forward's. */
void attention_backward_cpu(float *dqkv, const float *dout, const float *qkv, const float *out,
                            const float *lse, int B, int T, int C, int NH);

/* CUDA backend (bf16 tensors as void *, fp32 lse; see kernels/cuda/attention.cu).
 * Visible in CUDA builds of C files and in every CUDA translation unit. HS =
 * C/NH must be 64 or 128; T is any length >= 1. All calls are asynchronous on
 * `stream`. */
#if (defined(GPT2_HAVE_CUDA) && GPT2_HAVE_CUDA) || defined(__CUDACC__)
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef struct CUstream_st *cudaStream_t; /* as in the CUDA runtime's driver_types.h */
/* out (B,T,C) bf16, lse (B,NH,T) fp32, from qkv (B,T,3C) bf16. */
void attention_forward_cuda(void *out, float *lse, const void *qkv, int B, int T, int C, int NH,
                            cudaStream_t stream);
/* Hopper: builds with sm_90a code (GPT2_CUDA_ARCHS with "90a") run head
 * sizes 64 and 128, forward and backward, on wgmma kernels on compute
 * capability 9.0 GPUs (on by default); 0 makes every call take the mma.sync
 * kernels, for comparisons. */
void attention_cuda_use_hopper(int on);
/* on = 1: the backward adds dq's contributions in a fixed order, so dqkv is
 * the same bits run to run (the forward and dk, dv always are). Only the
 * wgmma kernels do this: returns 1 when the kernels this device runs honour
 * it (or on = 0), else 0 and the setting stays off. */
int attention_cuda_set_deterministic(int on);
/* The kernel family a call with head size HS runs on the current device:
 * "wgmma (sm_90a)" or "mma.sync (sm_80)". */
const char *attention_cuda_kernels(int HS);
/* Device scratch the backward needs: an fp32 dq accumulator (B,T,C), the
 * row sums D = rowsum(dout * out) (B,NH,T) and the deterministic mode's
 * counters (4 per 64 positions of each head). */
size_t attention_backward_workspace_bytes(int B, int T, int C, int NH);
/* dqkv (B,T,3C) bf16 is overwritten; workspace holds at least
 * attention_backward_workspace_bytes(B, T, C, NH) bytes, 16-byte aligned, and
 * need not be initialised. */
void attention_backward_cuda(void *dqkv, const void *dout, const void *qkv, const void *out,
                             const float *lse, int B, int T, int C, int NH, void *workspace,
                             cudaStream_t stream);
#ifdef __cplusplus
}
#endif
#endif
#endif
