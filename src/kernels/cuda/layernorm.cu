/* LayerNorm on the GPU: bf16 tensors, fp32 statistics and math (eps 1e-5,
 * biased variance, as GPT-2), the fused residual add + LayerNorm, and the
 * forward whose output is cast to FP8 for the FP8 linear layers (its
 * design at layernorm_forward_fp8_kernel).
 *
 * Forward: one warp per row. The row is read once with 16-byte loads into
 * registers (VPL vectors of 8 per lane, a template parameter, so the arrays
 * stay in registers: C <= 32 * 8 * LN_MAX_VPL = 2048), then the mean, the
 * variance as the mean of squared deviations (two passes over registers, no
 * E[x^2] - E[x]^2 cancellation) and the output. The fused variant stores the
 * residual a + b rounded to bf16 and normalises the rounded values, so the
 * saved mean/rstd describe exactly what backward reads.
 *
 * Backward: one warp per row for dinp += (fp32 math, one rounding); the
 * row's x, dout and old dinp are loaded together, so a row costs one memory
 * latency. dweight/dbias sums go to per-warp fp32 rows in shared memory
 * (8 KB per warp at C = 768: registers would halve the occupancy), each lane
 * always updating its own channels; at the end the block adds its warps'
 * rows in warp order into one fp32 partial. Blocks own fixed runs of rows:
 * as many blocks as the GPU holds at once (one wave: no tail of a last,
 * part-filled wave, and fewer partials to write and add), at least
 * LN_BWD_ROWS rows each. A second kernel adds the partials of every block in
 * block order and adds the result to the bf16 gradients once. No atomics:
 * the result depends only on N, C and the GPU's multiprocessor count,
 * bitwise. With dinp_colsum the same
 * machinery sums the columns of the new (bf16-rounded) dinp as a third
 * vector: the bias gradient of the projection whose output the residual
 * stream received, which would otherwise cost the matmul backward another
 * pass over it (12 KB of shared memory per warp at C = 768 instead of 8:
 * still 3 blocks per SM). */
#include "kernels/layernorm.h"

#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/fp8_convert.cuh"
#include "kernels/cuda/sm_count.cuh"
#include "kernels/cuda/smem_limit.cuh"

#define LN_EPS 1e-5f
enum { LN_WARPS = 8, LN_THREADS = LN_WARPS * 32, LN_MAX_VPL = 8, LN_BWD_ROWS = 32 };
enum { LN_FP8_ROWS = 32 }; /* rows per block of the FP8-output forward */

/* One row's forward by a warp: the residual stored (RESIDUAL: a + b rounded
 * to bf16, normalised as rounded), mean and rstd saved (where non-NULL),
 * and each output vector handed to emit(v, o) (v: its index in the row). */
template <int VPL, bool RESIDUAL, typename Emit>
static __device__ __forceinline__ void
layernorm_row(int row, bf16 *residual, float *mean, float *rstd, const bf16 *a, const bf16 *b,
              const bf16 *weight, const bf16 *bias, int C, Emit emit) {
    const int lane = threadIdx.x % 32;
    const int C8 = C / 8;
    const size_t base = (size_t)row * C;
    float x[VPL][8];
    float sum = 0.f;
#pragma unroll
    for (int k = 0; k < VPL; k++) {
        const int v = k * 32 + lane;
        if (v < C8) {
            load8(x[k], a + base + v * 8);
            if (RESIDUAL) {
                float y[8];
                load8(y, b + base + v * 8);
#pragma unroll
                for (int i = 0; i < 8; i++) x[k][i] += y[i];
                const uint4 r = pack8(x[k]);
                *reinterpret_cast<uint4 *>(residual + base + v * 8) = r;
                unpack8(x[k], r);
            }
#pragma unroll
            for (int i = 0; i < 8; i++) sum += x[k][i];
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) x[k][i] = 0.f;
        }
    }
    const float m = warp_sum(sum) / (float)C;
    float sq = 0.f;
#pragma unroll
    for (int k = 0; k < VPL; k++) {
        if (k * 32 + lane < C8) {
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const float d = x[k][i] - m;
                sq += d * d;
            }
        }
    }
    const float s = 1.0f / sqrtf(warp_sum(sq) / (float)C + LN_EPS);
