/* Linear layers, nn.Linear layout: out (N,OC) = inp (N,C) @ weight(OC,C)^T + bias(OC). */
#ifndef GPT2_KERNELS_MATMUL_H
#define GPT2_KERNELS_MATMUL_H

/* bias may be NULL. out is overwritten. */
void matmul_forward_cpu(float *out, const float *inp, const float *weight, const float *bias, int N,
                        int C, int OC);
/* dinp (N,C) is overwritten (skipped when NULL); dweight (OC,C) and dbias (OC)
 * are accumulated (+=), dbias skipped when NULL. */
void matmul_backward_cpu(float *dinp, float *dweight, float *dbias, const float *dout,
                         const float *inp, const float *weight, int N, int C, int OC);
/* dbias (OC) += the column sums of dout (N,OC), each column's rows in row
 * order: matmul_backward_cpu's dbias, also for callers that hold dout. */
void bias_grad_cpu(float *dbias, const float *dout, int N, int OC);

#if (defined(GPT2_HAVE_CUDA) && GPT2_HAVE_CUDA) || defined(__CUDACC__)
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "kernels/fp8.h"
#ifdef __cplusplus
extern "C" {
#endif
/* CUDA (src/kernels/cuda/matmul.cu): cuBLASLt, bf16 in and out, fp32
 * accumulation; C and OC multiples of 8. The handle, its workspace and the
 * autotune choice belong to the caller (ops_cuda: its state, set at
 * ops_cuda_init). */
typedef struct {
    cublasLtHandle_t handle;
    void *workspace;
    size_t workspace_bytes;
    /* true: each new GEMM shape times cuBLASLt's candidate algorithms once
     * and keeps the fastest; false: the heuristic's first */
    bool autotune;
    /* true: the calls run one-off shapes (kernel_ops.transient_shapes):
     * their plans, untuned, go to a small ring of their own, so that a
     * generation's new shape every token neither pushes out nor re-tunes
     * the training step's plans */
    bool transient;
} cublaslt_ctx;

/* Each product reads the bf16 operands, or with fp8 (not NULL) their FP8
 * copies (kernels/fp8.h: E4M3 inputs and weights, E5M2 output gradients,
 * each scaled; cuBLASLt's FP8 kernels, compute capability 8.9 and newer),
 * with fp32 accumulation and bf16 outputs either way. The bf16 operand
 * pointers are then unused (NULL allowed) except dout for dbias.
 *
 * out (N,OC) = inp @ weight^T + bias; bias may be NULL. */
void matmul_forward_cuda(void *out, const void *inp, const void *weight, const void *bias, int N,
                         int C, int OC, const fp8_linear_operands *fp8, const cublaslt_ctx *lt,
                         cudaStream_t stream);
/* out = residual + inp @ weight^T + bias (residual NULL: none), the add in
 * the GEMM's epilogue (beta = 1 on residual as C); out and residual
 * distinct. */
void matmul_residual_forward_cuda(void *out, const void *residual, const void *inp,
                                  const void *weight, const void *bias, int N, int C, int OC,
                                  const fp8_linear_operands *fp8, const cublaslt_ctx *lt,
                                  cudaStream_t stream);
/* pre = inp @ weight^T + bias, out = gelu(pre) (tanh form), one GEMM. */
void matmul_gelu_forward_cuda(void *out, void *pre, const void *inp, const void *weight,
                              const void *bias, int N, int C, int OC,
                              const fp8_linear_operands *fp8, const cublaslt_ctx *lt,
                              cudaStream_t stream);
/* out = gelu(pre) (tanh form), n elements, n a multiple of 8: what
 * matmul_gelu_forward's out would be from its stored pre (recompute_gelu). */
void gelu_forward_cuda(void *out, const void *pre, size_t n, cudaStream_t stream);
/* d *= gelu'(pre) in place (tanh form), n elements, n a multiple of 8:
 * the GELU backward that matmul_backward_cuda applies after a product
 * without the DGELU epilogue. */
void gelu_backward_cuda(void *d, const void *pre, size_t n, cudaStream_t stream);
/* dst (cols, bf16) += the sums over chunks of partials (chunks x cols fp32),
 * in a fixed order (kernels/cuda/column_sums.cu): the second half of the
 * deterministic column sums whose first half (per-chunk sums) the matmul
 * backward, fp8_gelu_backward_cast_cuda and the attention backward compute
 * on the way. */
void bias_partials_add_cuda(void *dst, const float *partials, int chunks, int cols,
                            cudaStream_t stream);
/* Scratch matmul_backward_cuda needs (column-sum staging for dbias and
 * dpre_colsum; 0 when both are NULL). */
size_t matmul_backward_cuda_workspace_bytes(int N, int C, int OC, const void *dbias,
                                            const void *dpre_colsum);
/* dinp (N,C) = dout @ weight, then times gelu'(pre) when pre is not NULL
 * (pre (N,C): the input of the gelu that fed this layer); dinp skipped when
 * NULL. dweight += dout^T @ inp; dbias += column sums of dout (skipped when
 * NULL); dpre_colsum (with pre; may be NULL) += column sums of dinp, the
 * bias gradient of the layer that produced pre. */
void matmul_backward_cuda(void *dinp, void *dweight, void *dbias, const void *dout, const void *inp,
                          const void *weight, const void *pre, int N, int C, int OC,
                          void *dpre_colsum, void *workspace, size_t workspace_bytes,
                          const fp8_linear_operands *fp8, const cublaslt_ctx *lt,
                          cudaStream_t stream);
/* Which cuBLASLt epilogues to use (where cuBLASLt has an algorithm for
 * them; otherwise, and for a cleared bit, plain GEMMs plus separate kernels
 * give the same results). Default MATMUL_FUSE_DEFAULT; the others exist to
 * test and time the alternatives. */
enum {
    MATMUL_FUSE_GELU = 1,   /* GELU_AUX(_BIAS) in matmul_gelu_forward */
    MATMUL_FUSE_DGELU = 2,  /* DGELU in the backward through a gelu */
    MATMUL_FUSE_BGRADB = 4, /* BGRADB for dbias (measured slower on H100: off) */
    /* DGELU_BGRAD: dpre_colsum in the DGELU GEMM's epilogue (measured
     * slower than the column-sum kernel on H100 with cuBLAS 13.0: off;
     * docs/gpu-training.md) */
    MATMUL_FUSE_DGELU_BGRAD = 8,
    /* the GELU products (forward with a bias, backward with dpre_colsum)
     * by matmul_wgmma.cu's GEMM where it runs (sm_90a on compute
     * capability 9.0; elsewhere the cuBLASLt epilogues above) */
    MATMUL_FUSE_OWN_GEMM = 16,
    /* with OWN_GEMM and autotune: per shape, the GELU forward by ours or
     * cuBLASLt's, whichever its first call times faster (cleared: ours) */
    MATMUL_FUSE_OWN_GEMM_TIMED = 32,
    MATMUL_FUSE_DEFAULT =
        MATMUL_FUSE_GELU | MATMUL_FUSE_DGELU | MATMUL_FUSE_OWN_GEMM | MATMUL_FUSE_OWN_GEMM_TIMED,
};
/* matmul_wgmma.cu (1: done; 0: not for this call or device, nothing done) */
int matmul_wgmma_gelu_forward(void *out, void *pre, const void *inp, const void *weight,
                              const void *bias, int N, int C, int OC, cudaStream_t stream);
size_t matmul_wgmma_dgelu_scratch_bytes(int N, int C, int OC);
int matmul_wgmma_dgelu(void *dinp, void *dpre_colsum, const void *dout, const void *weight,
                       const void *pre, int N, int C, int OC, void *scratch, cudaStream_t stream);
void matmul_cuda_set_fusion(int flags);
/* D[i] = alpha op(A[i]) op(B[i]) + beta C[i] for i < count, cuBLAS's
 * column-major convention (op(A) m x k, op(B) k x n, D m x n with leading
 * dimension ldd; ta, tb: 1 transposes), bf16 operands and results, fp32
 * accumulation; operand i lies stride_* elements after operand i - 1, C
 * (NULL: D) as D. One cuBLASLt call, its plan cached by shape like the
 * linear layers' (Muon's Newton-Schulz products, kernels/muon.h). */
void matmul_batched_cuda(int ta, int tb, int m, int n, int k, float alpha, const void *A, int lda,
                         int64_t stride_a, const void *B, int ldb, int64_t stride_b, float beta,
                         const void *C, void *D, int ldd, int64_t stride_d, int count,
                         const cublaslt_ctx *lt, cudaStream_t stream);
/* Counts since the start, for tests: plans made in the shared table (a
 * shape's first call, or a shape made again after it was pushed out),
 * plans tuned by timing their candidates, and GELU forward shapes whose
 * kernel (ours or cuBLASLt's) was chosen by timing both. One-off shapes
 * (cublaslt_ctx.transient) add to none. */
typedef struct {
    long plans_made, plans_tuned, gelu_choices_timed;
} matmul_plan_counts;
matmul_plan_counts matmul_cuda_plan_counts(void);
/* The measured choices so far: per GEMM plan, the heuristic's first
 * algorithm's time, the chosen one's, and its rate; per GELU forward shape,
 * our kernel's time, cuBLASLt's, and the pick. */
void matmul_cuda_print_tuning(FILE *out);
#ifdef __cplusplus
}
#endif
#endif
#endif
