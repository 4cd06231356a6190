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
void attention_forward_cpu(float *out, float *lse, const float *qkv, int B, int T, int C, int NH);
/* dqkv (B,T,3C) is overwritten. out and lse are the forward's. */
void attention_backward_cpu(float *dqkv, const float *dout, const float *qkv, const float *out,
                            const float *lse, int B, int T, int C, int NH);

/* CUDA backend (bf16 tensors as void *, fp32 lse): kernels/cuda/attention.cu
 * chooses a kernel family per call, mma.sync (attention_mma.cu, compute
 * capability 8.0 and newer) or wgmma with TMA (attention_wgmma.cu, builds
 * with sm_90a code on compute capability 9.0: H100, H200, GH200). Visible in
 * CUDA builds of C files and in every CUDA translation unit. HS = C/NH must
 * be 64 or 128; T is any length >= 1. All calls are asynchronous on
 * `stream`. */
#if (defined(GPT2_HAVE_CUDA) && GPT2_HAVE_CUDA) || defined(__CUDACC__)
#include <stddef.h>
#include <stdint.h>

#include "kernels/fp8.h"
#ifdef __cplusplus
extern "C" {
#endif
typedef struct CUstream_st *cudaStream_t; /* as in the CUDA runtime's driver_types.h */
/* What a caller (the CUDA backend: its options, set at ops_cuda_init) asks
 * of the kernels; NULL wherever one is taken means the defaults,
 * {.hopper = true, .deterministic = false}. */
typedef struct {
    /* true: the wgmma kernels where they run (else mma.sync); false: the
     * mma.sync kernels everywhere, for comparisons. */
    bool hopper;
    /* true: the backward adds dq's contributions in a fixed order, so dqkv
     * is the same bits run to run (the forward and dk, dv always are). Only
     * the wgmma kernels have this mode: attention_cuda_options_supported. */
    bool deterministic;
} attention_cuda_options;
/* The kernel family a call with head size HS and these options runs on the
 * current device: "wgmma (sm_90a)" or "mma.sync (sm_80)". */
const char *attention_cuda_kernels(int HS, const attention_cuda_options *opt);
/* Whether the kernels the current device runs with opt honour all of it
 * (deterministic needs the wgmma kernels). A backward asked for what they
 * cannot do ends the program. */
bool attention_cuda_options_supported(const attention_cuda_options *opt);
/* out (B,T,C) bf16, lse (B,NH,T) fp32, from qkv (B,T,3C) bf16. */
void attention_forward_cuda(void *out, float *lse, const void *qkv, int B, int T, int C, int NH,
                            const attention_cuda_options *opt, cudaStream_t stream);
/* attention_forward_cuda followed by fp8_cast_cuda of out (B*T rows of C)
 * into out8 and out8_t (out8_t may be NULL; kernels/fp8.h: the same bytes
 * and stats), in one pass fewer where the kernels allow: on the wgmma
 * kernels at head size 64 with T a multiple of 64 the forward's epilogue
 * casts O as it stores it; elsewhere the two run as they are. The FP8
 * input of the attention projection (attn.c_proj), for its FP8 forward. */
void attention_forward_fp8_cuda(void *out, float *lse, const void *qkv, int B, int T, int C, int NH,
                                const attention_cuda_options *opt, uint8_t *out8, uint8_t *out8_t,
                                fp8_cast_stats *stats, const float *scale, fp8_format f,
                                cudaStream_t stream);
/* Device scratch the backward needs: an fp32 dq accumulator (B,T,C), the
 * row sums D = rowsum(dout * out) (B,NH,T), partial column sums of dqkv
 * (11 C floats per 64 positions) and the deterministic mode's counters (4 per 64
 * positions of each head). */
size_t attention_backward_workspace_bytes(int B, int T, int C, int NH);
/* dqkv (B,T,3C) bf16 is overwritten; dqkv_colsum (3C bf16, may be NULL) +=
 * dqkv's column sums (of the stored values, in a fixed order): the qkv
 * projection's bias gradient, summed on the way instead of in another pass
 * over dqkv. workspace holds at least attention_backward_workspace_bytes(B,
 * T, C, NH) bytes, 16-byte aligned, and need not be initialised. */
void attention_backward_cuda(void *dqkv, const void *dout, const void *qkv, const void *out,
                             const float *lse, int B, int T, int C, int NH, void *dqkv_colsum,
                             void *workspace, const attention_cuda_options *opt,
                             cudaStream_t stream);
/* attention_backward_cuda followed by fp8_cast_cuda of dqkv (B*T rows of 3C)
 * into out8 and out8_t (kernels/fp8.h: the same bytes and stats), in one
 * pass fewer: dQ goes from the fp32 accumulator into the cast, and dqkv's
 * q part (its first C columns) is left unwritten (out8 holds it); on the
 * wgmma kernels at head size 64 the main kernel casts dK and dV as it
 * stages them, and dqkv's k and v parts are left unwritten too. With T not
 * a multiple of 64 the two run as they are (dqkv written). The FP8 output
 * gradient of the qkv projection, for its FP8 backward. */
void attention_backward_fp8_cuda(void *dqkv, const void *dout, const void *qkv, const void *out,
                                 const float *lse, int B, int T, int C, int NH, void *dqkv_colsum,
                                 void *workspace, const attention_cuda_options *opt, uint8_t *out8,
                                 uint8_t *out8_t, fp8_cast_stats *stats, const float *scale,
                                 fp8_format f, cudaStream_t stream);
#ifdef __cplusplus
}
#endif
#endif
#endif