#pragma unroll
    for (int k = 0; k < VPL; k++) {
        const int v = k * 32 + lane;
        if (v < C8) {
            float w[8], bb[8], o[8];
            load8(w, weight + v * 8);
            load8(bb, bias + v * 8);
#pragma unroll
            for (int i = 0; i < 8; i++) o[i] = (x[k][i] - m) * s * w[i] + bb[i];
            emit(v, o);
        }
    }
    if (lane == 0) {
        if (mean) mean[row] = m;
        if (rstd) rstd[row] = s;
    }
}

template <int VPL, bool RESIDUAL>
static __global__ void __launch_bounds__(LN_THREADS)
    layernorm_forward_kernel(bf16 *residual, bf16 *out, float *mean, float *rstd, const bf16 *a,
                             const bf16 *b, const bf16 *weight, const bf16 *bias, int N, int C) {
    const int row = blockIdx.x * LN_WARPS + threadIdx.x / 32;
    if (row >= N) return;
    bf16 *out_row = out + (size_t)row * C;
    layernorm_row<VPL, RESIDUAL>(row, residual, mean, rstd, a, b, weight, bias, C,
                                 [&](int v, const float o[8]) { store8(out_row + v * 8, o); });
}

/* The forward with FP8 output: each warp takes LN_FP8_ROWS / LN_WARPS rows of
 * the block's LN_FP8_ROWS; each output vector is rounded to bf16 (the
 * values the bf16 kernel stores) and cast with the tensor's scale (the
 * bytes fp8_cast_cuda would write). With TRANSPOSE the block's FP8 rows
 * wait in shared memory (rows padded to 128 bytes, the 16-word halves of
 * rows 16-31 swapped so that the reads below hit 32 banks); then each
 * pair of lanes takes a 4-byte word (4 columns), one lane rows 0-15, the
 * other 16-31, so that each column's 32 bytes are written by two adjacent
 * 16-byte stores: one full sector. */
static __host__ __device__ int fp8_row_words(int C) { return (C / 4 + 31) / 32 * 32; }

template <int VPL, bool RESIDUAL, bool TRANSPOSE>
static __global__ void __launch_bounds__(LN_THREADS)
    layernorm_forward_fp8_kernel(bf16 *residual, uint8_t *out, uint8_t *out_t,
                                 fp8_cast_stats *stats, float *mean, float *rstd, const bf16 *a,
                                 const bf16 *b, const bf16 *weight, const bf16 *bias, int N, int C,
                                 const float *scale_ptr, fp8_format f) {
    extern __shared__ __align__(16) uint32_t fp8_rows[]; /* LN_FP8_ROWS x fp8_row_words(C) */
    __shared__ fp8_block_scratch block_stats;
    const float scale = *scale_ptr;
    const int warp = threadIdx.x / 32, r0 = blockIdx.x * LN_FP8_ROWS, row_words = fp8_row_words(C);
    fp8_thread_stats seen = {0, 0, 0};
    for (int i = 0; i < LN_FP8_ROWS / LN_WARPS; i++) {
        const int r = warp + i * LN_WARPS, row = r0 + r;
        if (row >= N) break;
        uint8_t *out_row = out + (size_t)row * C;
        uint32_t *tile_row = fp8_rows + (size_t)r * row_words;
        const int swap = r >= 16 ? 16 : 0;
        layernorm_row<VPL, RESIDUAL>(
            row, residual, mean, rstd, a, b, weight, bias, C, [&](int v, const float o[8]) {
                const uint4 u = pack8(o);
                const uint32_t w[4] = {u.x, u.y, u.z, u.w};
                const uint2 p = fp8_cast8(w, scale, f, seen);
                *reinterpret_cast<uint2 *>(out_row + v * 8) = p;
                if (TRANSPOSE) *reinterpret_cast<uint2 *>(tile_row + ((2 * v) ^ swap)) = p;
            });
    }
    if (stats)
        fp8_block_stats(seen, stats, block_stats);
    else if (TRANSPOSE)
        __syncthreads();
    if (!TRANSPOSE) return;
    const int halves = min(LN_FP8_ROWS, N - r0) / 16; /* N % 16 == 0 */
    for (int t = threadIdx.x; t < C / 4 * 2; t += LN_THREADS) {
        const int w = t >> 1, h = t & 1;
        if (h >= halves) continue;
        fp8_store_transposed16(out_t, N, r0 + 16 * h, 4 * w, [&](int i) {
            return fp8_rows[(size_t)(16 * h + i) * row_words + (w ^ (16 * h))];
        });
    }
}

/* 3 blocks (24 warps) per SM up to C = 768: 85 registers and 48 KB of
 * shared memory each (72 KB with COLSUM) */
