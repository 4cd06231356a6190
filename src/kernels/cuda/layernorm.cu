/* LayerNorm on the GPU: bf16 tensors, fp32 statistics and math (eps 1e-5,
 * biased variance, as GPT-2), the fused residual add + LayerNorm, and the
 * forward whose output is cast to FP8 for the FP8 linear layers (its
 * design at layernorm_forward_fp8_kernel), and the backward whose new dinp
 * is also cast to FP8 (layernorm_backward_fp8_kernel).
 *
 * Forward: one warp per row. The row is read once with 16-byte loads into
 * registers (VPL vectors of 8 per lane, a template parameter, so the arrays
 * stay in registers: C <= 32 * 8 * LN_MAX_VPL = 2048), then the mean, the
 * variance as the mean of squared deviations (two passes over registers, no
 * E[x^2] - E[x]^2 cancellation) and the output. The fused variant stores the
 * residual a + b rounded to bf16 and normalises the rounded values, so the
 * saved mean/rstd describe exactly what backward reads.
 *
 * Backward: a group of C / 256 warps per row (rounded up), each thread one
 * 16-byte vector of 8 channels, the same in every row, for dinp += (fp32
 * math, one rounding). Because a thread always holds the same channels,
 * its dweight/dbias sums (and with dinp_colsum the new dinp's column sums)
 * stay in registers over all its rows; the row's two sums (of w dout and
 * of w dout xhat) go across the group's warps through shared memory and a
 * named barrier, added in warp order. The next row's loads go out before
 * this row's math: two rows in flight a group. One block per SM holds as
 * many groups as fit its thread count; blocks own fixed runs of rows (at least LN_BWD_ROWS),
 * the groups take alternate rows of the run, and at the end the groups' sums are added in group
 * order into the block's fp32 partial. A second kernel adds the partials
 * of every block in block order and adds the result to the bf16
 * gradients once. No atomics: the result depends only on N, C and the
 * GPU's multiprocessor count, bitwise. The third vector, dinp_colsum, is
 * the bias gradient of the projection whose output the residual stream
 * received, which would otherwise cost the matmul backward another pass
 * over it. (Sums in shared memory, one row per warp, limited the warps
 * per SM at large C and moved more bytes through shared memory; the
 * designs measured are in docs/gpu-training.md.) The backward's parts
 * other than its kernel and the loads are layernorm_backward.cuh's.
 *
 * The bf16 kernels and the backward's second kernel are launched by
 * launch_dependent and wait at their top for the kernel before them, so
 * that only their launch overlaps that kernel's end. */
#include "kernels/layernorm.h"

#include <stdint.h>

#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/fp8_convert.cuh"
#include "kernels/cuda/layernorm_backward.cuh"
#include "kernels/cuda/smem_limit.cuh"

#define LN_EPS 1e-5f
enum { LN_WARPS = 8, LN_THREADS = LN_WARPS * 32, LN_MAX_VPL = 8 };
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
    grid_dependency_wait(); // launched by launch_dependent
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

/* Such a tile's first `rows` rows (N % 16 == 0) transposed into out_t from
 * row row0 on, C columns, by the threads first, first + stride, ... (the
 * forward's, and the FP8 backward's writer warps). */
static __device__ __forceinline__ void fp8_tile_store_transposed(uint8_t *out_t, int N, int row0,
                                                                 int rows, const uint32_t *tile,
                                                                 int row_words, int C, int first,
                                                                 int stride) {
    const int halves = min(LN_FP8_ROWS, rows) / 16;
    for (int t = first; t < C / 4 * 2; t += stride) {
        const int w = t >> 1, h = t & 1;
        if (h >= halves) continue;
        fp8_store_transposed16(out_t, N, row0 + 16 * h, 4 * w, [&](int i) {
            return tile[(size_t)(16 * h + i) * row_words + (w ^ (16 * h))];
        });
    }
}

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
    if (TRANSPOSE)
        fp8_tile_store_transposed(out_t, N, r0, N - r0, fp8_rows, row_words, C, threadIdx.x,
                                  LN_THREADS);
}

