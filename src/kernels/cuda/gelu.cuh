/* GPT-2's GELU (the tanh form) and its derivative on the GPU, one copy for
 * every kernel that evaluates them (matmul.cu's fallbacks, fp8.cu's fused
 * GELU casts), so that their results agree bit for bit. sigmoid(2u) =
 * 0.5 (1 + tanh(u)), as the CPU reference (kernels/cpu/gelu.c), with the
 * MUFU's exponential and an approximate division: a few fp32 ulps, far
 * below the bf16 (or FP8) rounding of every result, where expf and an
 * IEEE division would leave the fused FP8 casts, which evaluate this for
 * every element of the MLP's hidden layer, bound by instruction issue. */
#ifndef GPT2_KERNELS_CUDA_GELU_CUH
#define GPT2_KERNELS_CUDA_GELU_CUH

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_CUBE 0.044715f

static __device__ __forceinline__ float gelu_sigmoid(float x) {
    const float u = GELU_SCALE * (x + GELU_CUBE * x * x * x);
    return __fdividef(1.0f, 1.0f + __expf(-2.0f * u)); /* exp overflowing: exactly 0 */
}

/* gelu(x) */
static __device__ __forceinline__ float gelu(float x) { return x * gelu_sigmoid(x); }

/* gelu'(x) */
static __device__ __forceinline__ float gelu_grad(float x) {
    const float s = gelu_sigmoid(x);
    const float du = GELU_SCALE * (1.0f + 3.0f * GELU_CUBE * x * x);
    return s + 2.0f * x * s * (1.0f - s) * du;
}
#endif