template <int VPL, bool COLSUM>
static __global__ void __launch_bounds__(LN_THREADS, VPL <= 3   ? 3
                                                     : VPL <= 7 ? 2
                                                                : 1)
    layernorm_backward_kernel(bf16 *dinp, float *partials, const bf16 *dout, const bf16 *inp,
                              const bf16 *weight, const float *mean, const float *rstd, int N,
                              int C, int rows_per_block) {
    /* per warp: dbias sums [0, C), dweight sums [C, 2C) and (COLSUM) the
     * new dinp's column sums [2C, 3C); each lane owns the same channels of
     * every row, so no two lanes touch one address */
    constexpr int NSUM = COLSUM ? 3 : 2;
    extern __shared__ float4 sh4[];
    float *sh = reinterpret_cast<float *>(sh4);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int C8 = C / 8;
    float *acc = sh + (size_t)warp * NSUM * C;
    for (int i = lane; i < NSUM * C; i += 32) acc[i] = 0.f;
    __syncwarp();

    const int row0 = blockIdx.x * rows_per_block;
    const int row1 = min(N, row0 + rows_per_block);
    for (int row = row0 + warp; row < row1; row += LN_WARPS) {
        const size_t base = (size_t)row * C;
        /* all three rows' loads issued together: one memory latency per row */
        uint4 xr[VPL], dr[VPL], ir[VPL];
#pragma unroll
        for (int k = 0; k < VPL; k++) {
            const int v = k * 32 + lane;
            if (v < C8) {
                xr[k] = *reinterpret_cast<const uint4 *>(inp + base + v * 8);
                dr[k] = *reinterpret_cast<const uint4 *>(dout + base + v * 8);
                ir[k] = *reinterpret_cast<const uint4 *>(dinp + base + v * 8);
            } else {
                xr[k] = dr[k] = ir[k] = make_uint4(0, 0, 0, 0);
            }
        }
        const float m = mean[row], s = rstd[row];
        float sg = 0.f, sgx = 0.f;
#pragma unroll
        for (int k = 0; k < VPL; k++) {
            const int v = k * 32 + lane;
            if (v < C8) {
                float x[8], d[8], w[8], db[8], dw[8];
                unpack8(x, xr[k]);
                unpack8(d, dr[k]);
                load8(w, weight + v * 8);
                float4 *pb = reinterpret_cast<float4 *>(acc + v * 8);
                float4 *pw = reinterpret_cast<float4 *>(acc + C + v * 8);
                *reinterpret_cast<float4 *>(db) = pb[0];
                *reinterpret_cast<float4 *>(db + 4) = pb[1];
                *reinterpret_cast<float4 *>(dw) = pw[0];
                *reinterpret_cast<float4 *>(dw + 4) = pw[1];
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    const float xhat = (x[i] - m) * s;
                    const float g = w[i] * d[i];
                    sg += g;
                    sgx += g * xhat;
                    db[i] += d[i];
                    dw[i] += xhat * d[i];
                }
                pb[0] = *reinterpret_cast<float4 *>(db);
                pb[1] = *reinterpret_cast<float4 *>(db + 4);
                pw[0] = *reinterpret_cast<float4 *>(dw);
                pw[1] = *reinterpret_cast<float4 *>(dw + 4);
            }
        }
        const float g_mean = warp_sum(sg) / (float)C;
        const float gx_mean = warp_sum(sgx) / (float)C;
#pragma unroll
        for (int k = 0; k < VPL; k++) {
            const int v = k * 32 + lane;
            if (v < C8) {
                float x[8], d[8], w[8], o[8];
                unpack8(x, xr[k]);
                unpack8(d, dr[k]);
                load8(w, weight + v * 8);
                unpack8(o, ir[k]);
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    const float xhat = (x[i] - m) * s;
                    o[i] += (w[i] * d[i] - g_mean - xhat * gx_mean) * s;
                }
                const uint4 packed = pack8(o);
                *reinterpret_cast<uint4 *>(dinp + base + v * 8) = packed;
                if (COLSUM) { /* the stored, rounded values */
                    unpack8(o, packed);
                    float4 *pc = reinterpret_cast<float4 *>(acc + 2 * C + v * 8);
                    float4 c0 = pc[0], c1 = pc[1];
                    c0.x += o[0], c0.y += o[1], c0.z += o[2], c0.w += o[3];
                    c1.x += o[4], c1.y += o[5], c1.z += o[6], c1.w += o[7];
                    pc[0] = c0;
                    pc[1] = c1;
                }
            }
        }
    }
    __syncthreads();
    /* the block's partial: the warps' sums added in warp order */
    float *p = partials + (size_t)blockIdx.x * NSUM * C;
    for (int i = threadIdx.x; i < NSUM * C; i += LN_THREADS) {
        float t = sh[i];
#pragma unroll
        for (int w = 1; w < LN_WARPS; w++) t += sh[(size_t)w * NSUM * C + i];
        p[i] = t;
    }
}

