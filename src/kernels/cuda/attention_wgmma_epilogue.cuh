/* The wgmma backward kernels' stores (attention_wgmma_bwd.cuh,
 * attention_wgmma_bwd_ws.cuh): dS transposed into shared memory for the dQ
 * product, a tile's dQ fragments staged in shared memory for the copy
 * engine's reduction into dq_acc, with the deterministic mode's turns on
 * their counters, and a key block's dK and dV: stored from registers into
 * dqkv, or staged as TMA boxes (the warp-specialized kernel at head size
 * 64), or, with FP8 output, cast from the staged rows into dqkv's FP8
 * copies. */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_WGMMA_EPILOGUE_CUH
#define GPT2_KERNELS_CUDA_ATTENTION_WGMMA_EPILOGUE_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/cuda/attention_families.h"      // AttnFp8Out
#include "kernels/cuda/attention_tile_shapes.cuh" // WsBwd64's boxes
#include "kernels/cuda/attention_wgmma_tiles.cuh"
#include "kernels/cuda/fp8_convert.cuh"

namespace {

#ifdef ATTN_WGMMA_DEVICE
// The deterministic mode's turn-taking on a global counter: wait until it
// reaches `turn` (acquire), and pass the turn on (release). The proxy fences
// order the copy engine's writes with these generic-proxy accesses.
__device__ __forceinline__ void turn_wait(const unsigned *counter, unsigned turn) {
    unsigned v;
    do {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(counter) : "memory");
    } while (v < turn);
    asm volatile("fence.proxy.async.global;\n" ::: "memory");
}
__device__ __forceinline__ void turn_pass(unsigned *counter) {
    asm volatile("fence.proxy.async.global;\n" ::: "memory");
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(counter) : "memory");
}
#endif

#ifdef ATTN_WGMMA_DEVICE
// dS (queries x keys) from a warp's dS^T A fragments into the 64-key atom
// at `atom` of a tile of queries as rows (128 bytes each, swizzled):
// fragment da[kq][m] is the 8x8 block of keys 16 warp + 8 (m & 1).. x
// queries 16 kq + 8 (m >> 1).., stored transposed.
template <int KQ>
__device__ __forceinline__ void store_ds_trans(uint32_t atom, const uint32_t (&da)[KQ][4], int warp,
                                               int lane) {
    const int m = lane >> 3, c = lane & 7, chunk = 2 * warp + (m & 1);
#pragma unroll
    for (int kq = 0; kq < KQ; kq++) {
        const int q = 16 * kq + 8 * (m >> 1) + c;
        stmatrix_x4_trans(atom + q * 128 + ((chunk ^ (q & 7)) << 4), da[kq]);
    }
}
#endif

// dK (scaled) and dV of one warp's 16 keys (its wgmma accumulators: key
// chunk_k0 + 16 warp + g + 8 (e >> 1), column 8 n + 2 t4 + (e & 1) in
// [4 n + e]) into dqkv, both rows of a column group in one step: by rows,
// ptxas spilled more of the one-warpgroup kernel at head size 128, which
// has all 255 registers in use.
template <int NO>
__device__ __forceinline__ void store_warp_dkv(const float (&dk)[NO * 4], const float (&dv)[NO * 4],
                                               bf16 *dqkv, const BwdBlock &blk, int T, int chunk_k0,
                                               int warp, int lane, float scale) {
    constexpr int HS = NO * 8;
    const int g = lane >> 2, t4 = lane & 3, C = blk.C, kw0 = chunk_k0 + 16 * warp;
    bf16 *dkg = dqkv + (size_t)blk.b * T * blk.ld + C + (size_t)blk.h * HS;
    bf16 *dst0 = dkg + (size_t)(kw0 + g) * blk.ld + 2 * t4, *dst1 = dst0 + 8 * blk.ld;
    const bool in0 = kw0 + g < T, in1 = kw0 + g + 8 < T;
#pragma unroll
    for (int n = 0; n < NO; n++) {
        if (in0) {
            *reinterpret_cast<uint32_t *>(dst0 + n * 8) =
                pack_bf16(dk[4 * n] * scale, dk[4 * n + 1] * scale);
            *reinterpret_cast<uint32_t *>(dst0 + C + n * 8) = pack_bf16(dv[4 * n], dv[4 * n + 1]);
        }
        if (in1) {
            *reinterpret_cast<uint32_t *>(dst1 + n * 8) =
                pack_bf16(dk[4 * n + 2] * scale, dk[4 * n + 3] * scale);
            *reinterpret_cast<uint32_t *>(dst1 + C + n * 8) =
                pack_bf16(dv[4 * n + 2], dv[4 * n + 3]);
        }
    }
}

