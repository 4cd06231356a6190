/* 16-byte vectors of 8 bf16 for the CUDA kernels: one load or store
 * instruction per thread moves 8 elements, converted to or from fp32 in
 * registers (round to nearest even on the way back). Pointers must be 16-byte
 * aligned; the launchers check. */
#ifndef GPT2_KERNELS_CUDA_BF16_VEC_CUH
#define GPT2_KERNELS_CUDA_BF16_VEC_CUH

#include <cuda_bf16.h>
#include <stdint.h>

typedef __nv_bfloat16 bf16;

/* The 8 values of a raw 16-byte vector as fp32. */
static __device__ __forceinline__ void unpack8(float f[8], uint4 u) {
    const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 v = __bfloat1622float2(h[i]);
        f[2 * i] = v.x;
        f[2 * i + 1] = v.y;
    }
}

/* f[0..8) = p[0..8) */
static __device__ __forceinline__ void load8(float f[8], const bf16 *p) {
    unpack8(f, *reinterpret_cast<const uint4 *>(p));
}

/* Element i (0-7, a constant after unrolling) of a raw 16-byte vector as
 * fp32: a shift or a mask of one word, for loops that would rather not hold
 * all 8 unpacked values in registers. */
static __device__ __forceinline__ float element8(uint4 u, int i) {
    const uint32_t w = i < 2 ? u.x : i < 4 ? u.y : i < 6 ? u.z : u.w;
    return __uint_as_float(i % 2 ? w & 0xffff0000u : w << 16);
}

/* Two values rounded to bf16 in one 32-bit word, lo in the low half. */
static __device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t *>(&v);
}

static __device__ __forceinline__ uint4 pack8(const float f[8]) {
    uint4 u;
    __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    return u;
}

/* p[0..8) = f[0..8), rounded to nearest even. */
static __device__ __forceinline__ void store8(bf16 *p, const float f[8]) {
    *reinterpret_cast<uint4 *>(p) = pack8(f);
}

static __device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static __device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

static inline int is_aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }
#endif