/* Column j of the (nblocks, nsum C) partials summed over blocks in
 * column_sum_fixed_order's order. Columns [0, C) go to dbias, [C, 2C) to
 * dweight, [2C, 3C) (nsum 3) to colsum. */
static __global__ void layernorm_backward_reduce_kernel(bf16 *dweight, bf16 *dbias, bf16 *colsum,
                                                        const float *partials, int nblocks, int C,
                                                        int nsum) {
    const int width = nsum * C, j = blockIdx.x * COLSUM_X + threadIdx.x;
    const float total = column_sum_fixed_order(partials, nblocks, (size_t)width, width);
    if (threadIdx.y == 0 && j < width) {
        bf16 *dst = j < C ? dbias + j : j < 2 * C ? dweight + (j - C) : colsum + (j - 2 * C);
        *dst = __float2bfloat16_rn(__bfloat162float(*dst) + total);
    }
}

static int vectors_per_lane(const char *op, int C) {
    const int vpl = (C / 8 + 31) / 32;
    if (C % 8 != 0 || C <= 0 || vpl > LN_MAX_VPL)
        FAIL("%s: C=%d must be a positive multiple of 8 up to %d", op, C, 32 * 8 * LN_MAX_VPL);
    return vpl;
}

static void check_aligned(const char *op, const void *p) {
    if (p && !is_aligned16(p)) FAIL("%s: tensor %p is not 16-byte aligned", op, p);
}

template <bool RESIDUAL>
static void launch_forward(int vpl, bf16 *residual, bf16 *out, float *mean, float *rstd,
                           const bf16 *a, const bf16 *b, const bf16 *w, const bf16 *bias, int N,
                           int C, cudaStream_t stream) {
    const unsigned grid = (unsigned)((N + LN_WARPS - 1) / LN_WARPS);
#define LN_FWD_CASE(V)                                                                             \
    case V:                                                                                        \
        layernorm_forward_kernel<V, RESIDUAL>                                                      \
            <<<grid, LN_THREADS, 0, stream>>>(residual, out, mean, rstd, a, b, w, bias, N, C);     \
        break;
    switch (vpl) {
        LN_FWD_CASE(1)
        LN_FWD_CASE(2)
        LN_FWD_CASE(3)
        LN_FWD_CASE(4)
        LN_FWD_CASE(5)
        LN_FWD_CASE(6)
        LN_FWD_CASE(7)
        LN_FWD_CASE(8)
    }
#undef LN_FWD_CASE
    CUDA_CHECK_LAUNCH("layernorm_forward_kernel");
}

extern "C" void layernorm_forward_cuda(void *out, float *mean, float *rstd, const void *inp,
                                       const void *weight, const void *bias, int N, int C,
                                       cudaStream_t stream) {
    const int vpl = vectors_per_lane("layernorm_forward_cuda", C);
    const void *ptrs[] = {out, inp, weight, bias};
    for (const void *p : ptrs) check_aligned("layernorm_forward_cuda", p);
    if (N <= 0) return;
    launch_forward<false>(vpl, nullptr, (bf16 *)out, mean, rstd, (const bf16 *)inp, nullptr,
                          (const bf16 *)weight, (const bf16 *)bias, N, C, stream);
}

extern "C" void residual_layernorm_forward_cuda(void *residual, void *out, float *mean, float *rstd,
                                                const void *a, const void *b, const void *weight,
                                                const void *bias, int N, int C,
                                                cudaStream_t stream) {
    const int vpl = vectors_per_lane("residual_layernorm_forward_cuda", C);
    const void *ptrs[] = {residual, out, a, b, weight, bias};
    for (const void *p : ptrs) check_aligned("residual_layernorm_forward_cuda", p);
    if (N <= 0) return;
    launch_forward<true>(vpl, (bf16 *)residual, (bf16 *)out, mean, rstd, (const bf16 *)a,
                         (const bf16 *)b, (const bf16 *)weight, (const bf16 *)bias, N, C, stream);
}

