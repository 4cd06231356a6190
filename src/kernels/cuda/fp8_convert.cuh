/* FP8 conversion helpers shared by the kernels that write FP8 (fp8.cu's
 * casts, layernorm.cu's FP8 output): eight values to eight bytes with the
 * hardware's saturating conversion, the block's amax and underflow counts,
 * and the byte transpose of a 4 x 4 square. */
#ifndef GPT2_KERNELS_CUDA_FP8_CONVERT_CUH
#define GPT2_KERNELS_CUDA_FP8_CONVERT_CUH

#include <cuda_fp8.h>
#include <stdint.h>

#include "kernels/fp8.h"

/* Two values (lo in the low byte), scaled already, to FP8 (cvt.rn.satfinite
 * on sm_89 and newer; cuda_fp8.h emulates it elsewhere). */
static __device__ __forceinline__ uint16_t fp8_cvt_pair(float lo, float hi, fp8_format f) {
    const float2 v = make_float2(lo, hi);
    return f == FP8_E4M3 ? __nv_cvt_float2_to_fp8x2(v, __NV_SATFINITE, __NV_E4M3)
                         : __nv_cvt_float2_to_fp8x2(v, __NV_SATFINITE, __NV_E5M2);
}

/* What one thread's casts have seen, before the block adds it into the
 * tensor's fp8_cast_stats: the amax as bits (|x| as an unsigned integer
 * orders like the value, with NaN above infinity, so an integer max keeps
 * NaN), the values not zero and those of them flushed to +-0. */
struct fp8_thread_stats {
    unsigned amax_bits, nonzero, flushed;
};

/* Eight bf16 values (w[i]: two of them, the first in the low half) times
 * scale in fp32 (one rounding, no contraction, as the CPU model) cast to 8
 * bytes, what they were and became added to t. The counts work on whole
 * words: a half's or byte's magnitude bits plus all ones carry into its
 * top bit exactly where they are not zero, so one popcount counts the
 * values not zero before the cast and another those not +-0 after it;
 * their difference is the flushed ones, since zero casts to +-0 and NaN
 * and the infinities to values that are not. */
static __device__ __forceinline__ uint2 fp8_cast8(const uint32_t w[4], float scale, fp8_format f,
                                                  fp8_thread_stats &t) {
    uint16_t p[4];
    uint32_t in_mask = 0;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint32_t magnitude = w[i] & 0x7FFF7FFFu;
        t.amax_bits = max(t.amax_bits, max(magnitude << 16, magnitude & 0xFFFF0000u));
        p[i] = fp8_cvt_pair(__uint_as_float(w[i] << 16) * scale,
                            __uint_as_float(w[i] & 0xFFFF0000u) * scale, f);
        in_mask |= ((magnitude + 0x7FFF7FFFu) & 0x80008000u) >> i; /* bits 15 - i, 31 - i */
    }
    const uint2 out = make_uint2(p[0] | (uint32_t)p[1] << 16, p[2] | (uint32_t)p[3] << 16);
    const uint32_t out_mask = (((out.x & 0x7F7F7F7Fu) + 0x7F7F7F7Fu) & 0x80808080u) |
                              ((((out.y & 0x7F7F7F7Fu) + 0x7F7F7F7Fu) & 0x80808080u) >> 1);
    const unsigned nonzero = __popc(in_mask);
    t.nonzero += nonzero;
    t.flushed += nonzero - __popc(out_mask);
    return out;
}

/* Shared memory for fp8_block_stats: a word of each per warp. */
struct fp8_block_scratch {
    unsigned amax_bits[32], nonzero[32], flushed[32];
};

/* The warp's threads' stats, combined (every lane gets them). */
static __device__ __forceinline__ fp8_thread_stats fp8_warp_stats_sum(fp8_thread_stats t) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        t.amax_bits = max(t.amax_bits, __shfl_xor_sync(0xffffffffu, t.amax_bits, o));
        t.nonzero += __shfl_xor_sync(0xffffffffu, t.nonzero, o);
        t.flushed += __shfl_xor_sync(0xffffffffu, t.flushed, o);
    }
    return t;
}

