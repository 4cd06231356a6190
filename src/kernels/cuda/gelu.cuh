/* GPT-2's GELU (the tanh form) and its derivative on the GPU, one copy for
 * every kernel that evaluates them (matmul_wgmma.cu's epilogues,
 * matmul.cu's fallbacks, fp8.cu's fused GELU casts), so that their results
 * agree bit for bit. sigmoid(2u) = 0.5 (1 + tanh(u)), as the CPU reference
 * (kernels/cpu/gelu.c), evaluated as 1 / (1 + 2^(x (C1 + C2 x^2))) with
 * the constants folded and the MUFU's 2^x and reciprocal called directly
 * (fast_exp2, fast_rcp: flushed to zero): a few fp32 ulps from the
 * reference, far below the bf16 (or FP8) rounding of every result. The
 * GEMM epilogues that evaluate these for every element of the MLP's hidden
 * layer run under the other warpgroup's products only while they issue
 * fewer instructions than the products take; __expf and __fdividef (this
 * build has no -ftz) wrapped each MUFU in range fix-ups, half of the
 * epilogue's instructions (docs/gpu-training.md). */
#ifndef GPT2_KERNELS_CUDA_GELU_CUH
#define GPT2_KERNELS_CUDA_GELU_CUH

#include "kernels/cuda/ptx.cuh" // fast_exp2, fast_rcp

/* -2 log2(e) sqrt(2/pi) and that times 0.044715: 2^(x (C1 + C2 x^2)) = exp(-2u) */
#define GELU_EXP2_C1 -2.3022082f
#define GELU_EXP2_C2 -0.10294324f
/* 2 sqrt(2/pi) and 6 sqrt(2/pi) 0.044715: 2 u'(x) = K1 + K2 x^2 */
#define GELU_DU_K1 1.5957691f
#define GELU_DU_K2 0.21406445f

/* sigmoid(2u(x)), x2 = x * x: 2^(...) overflowing gives exactly 0 */
static __device__ __forceinline__ float gelu_sigmoid_x2(float x, float x2) {
    return fast_rcp(1.0f + fast_exp2(x * fmaf(x2, GELU_EXP2_C2, GELU_EXP2_C1)));
}

/* gelu(x) */
static __device__ __forceinline__ float gelu(float x) { return x * gelu_sigmoid_x2(x, x * x); }

/* gelu'(x) = s + 2 x s (1 - s) u'(x), s = sigmoid(2u) */
static __device__ __forceinline__ float gelu_grad(float x) {
    const float x2 = x * x, s = gelu_sigmoid_x2(x, x2);
    return fmaf(s * (x * (1.0f - s)), fmaf(x2, GELU_DU_K2, GELU_DU_K1), s);
}
#endif