/* One row's inputs (ln_bwd_row) loaded into registers. */
static __device__ __forceinline__ void ln_bwd_load(ln_bwd_row &r, int row, int v, bool active,
                                                   const bf16 *dinp, const bf16 *dout,
                                                   const bf16 *inp, const float *mean,
                                                   const float *rstd, int C) {
    const unsigned at = ln_bwd_offset(row, v, C);
    r.x = active ? *reinterpret_cast<const uint4 *>(inp + at) : make_uint4(0, 0, 0, 0);
    r.d = active ? *reinterpret_cast<const uint4 *>(dout + at) : make_uint4(0, 0, 0, 0);
    r.i = active ? *reinterpret_cast<const uint4 *>(dinp + at) : make_uint4(0, 0, 0, 0);
    r.mean = mean[row];
    r.rstd = rstd[row];
}

/* A group of group_warps warps per row, each thread one vector of 8
 * channels (the same one in every row, so its sums stay in registers);
 * blockDim.x / 32 / group_warps groups a block, each taking every
 * groups-th row of the block's run. The next row's loads go out before
 * this row's math: two rows in flight per group. */
template <bool COLSUM>
static __global__ void __launch_bounds__(LN_BWD_THREADS<COLSUM>, 1)
    layernorm_backward_kernel(bf16 *dinp, float *partials, const bf16 *dout, const bf16 *inp,
                              const bf16 *weight, const float *mean, const float *rstd, int N,
                              int C, int rows_per_block, int group_warps, int groups) {
    grid_dependency_wait(); // launched by launch_dependent
    /* the block's sums: dbias [0, C), dweight [C, 2C) and (COLSUM) the new
     * dinp's column sums [2C, 3C); then each group's per-warp row sums, two
     * slots (by row parity) of group_warps float2 */
    constexpr int NSUM = COLSUM ? 3 : 2;
    extern __shared__ float4 sh4[];
    float *block_sums = reinterpret_cast<float *>(sh4);
    const int group_threads = group_warps * 32;
    const int group = threadIdx.x / group_threads, v = threadIdx.x % group_threads;
    float2 *row_parts = reinterpret_cast<float2 *>(block_sums + NSUM * C) + group * 2 * group_warps;
    const bool active = v < C / 8;
    float db[8], dw[8], cs[8];
#pragma unroll
    for (int i = 0; i < 8; i++) db[i] = dw[i] = cs[i] = 0.f;
    /* the weights stay packed (4 registers, not 8) */
    const uint4 w8 =
        active ? *reinterpret_cast<const uint4 *>(weight + v * 8) : make_uint4(0, 0, 0, 0);

    const int row1 = min(N, (blockIdx.x + 1) * rows_per_block);
    int row = blockIdx.x * rows_per_block + group;
    ln_bwd_row cur;
    if (row < row1) ln_bwd_load(cur, row, v, active, dinp, dout, inp, mean, rstd, C);
    for (int parity = 0; row < row1; row += groups, parity ^= 1) {
        ln_bwd_row next;
        if (row + groups < row1)
            ln_bwd_load(next, row + groups, v, active, dinp, dout, inp, mean, rstd, C);
        ln_bwd_row_step<COLSUM>(cur, w8, dinp, row, v, active, C, row_parts + parity * group_warps,
                                group, group_warps, db, dw, cs);
        cur = next;
    }
    ln_bwd_block_end<COLSUM>(block_sums, partials, row, row1, C, group, groups, group_warps, active,
                             v, db, dw, cs);
}

/* The backward with FP8 output (fp8_layers' E5M2 output gradient of the
 * projection before the LayerNorm, which the new dinp is): each row's new
 * dinp, as stored in bf16, cast with the tensor's scale (the bytes and
 * stats fp8_cast_cuda of the stored dinp would give), and its transposed
 * copy. The rows and sums as layernorm_backward_kernel's, but a block's
 * run is whole chunks of LN_FP8_ROWS rows: the groups (producers) put each
 * row's FP8 bytes also into the chunk's tile (two tiles in turn, laid out
 * as the forward's), and LN_BWD_FP8_WRITERS more warps write a chunk's
 * transposed copy as soon as every group has passed it (named barrier
 * TILE_FULL + tile), then free its tile (TILE_FREE + tile) for the chunk
 * after next: the groups never wait for the transposed stores, nor for
 * each other at a chunk's end. */
enum { LN_BWD_FP8_WRITERS = 2, TILE_FULL = 12, TILE_FREE = 14 }; /* barriers 12-15 */
/* at most the column-sum variant's threads, with or without the column
 * sums: 768 would spill the other's cast */
enum { LN_BWD_FP8_THREADS = LN_BWD_THREADS<true> };

/* Where the FP8 backward's two tiles start in its shared memory: after the
 * sums (ln_bwd_sums_bytes), 16-byte aligned. */