/* The stats of one thread (lane 0's, say) added into *stats by its atomics. */
static __device__ __forceinline__ void fp8_stats_add(fp8_thread_stats t, fp8_cast_stats *stats) {
    atomicMax(reinterpret_cast<unsigned *>(&stats->amax), t.amax_bits);
    if (t.nonzero) atomicAdd(&stats->nonzero, (unsigned long long)t.nonzero);
    if (t.flushed) atomicAdd(&stats->flushed, (unsigned long long)t.flushed);
}

/* The warp's threads' stats added into *stats by lane 0: for kernels whose
 * warps cannot meet at a block barrier at their end (warp-specialized, a
 * role returning early). */
static __device__ __forceinline__ void fp8_warp_stats(fp8_thread_stats t, fp8_cast_stats *stats) {
    t = fp8_warp_stats_sum(t);
    if ((threadIdx.x & 31) == 0) fp8_stats_add(t, stats);
}

/* The block's threads' stats added into *stats with one thread's atomics.
 * Synchronises the block. */
static __device__ __forceinline__ void fp8_block_stats(fp8_thread_stats t, fp8_cast_stats *stats,
                                                       fp8_block_scratch &shared) {
    t = fp8_warp_stats_sum(t);
    const unsigned warp = threadIdx.x >> 5;
    if ((threadIdx.x & 31) == 0)
        shared.amax_bits[warp] = t.amax_bits, shared.nonzero[warp] = t.nonzero,
        shared.flushed[warp] = t.flushed;
    __syncthreads();
    if (threadIdx.x != 0) return;
    unsigned m = 0, nonzero = 0, flushed = 0; /* a block casts far fewer than 2^32 values */
    for (unsigned w = 0; w < blockDim.x / 32; w++)
        m = max(m, shared.amax_bits[w]), nonzero += shared.nonzero[w], flushed += shared.flushed[w];
    fp8_stats_add({m, nonzero, flushed}, stats);
}

/* a[i]: 4 bytes (columns 0-3) of row i; col[j] (out): column j's 4 bytes,
 * row 0 in the low byte. */
static __device__ __forceinline__ void fp8_transpose4x4(const uint32_t a[4], uint32_t col[4]) {
    const uint32_t lo01 = __byte_perm(a[0], a[1], 0x5140), hi01 = __byte_perm(a[0], a[1], 0x7362);
    const uint32_t lo23 = __byte_perm(a[2], a[3], 0x5140), hi23 = __byte_perm(a[2], a[3], 0x7362);
    col[0] = __byte_perm(lo01, lo23, 0x5410);
    col[1] = __byte_perm(lo01, lo23, 0x7632);
    col[2] = __byte_perm(hi01, hi23, 0x5410);
    col[3] = __byte_perm(hi01, hi23, 0x7632);
}

/* The transposed copy of a 16-row, 4-column piece of an FP8 tile: row_word(i)
 * gives row i's 4 bytes (columns col0 ... col0 + 3); column col0 + j's 16
 * bytes land at out_t[(col0 + j) * rows + row0] in one 16-byte store. */
template <typename RowWord>
static __device__ __forceinline__ void fp8_store_transposed16(uint8_t *out_t, int rows, int row0,
                                                              int col0, RowWord row_word) {
    uint32_t col[4][4]; /* col[j][q]: column j, rows 4q ... 4q + 3 */
#pragma unroll
    for (int q = 0; q < 4; q++) {
        uint32_t a[4], c[4];
#pragma unroll
        for (int i = 0; i < 4; i++) a[i] = row_word(4 * q + i);
        fp8_transpose4x4(a, c);
#pragma unroll
        for (int j = 0; j < 4; j++) col[j][q] = c[j];
    }
#pragma unroll
    for (int j = 0; j < 4; j++)
        *reinterpret_cast<uint4 *>(out_t + (size_t)(col0 + j) * rows + row0) =
            make_uint4(col[j][0], col[j][1], col[j][2], col[j][3]);
}
#endif