#ifdef ATTN_WGMMA_DEVICE
// A warp's dQ fragments of a 64 x 64 product (query row 16 warp + g + 8
// (e >> 1), dim 8n + 2 t4 + (e & 1) in [4n + e]) into the 64 fp32 rows at
// rows, in dq_wgmma_index's layout (8-float chunk n of row r at n ^ (r &
// 7), and r & 7 = g: stores free of bank conflicts).
__device__ __forceinline__ void stage_dq_frags(float *rows, const float (&dq)[32], int warp,
                                               int lane) {
    const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = 16 * warp + g + 8 * r;
#pragma unroll
        for (int n = 0; n < 8; n++)
            *reinterpret_cast<float2 *>(rows + row * 64 + ((n ^ g) << 3) + 2 * t4) =
                make_float2(dq[4 * n + 2 * r], dq[4 * n + 2 * r + 1]);
    }
}
// Counter `slot` (of 4) of the 64 dQ rows from row0 (a multiple of 64) of
// pair bh (dq_counters_bytes' layout): the deterministic mode's turns, or
// the warp-specialized kernel's claims.
__device__ __forceinline__ unsigned *dq_turn_counter(unsigned *counters, int bh, int T, int row0,
                                                     int slot) {
    return counters + ((size_t)bh * ((T + 63) / 64) + row0 / 64) * 4 + slot;
}
#endif

#ifdef ATTN_WGMMA_DEVICE
// One consumer warp's 16 keys of dK (scaled) and dV (accumulators as
// store_warp_dkv's, head size 64) as bf16 rows 16 warp.. of the warpgroup's
// two boxes at `boxes` (dK's, then dV's), 16-byte chunk n of row r at
// n ^ (r & 7): TMA's 128-byte swizzle, and stores free of bank conflicts.
// The offset is tile_off<64>'s, written out: through tile_off the producer
// warps spilled 136 bytes instead of 80 and the backward ran 5% slower
// (docs/attention.md).
__device__ __forceinline__ void stage_warp_dkv(const float (&dk)[32], const float (&dv)[32],
                                               unsigned char *boxes, int warp, int lane,
                                               float scale) {
    const int g = lane >> 2, t4 = lane & 3;
    uint32_t *k32 = reinterpret_cast<uint32_t *>(boxes + warp * 16 * 128),
             *v32 = k32 + WsBwd64::BOX / 4;
#pragma unroll
    for (int r = 0; r < 2; r++)
#pragma unroll
        for (int n = 0; n < 8; n++) {
            const int at = ((g + 8 * r) * 8 + (n ^ g)) * 4 + t4;
            k32[at] = pack_bf16(dk[4 * n + 2 * r] * scale, dk[4 * n + 2 * r + 1] * scale);
            v32[at] = pack_bf16(dv[4 * n + 2 * r], dv[4 * n + 2 * r + 1]);
        }
}

// The FP8 copies of one consumer warp's 16 keys of dK and dV (the backward
// with FP8 output), from the bf16 rows stage_warp_dkv left in the warp's
// rows of the boxes: read back 16 bytes at a time (the values the bf16
// path stores, so that the bytes are fp8_cast_cuda's of them), cast with
// fp8_scale, and stored row-major (8 bytes a piece: fp8.out is rows x 3C,
// dK's columns from col_k, dV's C further); then, as 64-byte FP8 rows over
// the same shared memory, the transposed copy (fp8.out_t, 3C x rows), 16
// keys of a column in one 16-byte store. key0: the warp's first key as a
// row of the B * T = rows; seen: what the casts saw.
__device__ __forceinline__ void cast_warp_dkv(unsigned char *boxes, int warp, int lane,
                                              const AttnFp8Out &fp8, float fp8_scale, int rows,
                                              int C, int key0, int col_k, fp8_thread_stats &seen) {
    const size_t ld = 3 * (size_t)C;
#pragma unroll
    for (int e = 0; e < 2; e++) { // dK, dV
        unsigned char *wrows = boxes + e * WsBwd64::BOX + warp * 16 * 128;
        const int col = col_k + e * C;
        uint2 o8[4]; // piece i = lane + 32 k: row i / 8, 8-column chunk i % 8
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int i = lane + 32 * k, r = i >> 3, c = i & 7;
            const uint4 v =
                *reinterpret_cast<const uint4 *>(wrows + r * 128 + ((c ^ (r & 7)) << 4));
            const uint32_t w[4] = {v.x, v.y, v.z, v.w};
            o8[k] = fp8_cast8(w, fp8_scale, fp8.format, seen);
            *reinterpret_cast<uint2 *>(fp8.out + (size_t)(key0 + r) * ld + col + 8 * c) = o8[k];
        }
        if (!fp8.out_t) continue;
        __syncwarp(); // every lane's bf16 read before the FP8 rows go over them
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int i = lane + 32 * k;
            *reinterpret_cast<uint2 *>(wrows + (i >> 3) * 64 + 8 * (i & 7)) = o8[k];
        }
        __syncwarp();
        if (lane < 16)
            fp8_store_transposed16(
                fp8.out_t + (size_t)col * rows, rows, key0, 4 * lane, [&](int i) {
                    return *reinterpret_cast<const uint32_t *>(wrows + i * 64 + 4 * lane);
                });
    }
}
#endif

} // namespace
#endif