/* Shared memory of the FP8 forward's transposed tile for C channels. */
static int fp8_tile_bytes(int C) { return LN_FP8_ROWS * fp8_row_words(C) * 4; }

/* The FP8-output forward (residual NULL: the plain LayerNorm of a); each
 * variant's limit is raised to what its largest C (32 lanes x 8 x V) needs. */
template <bool RESIDUAL, bool TRANSPOSE>
static void launch_forward_fp8(int vpl, bf16 *residual, uint8_t *out, uint8_t *out_t,
                               fp8_cast_stats *stats, float *mean, float *rstd, const bf16 *a,
                               const bf16 *b, const bf16 *w, const bf16 *bias, int N, int C,
                               const float *scale, fp8_format f, cudaStream_t stream) {
    const unsigned grid = (unsigned)((N + LN_FP8_ROWS - 1) / LN_FP8_ROWS);
    const int smem = TRANSPOSE ? fp8_tile_bytes(C) : 0;
#define LN_FP8_CASE(V)                                                                             \
    case V: {                                                                                      \
        auto kernel = layernorm_forward_fp8_kernel<V, RESIDUAL, TRANSPOSE>;                        \
        static unsigned long long raised = 0; /* devices whose limit is set */                     \
        if (TRANSPOSE) raise_smem_limit(kernel, fp8_tile_bytes(32 * 8 * V), raised);               \
        kernel<<<grid, LN_THREADS, smem, stream>>>(residual, out, out_t, stats, mean, rstd, a, b,  \
                                                   w, bias, N, C, scale, f);                       \
        break;                                                                                     \
    }
    switch (vpl) {
        LN_FP8_CASE(1)
        LN_FP8_CASE(2)
        LN_FP8_CASE(3)
        LN_FP8_CASE(4)
        LN_FP8_CASE(5)
        LN_FP8_CASE(6)
        LN_FP8_CASE(7)
        LN_FP8_CASE(8)
    }
#undef LN_FP8_CASE
    CUDA_CHECK_LAUNCH("layernorm_forward_fp8_kernel");
}

extern "C" void layernorm_forward_fp8_cuda(void *residual, uint8_t *out, uint8_t *out_t,
                                           fp8_cast_stats *stats, float *mean, float *rstd,
                                           const void *a, const void *b, const void *weight,
                                           const void *bias, int N, int C, const float *scale,
                                           fp8_format f, cudaStream_t stream) {
    const char *name = "layernorm_forward_fp8_cuda";
    const int vpl = vectors_per_lane(name, C);
    const void *ptrs[] = {residual, out, out_t, a, b, weight, bias};
    for (const void *p : ptrs)
        if (p) check_aligned(name, p);
    if (!out || !a || !weight || !bias || !scale || (residual && !b))
        FAIL("%s: out, a, weight, bias and scale are required (b with residual)", name);
    if (out_t && N % 16 != 0)
        FAIL("%s: %d rows: a multiple of 16 is needed for the transposed copy", name, N);
    if (N <= 0) return;
    const bf16 *pa = (const bf16 *)a, *pb = (const bf16 *)b, *pw = (const bf16 *)weight,
               *pbias = (const bf16 *)bias;
    if (residual && out_t)
        launch_forward_fp8<true, true>(vpl, (bf16 *)residual, out, out_t, stats, mean, rstd, pa, pb,
                                       pw, pbias, N, C, scale, f, stream);
    else if (residual)
        launch_forward_fp8<true, false>(vpl, (bf16 *)residual, out, out_t, stats, mean, rstd, pa,
                                        pb, pw, pbias, N, C, scale, f, stream);
    else if (out_t)
        launch_forward_fp8<false, true>(vpl, nullptr, out, out_t, stats, mean, rstd, pa, pb, pw,
                                        pbias, N, C, scale, f, stream);
    else
        launch_forward_fp8<false, false>(vpl, nullptr, out, out_t, stats, mean, rstd, pa, pb, pw,
                                         pbias, N, C, scale, f, stream);
}

static int backward_blocks(int N) { return (N + LN_BWD_ROWS - 1) / LN_BWD_ROWS; }

extern "C" size_t layernorm_backward_cuda_workspace_bytes(int N, int C) {
    return (size_t)backward_blocks(N) * 3 * (size_t)C * sizeof(float);
}

