/* GPT-2's GELU (the tanh form) and its derivative on the GPU, one copy for
 * every kernel that evaluates them (matmul.cu's fallbacks, fp8.cu's fused
 * GELU casts), so that their results agree bit for bit. sigmoid(2u) =
 * 0.5 (1 + tanh(u)), as the CPU reference (kernels/cpu/gelu.c). */
#ifndef GPT2_KERNELS_CUDA_GELU_CUH
#define GPT2_KERNELS_CUDA_GELU_CUH

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_CUBE 0.044715f

static __device__ __forceinline__ float gelu_sigmoid(float x) {
    const float u = GELU_SCALE * (x + GELU_CUBE * x * x * x);
    return 1.0f / (1.0f + expf(-2.0f * u));
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
