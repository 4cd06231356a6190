/* What the wgmma attention kernels (attention_wgmma_fwd.cuh,
 * attention_wgmma_bwd.cuh, attention_wgmma_bwd_ws.cuh) share on top of
 * attention_tiles.cuh and wgmma.cuh: ATTN_WGMMA_DEVICE (the device pass that
 * emits their code), the TMA loads and L2 prefetches of tiles in the atom
 * layout, the k steps of a K-major tile, and the products with a register A
 * operand built from fp32 accumulators. */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_WGMMA_TILES_CUH
#define GPT2_KERNELS_CUDA_ATTENTION_WGMMA_TILES_CUH

#include <cuda.h> // CUtensorMap
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/cuda/attention_tiles.cuh"
#include "kernels/cuda/hopper.cuh"
#include "kernels/cuda/wgmma.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATTN_WGMMA_DEVICE 1 // this device pass emits the wgmma code
#endif

namespace {

using namespace attention_tiles;

#ifdef ATTN_WGMMA_DEVICE
// ROWS positions from row0 of head `head` of batch b of a make_head_map
// tensor map, NA atoms of 64 head dims (ROWS / 64 x NA boxes), into the
// tile at s in the atom layout (attention_tiles.cuh), completing on bar.
template <int ROWS, int NA>
__device__ __forceinline__ void tma_tile(bf16 *s, const CUtensorMap *map, int head, int row0, int b,
                                         uint32_t bar) {
#pragma unroll
    for (int a = 0; a < NA; a++)
#pragma unroll
        for (int r = 0; r < ROWS / 64; r++)
            tma_load_4d(smem_u32(s + a * ROWS * 64 + r * 64 * 64), map, 64 * a, head, row0 + 64 * r,
                        b, bar);
}

// The tile that tma_tile<ROWS, NA> would load, into L2 only (no completion
// to wait for): a later tma_tile of it then reads L2 instead of memory.
template <int ROWS, int NA>
__device__ __forceinline__ void tma_prefetch_tile(const CUtensorMap *map, int head, int row0,
                                                  int b) {
#pragma unroll
    for (int a = 0; a < NA; a++)
#pragma unroll
        for (int r = 0; r < ROWS / 64; r++)
            asm volatile(
                "cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];\n" ::"l"(
                    reinterpret_cast<uint64_t>(map)),
                "r"(64 * a), "r"(head), "r"(row0 + 64 * r), "r"(b)
                : "memory");
}

// The A fragments of wgmma's register operand from fp32 accumulators of the
// same rows (the mma.sync layout: two n-tiles of 8 columns = one k step of 16).
template <int KS>
__device__ __forceinline__ void pack_a_frags(const float (&x)[KS * 8], uint32_t (&frag)[KS][4]) {
#pragma unroll
    for (int k = 0; k < KS; k++)
#pragma unroll
        for (int r = 0; r < 4; r++) frag[k][r] = pack_bf16(x[8 * k + 2 * r], x[8 * k + 2 * r + 1]);
}

// acc (NA atoms of 64 columns, 32 accumulators each) += A B, issued: A from
// registers (frag[k], the A fragment of k step k: 16 rows of B), B the
// MN-major tile at desc, its atoms ROWS * 128 bytes apart (P V in the
// forward; dV += P^T dO, dK += dS^T Q in the backward).
template <int NA, int KS, int ROWS>
__device__ __forceinline__ void wgmma_rs_tile(float *acc, const uint32_t (&frag)[KS][4],
                                              Sw128 desc) {
#pragma unroll
    for (int a = 0; a < NA; a++)
#pragma unroll
        for (int k = 0; k < KS; k++)
            wgmma_m64n64k16_rs(*reinterpret_cast<float(*)[32]>(acc + 32 * a), frag[k],
                               desc.at(a * ROWS * 128 + 2048 * k));
}
#endif

// Shared-memory byte address of k step kk (16 head dims) of a K-major tile
// of ROWS rows in the atom layout (attention_tiles.cuh): 32 bytes a step within a
// 64-column atom, atoms ROWS * 128 bytes apart.
template <int ROWS> __device__ __forceinline__ constexpr uint32_t kstep_off(int kk) {
    return (kk >> 2) * ROWS * 128 + 32 * (kk & 3);
}

} // namespace
#endif