/* Blocks of the backward: one wave of `resident` (blocks per SM x SMs),
 * fewer when N gives each less than LN_BWD_ROWS rows; returns how many and
 * their rows each. */
static int backward_grid(int N, int resident, int *rows_per_block) {
    int grid = backward_blocks(N) < resident ? backward_blocks(N) : resident;
    if (grid < 1) grid = 1;
    *rows_per_block = (N + grid - 1) / grid;
    return (N + *rows_per_block - 1) / *rows_per_block;
}

/* Launches the backward kernel; returns its number of blocks (partials). */
template <bool COLSUM>
static int launch_backward(int vpl, bf16 *dinp, float *partials, const bf16 *dout, const bf16 *inp,
                           const bf16 *weight, const float *mean, const float *rstd, int N, int C,
                           cudaStream_t stream) {
    const size_t smem = (size_t)LN_WARPS * (COLSUM ? 3 : 2) * C * sizeof(float);
    int nblocks = 0, rows = 0, per_sm = 0;
    /* set up once per variant and C (the occupancy depends on both) */
#define LN_BWD_CASE(V)                                                                             \
    case V: {                                                                                      \
        static int known_c = 0, known_per_sm = 0;                                                  \
        if (known_c != C) {                                                                        \
            if (smem > 48 * 1024)                                                                  \
                CUDA_CHECK(cudaFuncSetAttribute(layernorm_backward_kernel<V, COLSUM>,              \
                                                cudaFuncAttributeMaxDynamicSharedMemorySize,       \
                                                (int)smem));                                       \
            CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(                              \
                &known_per_sm, layernorm_backward_kernel<V, COLSUM>, LN_THREADS, smem));           \
            known_c = C;                                                                           \
        }                                                                                          \
        per_sm = known_per_sm > 0 ? known_per_sm : 1;                                              \
        nblocks = backward_grid(N, per_sm * sm_count(), &rows);                                    \
        layernorm_backward_kernel<V, COLSUM><<<nblocks, LN_THREADS, smem, stream>>>(               \
            dinp, partials, dout, inp, weight, mean, rstd, N, C, rows);                            \
        break;                                                                                     \
    }
    switch (vpl) {
        LN_BWD_CASE(1)
        LN_BWD_CASE(2)
        LN_BWD_CASE(3)
        LN_BWD_CASE(4)
        LN_BWD_CASE(5)
        LN_BWD_CASE(6)
        LN_BWD_CASE(7)
        LN_BWD_CASE(8)
    }
#undef LN_BWD_CASE
    CUDA_CHECK_LAUNCH("layernorm_backward_kernel");
    return nblocks;
}

extern "C" void layernorm_backward_cuda(void *dinp, void *dweight, void *dbias, const void *dout,
                                        const void *inp, const void *weight, const float *mean,
                                        const float *rstd, int N, int C, void *dinp_colsum,
                                        void *workspace, size_t workspace_bytes,
                                        cudaStream_t stream) {
    const int vpl = vectors_per_lane("layernorm_backward_cuda", C);
    const void *ptrs[] = {dinp, dout, inp, weight};
    for (const void *p : ptrs) check_aligned("layernorm_backward_cuda", p);
    if (N <= 0) return;
    const size_t need = layernorm_backward_cuda_workspace_bytes(N, C);
    if (workspace_bytes < need)
        FAIL("layernorm_backward_cuda: workspace of %zu bytes, needs %zu", workspace_bytes, need);
    if (dinp_colsum) check_aligned("layernorm_backward_cuda", dinp_colsum);
    float *partials = (float *)workspace;
    const int nblocks =
        dinp_colsum ? launch_backward<true>(vpl, (bf16 *)dinp, partials, (const bf16 *)dout,
                                            (const bf16 *)inp, (const bf16 *)weight, mean, rstd, N,
                                            C, stream)
                    : launch_backward<false>(vpl, (bf16 *)dinp, partials, (const bf16 *)dout,
                                             (const bf16 *)inp, (const bf16 *)weight, mean, rstd, N,
                                             C, stream);
    const dim3 block(COLSUM_X, COLSUM_Y);
    const int nsum = dinp_colsum ? 3 : 2;
    layernorm_backward_reduce_kernel<<<(nsum * C + COLSUM_X - 1) / COLSUM_X, block, 0, stream>>>(
        (bf16 *)dweight, (bf16 *)dbias, (bf16 *)dinp_colsum, partials, nblocks, C, nsum);
    CUDA_CHECK_LAUNCH("layernorm_backward_reduce_kernel");
}