static __host__ __device__ size_t ln_bwd_fp8_tiles_offset(int C, int group_warps, int groups,
                                                          bool colsum) {
    return (ln_bwd_sums_bytes(C, group_warps, groups, colsum) + 15) / 16 * 16;
}

template <bool COLSUM>
static __global__ void __launch_bounds__(LN_BWD_FP8_THREADS, 1)
    layernorm_backward_fp8_kernel(bf16 *dinp, float *partials, const bf16 *dout, const bf16 *inp,
                                  const bf16 *weight, const float *mean, const float *rstd, int N,
                                  int C, int rows_per_block, int group_warps, int groups,
                                  uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats,
                                  const float *scale_ptr, fp8_format f) {
    constexpr int NSUM = COLSUM ? 3 : 2;
    extern __shared__ float4 sh4[];
    __shared__ fp8_block_scratch block_stats;
    float *block_sums = reinterpret_cast<float *>(sh4);
    const int group_threads = group_warps * 32, producers = groups * group_threads;
    const int group = threadIdx.x / group_threads, v = threadIdx.x % group_threads;
    float2 *row_parts = reinterpret_cast<float2 *>(block_sums + NSUM * C) + group * 2 * group_warps;
    const int row_words = fp8_row_words(C);
    uint32_t *tiles = reinterpret_cast<uint32_t *>(sh4) +
                      ln_bwd_fp8_tiles_offset(C, group_warps, groups, COLSUM) / 4;
    const bool active = group < groups && v < C / 8;
    float db[8], dw[8], cs[8];
#pragma unroll
    for (int i = 0; i < 8; i++) db[i] = dw[i] = cs[i] = 0.f;
    const int r0 = blockIdx.x * rows_per_block, row1 = min(N, r0 + rows_per_block);
    const int chunks = (row1 - r0 + LN_FP8_ROWS - 1) / LN_FP8_ROWS;
    int row = r0 + group;
    fp8_thread_stats seen = {0, 0, 0};
    if (threadIdx.x < producers) {
        const float scale = *scale_ptr;
        const uint4 w8 =
            active ? *reinterpret_cast<const uint4 *>(weight + v * 8) : make_uint4(0, 0, 0, 0);
        ln_bwd_row cur;
        if (row < row1) ln_bwd_load(cur, row, v, active, dinp, dout, inp, mean, rstd, C);
        int parity = 0;
        for (int k = 0; k < chunks; k++) {
            uint32_t *tile = tiles + (size_t)(k & 1) * LN_FP8_ROWS * row_words;
            if (k >= 2) named_bar_sync(TILE_FREE + (k & 1), blockDim.x);
            const int end = min(row1, r0 + (k + 1) * LN_FP8_ROWS);
            for (; row < end; row += groups, parity ^= 1) {
                ln_bwd_row next;
                if (row + groups < row1)
                    ln_bwd_load(next, row + groups, v, active, dinp, dout, inp, mean, rstd, C);
                const uint4 d = ln_bwd_row_step<COLSUM>(cur, w8, dinp, row, v, active, C,
                                                        row_parts + parity * group_warps, group,
                                                        group_warps, db, dw, cs);
                if (active) {
                    const uint32_t w[4] = {d.x, d.y, d.z, d.w};
                    const uint2 p = fp8_cast8(w, scale, f, seen);
                    *reinterpret_cast<uint2 *>(out + (size_t)row * C + v * 8) = p;
                    const int r = row - r0 - k * LN_FP8_ROWS, swap = r >= 16 ? 16 : 0;
                    *reinterpret_cast<uint2 *>(tile + (size_t)r * row_words + ((2 * v) ^ swap)) = p;
                }
                cur = next;
            }
            named_bar_arrive(TILE_FULL + (k & 1), blockDim.x);
        }
    } else { /* the transposed copy's writers, as the forward's */
        const int writers = blockDim.x - producers;
        for (int k = 0; k < chunks; k++) {
            const uint32_t *tile = tiles + (size_t)(k & 1) * LN_FP8_ROWS * row_words;
            named_bar_sync(TILE_FULL + (k & 1), blockDim.x);
            const int c0 = r0 + k * LN_FP8_ROWS;
            fp8_tile_store_transposed(out_t, N, c0, row1 - c0, tile, row_words, C,
                                      threadIdx.x - producers, writers);
            if (k + 2 < chunks) named_bar_arrive(TILE_FREE + (k & 1), blockDim.x);
        }
    }
    fp8_block_stats(seen, stats, block_stats);
    ln_bwd_block_end<COLSUM>(block_sums, partials, row, row1, C, group, groups, group_warps, active,
                             v, db, dw, cs);
}

