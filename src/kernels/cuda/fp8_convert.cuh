/* FP8 conversion helpers shared by the kernels that write FP8 (fp8.cu's
 * casts, layernorm.cu's FP8 output): eight values to eight bytes with the
 * hardware's saturating conversion, the block's amax on the bits, and the
 * byte transpose of a 4 x 4 square. */
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

/* Eight values as fp32 bits (bits[2i] the low half of word i) times scale
 * (one rounding, no contraction, as the CPU model) cast to 8 bytes; mx =
 * max(mx, |value| as bits): |x| as an unsigned integer orders like the
 * value, with NaN above infinity, so an integer max keeps NaN. */
static __device__ __forceinline__ uint2 fp8_cast8(const uint32_t bits[8], float scale, fp8_format f,
                                                  unsigned &mx) {
    uint16_t p[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint32_t lo = bits[2 * i], hi = bits[2 * i + 1];
        mx = max(mx, max(lo & 0x7FFFFFFFu, hi & 0x7FFFFFFFu));
        p[i] = fp8_cvt_pair(__uint_as_float(lo) * scale, __uint_as_float(hi) * scale, f);
    }
    return make_uint2(p[0] | (uint32_t)p[1] << 16, p[2] | (uint32_t)p[3] << 16);
}

/* The bits of the 8 bf16 of a 16-byte vector as fp32, for fp8_cast8. */
static __device__ __forceinline__ void fp8_bf16_bits(const uint4 u, uint32_t bits[8]) {
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; i++) bits[2 * i] = w[i] << 16, bits[2 * i + 1] = w[i] & 0xFFFF0000u;
}

/* The block's amax (bits, per thread in mx) into *amax_bits with one atomic;
 * block_max: a word of shared memory per warp. Synchronises the block. */
static __device__ __forceinline__ void fp8_block_amax(unsigned mx, unsigned *amax_bits,
                                                      unsigned *block_max) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    if ((threadIdx.x & 31) == 0) block_max[threadIdx.x >> 5] = mx;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned m = 0;
        for (unsigned w = 0; w < blockDim.x / 32; w++) m = max(m, block_max[w]);
        atomicMax(amax_bits, m);
    }
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
