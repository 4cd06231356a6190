/* FP8 casts on the GPU (kernels/fp8.h has the contract): bf16 tensors to
 * E4M3 or E5M2 with a per-tensor scale, optionally with the transposed
 * copy that a GEMM over the other dimension needs, and the tensor's amax
 * for the delayed-scaling recipe, all in one pass over the input.
 *
 * A block converts a 64 x 64 tile: each thread reads 8 bf16 (16 bytes),
 * multiplies by the scale in fp32 (as the CPU model does: one rounding,
 * no contraction) and converts pairs with the hardware's saturating
 * conversion (cvt.rn.satfinite on sm_89 and newer; cuda_fp8.h emulates it
 * elsewhere). The transposed copy goes through shared memory, so that both
 * outputs are written in 16-byte rows. The amax is taken on the bits: |x|
 * as an unsigned integer orders like the value, with NaN above infinity,
 * so an integer max propagates NaN where fmaxf would drop it; one atomic
 * per block.
 *
 * The fused GELU backward (GELU_BWD) reads a product's raw input gradient
 * and the GELU's input, and casts d * gelu'(pre) rounded to bf16, the
 * values matmul.cu's separate kernel would have stored, so that the FP8
 * bytes are the same; it also sums each column of the tile over its 64
 * rows in row order, the first half of the deterministic column sum that
 * matmul.cu's bias kernels take (the bias gradient of the layer that
 * produced pre), which bias_partials_add_cuda finishes. */
#include "kernels/fp8.h"

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gelu.cuh"
#include "kernels/matmul.h"

