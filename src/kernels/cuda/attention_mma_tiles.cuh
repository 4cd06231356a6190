/* What the mma.sync attention kernels (attention_mma_fwd.cuh,
 * attention_mma_bwd.cuh) share on top of attention_tiles.cuh: the
 * tensor-core product of the family (mma.sync m16n8k16, bf16 in, fp32
 * accumulate) and the backward's vector reduction into the fp32 dQ
 * accumulator. */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_MMA_TILES_CUH
#define GPT2_KERNELS_CUDA_ATTENTION_MMA_TILES_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/cuda/attention_tiles.cuh"

namespace {

using namespace attention_tiles;

// ---------------------------------------------------------------------------
// PTX helpers of the mma.sync kernels

// d += a * b, a 16x16 (row), b 16x8 (col), bf16 in, fp32 accumulate.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// p[0] += a, p[1] += b: one vector reduction on sm_90, two before.
__device__ __forceinline__ void red_add_v2(float *p, float a, float b) {
#if __CUDA_ARCH__ >= 900
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(p), "f"(a), "f"(b) : "memory");
#else
    atomicAdd(p, a);
    atomicAdd(p + 1, b);
#endif
}

} // namespace
#endif