/* Column j of the (nblocks, nsum C) partials summed over blocks in
 * column_sum_fixed_order's order. Columns [0, C) go to dbias, [C, 2C) to
 * dweight, [2C, 3C) (nsum 3) to colsum. */
static __global__ void layernorm_backward_reduce_kernel(bf16 *dweight, bf16 *dbias, bf16 *colsum,
                                                        const float *partials, int nblocks, int C,
                                                        int nsum) {
    grid_dependency_wait(); // launched by launch_dependent
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
        launch_dependent("layernorm_forward_kernel", layernorm_forward_kernel<V, RESIDUAL>, grid,  \
                         LN_THREADS, 0, stream, residual, out, mean, rstd, a, b, w, bias, N, C);   \
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

/* The FP8 backward's row groups (C valid): as the plain kernel's, less the
 * transposed copy's writer warps; returns how many. */
static int ln_bwd_fp8_groups(int C, int *group_warps) {
    *group_warps = (C / 8 + 31) / 32;
    return (LN_BWD_FP8_THREADS / 32 - LN_BWD_FP8_WRITERS) / *group_warps;
}

/* The FP8 backward's shared memory at C: the sums, then two tiles. */
static size_t ln_bwd_fp8_smem(int C, bool colsum) {
    int group_warps = 0;
    const int groups = ln_bwd_fp8_groups(C, &group_warps);
    return ln_bwd_fp8_tiles_offset(C, group_warps, groups, colsum) + 2 * (size_t)fp8_tile_bytes(C);
}

extern "C" size_t layernorm_backward_cuda_workspace_bytes(int N, int C) {
    return (size_t)ln_bwd_blocks(N) * 3 * (size_t)C * sizeof(float);
}

bool ln_bwd_check(const char *op, const void *dinp, const void *dout, const void *inp,
                  const void *weight, int N, int C, const void *dinp_colsum,
                  size_t workspace_bytes) {
    (void)vectors_per_lane(op, C); /* checks C */
    const void *ptrs[] = {dinp, dout, inp, weight};
    for (const void *p : ptrs) check_aligned(op, p);
    if (N <= 0) return false;
    if ((size_t)N * (size_t)C > UINT32_MAX)
        FAIL("%s: N x C = %d x %d is 2^32 elements or more; split the rows", op, N, C);
    const size_t need = layernorm_backward_cuda_workspace_bytes(N, C);
    if (workspace_bytes < need)
        FAIL("%s: workspace of %zu bytes, needs %zu", op, workspace_bytes, need);
    if (dinp_colsum) check_aligned(op, dinp_colsum);
    return true;
}

void ln_bwd_reduce(void *dweight, void *dbias, void *dinp_colsum, const float *partials,
                   int nblocks, int C, cudaStream_t stream) {
    const dim3 block(COLSUM_X, COLSUM_Y);
    const int nsum = dinp_colsum ? 3 : 2;
    launch_dependent("layernorm_backward_reduce_kernel", layernorm_backward_reduce_kernel,
                     dim3((nsum * C + COLSUM_X - 1) / COLSUM_X), block, 0, stream, (bf16 *)dweight,
                     (bf16 *)dbias, (bf16 *)dinp_colsum, partials, nblocks, C, nsum);
}

/* Launches the backward's register kernel; returns the number of blocks
 * (partials). */
template <bool COLSUM>
static int launch_backward(bf16 *dinp, float *partials, const bf16 *dout, const bf16 *inp,
                           const bf16 *weight, const float *mean, const float *rstd, int N, int C,
                           cudaStream_t stream) {
    int group_warps = 0;
    const int groups = ln_bwd_groups(C, COLSUM, &group_warps);
    int rows = 0;
    const int nblocks = ln_bwd_grid(N, &rows);
    const size_t smem = ln_bwd_sums_bytes(C, group_warps, groups, COLSUM);
    launch_dependent("layernorm_backward_kernel", layernorm_backward_kernel<COLSUM>, nblocks,
                     groups * group_warps * 32, smem, stream, dinp, partials, dout, inp, weight,
                     mean, rstd, N, C, rows, group_warps, groups);
    return nblocks;
}

/* Launches the FP8 backward's kernel on whole chunks of LN_FP8_ROWS rows a
 * block (at most ln_bwd_blocks(N) blocks: the workspace's partials);
 * returns the number of blocks. */
template <bool COLSUM>
static int launch_backward_fp8(bf16 *dinp, float *partials, const bf16 *dout, const bf16 *inp,
                               const bf16 *weight, const float *mean, const float *rstd, int N,
                               int C, uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats,
                               const float *scale, fp8_format f, cudaStream_t stream) {
    int group_warps = 0;
    const int groups = ln_bwd_fp8_groups(C, &group_warps);
    const int chunks = (N + LN_FP8_ROWS - 1) / LN_FP8_ROWS;
    const int most = chunks < sm_count() ? chunks : sm_count();
    const int rows = (chunks + most - 1) / most * LN_FP8_ROWS;
    const int nblocks = (N + rows - 1) / rows;
    auto kernel = layernorm_backward_fp8_kernel<COLSUM>;
    static size_t largest = 0; /* the limit every C up to the kernels' largest needs */
    if (largest == 0)
        for (int c = 8; c <= 32 * 8 * LN_MAX_VPL; c += 8)
            if (ln_bwd_fp8_smem(c, COLSUM) > largest) largest = ln_bwd_fp8_smem(c, COLSUM);
    static unsigned long long raised = 0; /* devices whose limit is set */
    raise_smem_limit(kernel, largest, raised);
    kernel<<<nblocks, (groups * group_warps + LN_BWD_FP8_WRITERS) * 32, ln_bwd_fp8_smem(C, COLSUM),
             stream>>>(dinp, partials, dout, inp, weight, mean, rstd, N, C, rows, group_warps,
                       groups, out, out_t, stats, scale, f);
    CUDA_CHECK_LAUNCH("layernorm_backward_fp8_kernel");
    return nblocks;
}

extern "C" void layernorm_backward_fp8_cuda(void *dinp, void *dweight, void *dbias,
                                            const void *dout, const void *inp, const void *weight,
                                            const float *mean, const float *rstd, int N, int C,
                                            void *dinp_colsum, void *workspace,
                                            size_t workspace_bytes, uint8_t *out, uint8_t *out_t,
                                            fp8_cast_stats *stats, const float *scale, fp8_format f,
                                            cudaStream_t stream) {
    const char *name = "layernorm_backward_fp8_cuda";
    if (!out || !out_t || !stats || !scale)
        FAIL("%s: out, out_t, stats and scale are required", name);
    if (N % 16 != 0)
        FAIL("%s: %d rows: a multiple of 16 is needed for the transposed copy", name, N);
    const void *ptrs[] = {out, out_t};
    for (const void *p : ptrs) check_aligned(name, p);
    if (!ln_bwd_check(name, dinp, dout, inp, weight, N, C, dinp_colsum, workspace_bytes)) return;
    float *partials = (float *)workspace;
    const bf16 *pd = (const bf16 *)dout, *pi = (const bf16 *)inp, *pw = (const bf16 *)weight;
    const int nblocks =
        dinp_colsum ? launch_backward_fp8<true>((bf16 *)dinp, partials, pd, pi, pw, mean, rstd, N,
                                                C, out, out_t, stats, scale, f, stream)
                    : launch_backward_fp8<false>((bf16 *)dinp, partials, pd, pi, pw, mean, rstd, N,
                                                 C, out, out_t, stats, scale, f, stream);
    ln_bwd_reduce(dweight, dbias, dinp_colsum, partials, nblocks, C, stream);
}

extern "C" void layernorm_backward_cuda(void *dinp, void *dweight, void *dbias, const void *dout,
                                        const void *inp, const void *weight, const float *mean,
                                        const float *rstd, int N, int C, void *dinp_colsum,
                                        void *workspace, size_t workspace_bytes,
                                        cudaStream_t stream) {
    if (!ln_bwd_check("layernorm_backward_cuda", dinp, dout, inp, weight, N, C, dinp_colsum,
                      workspace_bytes))
        return;
    float *partials = (float *)workspace;
    const int nblocks =
        dinp_colsum
            ? launch_backward<true>((bf16 *)dinp, partials, (const bf16 *)dout, (const bf16 *)inp,
                                    (const bf16 *)weight, mean, rstd, N, C, stream)
            : launch_backward<false>((bf16 *)dinp, partials, (const bf16 *)dout, (const bf16 *)inp,
                                     (const bf16 *)weight, mean, rstd, N, C, stream);
    ln_bwd_reduce(dweight, dbias, dinp_colsum, partials, nblocks, C, stream);
}