namespace {

constexpr int TILE = 64, THREADS = 256;

__device__ __forceinline__ uint16_t cvt_pair(float lo, float hi, fp8_format f) {
    const float2 v = make_float2(lo, hi); // .x in the low byte
    return f == FP8_E4M3 ? __nv_cvt_float2_to_fp8x2(v, __NV_SATFINITE, __NV_E4M3)
                         : __nv_cvt_float2_to_fp8x2(v, __NV_SATFINITE, __NV_E5M2);
}

// The value to cast of a bf16 pair (w: two bf16 bits in one word, .x low):
// the pair itself, or with GELU_BWD d * gelu'(pre) rounded to bf16, as fp32 bits.
template <bool GELU_BWD>
__device__ __forceinline__ void pair_bits(uint32_t w, uint32_t pw, uint32_t &lo, uint32_t &hi) {
    lo = w << 16, hi = w & 0xFFFF0000u; // bf16 -> fp32 bits
    if constexpr (GELU_BWD) {
        const float plo = __uint_as_float(pw << 16), phi = __uint_as_float(pw & 0xFFFF0000u);
        const __nv_bfloat162 g = __floats2bfloat162_rn(__uint_as_float(lo) * gelu_grad(plo),
                                                       __uint_as_float(hi) * gelu_grad(phi));
        const uint32_t gw = *reinterpret_cast<const uint32_t *>(&g);
        lo = gw << 16, hi = gw & 0xFFFF0000u;
    }
}

template <bool TRANSPOSE, bool GELU_BWD>
__global__ void __launch_bounds__(THREADS)
    fp8_cast_kernel(uint8_t *__restrict__ out, uint8_t *__restrict__ out_t,
                    unsigned *__restrict__ amax_bits, const __nv_bfloat16 *__restrict__ in,
                    int rows, int cols, const float *__restrict__ scale_ptr, fp8_format f,
                    const __nv_bfloat16 *__restrict__ pre, float *__restrict__ partials) {
    __shared__ __align__(16) uint8_t tile[TILE][TILE + 16]; // +16: rows stay 16-byte aligned
    __shared__ unsigned block_max[THREADS / 32];
    __shared__ float col_tile[GELU_BWD ? TILE : 1][TILE + 1]; // the values, for the column sums
    const int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
    const float scale = *scale_ptr;
    unsigned mx = 0;
    // 64 rows x 8 vectors of 8: two passes of 256 threads
#pragma unroll
    for (int pass = 0; pass < 2; pass++) {
        const int v = threadIdx.x + pass * THREADS, r = v >> 3, c = (v & 7) * 8;
        const int gr = r0 + r, gc = c0 + c;
        uint2 packed = make_uint2(0, 0);
        if (gr < rows && gc < cols) { // cols % 8 == 0: a vector is all in or all out
            const size_t at = (size_t)gr * cols + gc;
            const uint4 u = *reinterpret_cast<const uint4 *>(in + at);
            uint4 pu = make_uint4(0, 0, 0, 0);
            if (GELU_BWD) pu = *reinterpret_cast<const uint4 *>(pre + at);
            const uint32_t w[4] = {u.x, u.y, u.z, u.w}, pw[4] = {pu.x, pu.y, pu.z, pu.w};
            uint16_t p[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                uint32_t lo, hi;
                pair_bits<GELU_BWD>(w[i], pw[i], lo, hi);
                if (GELU_BWD) {
                    col_tile[GELU_BWD ? r : 0][c + 2 * i] = __uint_as_float(lo);
                    col_tile[GELU_BWD ? r : 0][c + 2 * i + 1] = __uint_as_float(hi);
                }
                mx = max(mx, max(lo & 0x7FFFFFFFu, hi & 0x7FFFFFFFu));
                p[i] = cvt_pair(__uint_as_float(lo) * scale, __uint_as_float(hi) * scale, f);
            }
            packed = make_uint2(p[0] | (uint32_t)p[1] << 16, p[2] | (uint32_t)p[3] << 16);
            *reinterpret_cast<uint2 *>(out + (size_t)gr * cols + gc) = packed;
        }
        if (TRANSPOSE) *reinterpret_cast<uint2 *>(&tile[r][c]) = packed;
    }
    if (amax_bits) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        if ((threadIdx.x & 31) == 0) block_max[threadIdx.x >> 5] = mx;
    }
    if (TRANSPOSE || amax_bits || GELU_BWD) __syncthreads();
    if (GELU_BWD && threadIdx.x < TILE && c0 + (int)threadIdx.x < cols) {
        // column c0 + threadIdx.x over the tile's rows, in row order, from 0
        float acc = 0.f;
        const int n = min(TILE, rows - r0);
        for (int r = 0; r < n; r++) acc += col_tile[GELU_BWD ? r : 0][threadIdx.x];
        partials[(size_t)blockIdx.y * cols + c0 + threadIdx.x] = acc;
    }
    if (amax_bits && threadIdx.x == 0) {
        unsigned m = 0;
#pragma unroll
        for (int w = 0; w < THREADS / 32; w++) m = max(m, block_max[w]);
        atomicMax(amax_bits, m);
    }
    if (TRANSPOSE) { // out_t row c0 + tc: 64 bytes, 4 vectors of 16
        const int tc = threadIdx.x >> 2, part = (threadIdx.x & 3) * 16;
        const int gc = c0 + tc, gr = r0 + part;
        if (gc < cols && gr < rows) { // rows % 16 == 0: a vector is all in or all out
            uint8_t b[16];
#pragma unroll
            for (int i = 0; i < 16; i++) b[i] = tile[part + i][tc];
            uint4 u;
            memcpy(&u, b, 16);
            *reinterpret_cast<uint4 *>(out_t + (size_t)gc * rows + gr) = u;
        }
    }
}

// One thread per tensor: fp8_scale_update (kernels/cpu/fp8.c) written
// again, the same float operations in the same order.
__global__ void fp8_scaling_update_kernel(fp8_scaling s, int slot) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= s.n) return;
    float *h = s.history + (size_t)i * s.len;
    const size_t at = (size_t)i * s.stride;
    h[slot] = s.amax[at];
    s.amax[at] = 0.0f;
    float mx = 0.0f;
    bool finite = true;
    for (int k = 0; k < s.len; k++) {
        finite = finite && isfinite(h[k]);
        mx = h[k] > mx ? h[k] : mx;
    }
    if (!finite || mx == 0.0f) return; // the scale stays
    const float max_finite = s.format[i] == FP8_E4M3 ? 448.0f : 57344.0f;
    float scale = __fdiv_rn(__fdiv_rn(max_finite, mx), ldexpf(1.0f, s.margin));
    if (isinf(scale)) scale = FLT_MAX;
    s.scale[at] = scale;
    s.dequant[at] = __fdiv_rn(1.0f, scale);
}

} // namespace

extern "C" void fp8_cast_cuda(uint8_t *out, uint8_t *out_t, float *amax, const void *in, int rows,
                              int cols, const float *scale, fp8_format f, cudaStream_t stream) {
    if (rows < 0 || cols < 0 || cols % 8 != 0 || (out_t && rows % 16 != 0))
        FAIL("fp8_cast_cuda: a %d x %d tensor: cols must be a multiple of 8%s", rows, cols,
             out_t ? ", rows of 16 (for the transposed copy)" : "");
    if (((uintptr_t)in | (uintptr_t)out | (uintptr_t)out_t) & 15u)
        FAIL("fp8_cast_cuda: tensors must be 16-byte aligned");
    if (!scale) FAIL("fp8_cast_cuda: no scale");
    if (rows == 0 || cols == 0) return;
    const dim3 grid((unsigned)((cols + TILE - 1) / TILE), (unsigned)((rows + TILE - 1) / TILE));
    const __nv_bfloat16 *x = static_cast<const __nv_bfloat16 *>(in);
    unsigned *bits = reinterpret_cast<unsigned *>(amax); // non-negative floats order as integers
    auto kernel = out_t ? fp8_cast_kernel<true, false> : fp8_cast_kernel<false, false>;
    kernel<<<grid, THREADS, 0, stream>>>(out, out_t, bits, x, rows, cols, scale, f, nullptr,
                                         nullptr);
    CUDA_CHECK_LAUNCH("fp8_cast_kernel");
}

extern "C" void fp8_gelu_backward_cast_cuda(uint8_t *out, uint8_t *out_t, float *amax, void *colsum,
                                            float *partials, const void *d, const void *pre,
                                            int rows, int cols, const float *scale, fp8_format f,
                                            cudaStream_t stream) {
    if (rows < 0 || cols < 0 || cols % 8 != 0 || rows % 16 != 0)
        FAIL("fp8_gelu_backward_cast_cuda: a %d x %d tensor: cols must be a multiple of 8, "
             "rows of 16",
             rows, cols);
    if (((uintptr_t)d | (uintptr_t)pre | (uintptr_t)out | (uintptr_t)out_t) & 15u)
        FAIL("fp8_gelu_backward_cast_cuda: tensors must be 16-byte aligned");
    if (!scale || !out_t || !partials)
        FAIL("fp8_gelu_backward_cast_cuda: needs a scale, the transposed output and partials");
    if (rows == 0 || cols == 0) return;
    const dim3 grid((unsigned)((cols + TILE - 1) / TILE), (unsigned)((rows + TILE - 1) / TILE));
    fp8_cast_kernel<true, true><<<grid, THREADS, 0, stream>>>(
        out, out_t, reinterpret_cast<unsigned *>(amax), static_cast<const __nv_bfloat16 *>(d), rows,
        cols, scale, f, static_cast<const __nv_bfloat16 *>(pre), partials);
    CUDA_CHECK_LAUNCH("fp8_cast_kernel (GELU backward)");
    if (colsum) bias_partials_add_cuda(colsum, partials, (rows + TILE - 1) / TILE, cols, stream);
}

extern "C" void fp8_scaling_update_cuda(const fp8_scaling *s, int64_t step, cudaStream_t stream) {
    if (s->n <= 0) return;
    if (s->len < 1 || s->stride < 1 || step < 0)
        FAIL("fp8_scaling_update_cuda: history of %d, stride %d, step %lld", s->len, s->stride,
             (long long)step);
    fp8_scaling_update_kernel<<<(unsigned)((s->n + 127) / 128), 128, 0, stream>>>(
        *s, (int)(step % s->len));
    CUDA_CHECK_LAUNCH("fp8_scaling_update_kernel");
}
