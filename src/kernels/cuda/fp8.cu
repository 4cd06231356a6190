/* FP8 casts on the GPU (kernels/fp8.h has the contract): bf16 tensors to
 * E4M3 or E5M2 with a per-tensor scale, optionally with the transposed
 * copy that a GEMM over the other dimension needs, and the tensor's amax
 * for the delayed-scaling recipe, all in one pass over the input.
 *
 * Each value is multiplied by the scale in fp32 (as the CPU model does: one
 * rounding, no contraction) and pairs are converted with the hardware's
 * saturating conversion (cvt.rn.satfinite on sm_89 and newer; cuda_fp8.h
 * emulates it elsewhere). The amax is taken on the bits: |x| as an
 * unsigned integer orders like the value, with NaN above infinity, so an
 * integer max propagates NaN where fmaxf would drop it; with it the values
 * not zero and those flushed to zero are counted (the underflow counts);
 * one thread's atomics per block.
 *
 * The cast is a copy, so it is written for the copy bandwidth: a block
 * takes a 64 x 128 tile, each thread's four 16-byte loads in flight before
 * any arithmetic. The transposed copy goes through shared memory: each
 * thread reads one 4-byte word (4 columns) of 16 rows, transposes 4 x 4
 * byte squares with byte permutes and writes 16 bytes of each of the 4
 * columns, so that 4 lanes write a column's 64 bytes together. The tile's
 * 8-word column groups are XOR-swizzled by the row's 16-row group, so those
 * reads (and the row stores) hit 32 different banks.
 *
 * The GELU forward fused into the cast (fp8_gelu_cast_cuda) casts gelu(x)
 * rounded to bf16, the values matmul.cu's GELU stores, so that the bytes
 * are those of the unfused path.
 *
 * The fused GELU backward (fp8_gelu_backward_cast_cuda) reads a product's
 * raw input gradient and the GELU's input, and casts d * gelu'(pre)
 * rounded to bf16, the values matmul.cu's separate kernel would have
 * stored, so that the FP8 bytes are the same; it also sums each column of
 * its tile over the tile's 64 rows in row order, the first half of the
 * deterministic column sum that matmul.cu's bias kernels take (the bias
 * gradient of the layer that produced pre), which bias_partials_add_cuda
 * finishes.
 *
 * The attention backward's last pass with FP8 output (fp8_dqkv_cast_launch,
 * fp8_dqkv_cast.cuh) casts dqkv, output gradient of the qkv projection,
 * whose first C columns (dQ) it takes from the backward's fp32 accumulator
 * instead: dq * scale rounded to bf16, the values attention.cu's conversion
 * pass would store, so that the bytes are those of the conversion and then
 * the cast; the bf16 dQ itself is not written. It also sums those columns
 * per 64-position chunk in the conversion's order (attention_tiles.cuh's
 * partials), so that the bias gradient is the same bits too. */
#include "kernels/fp8.h"

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <float.h>
#include <stdint.h>

#include "kernels/cuda/attention_tiles.cuh" // dq_wgmma_index, SUM_ROWS
#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/fp8_convert.cuh"
#include "kernels/cuda/fp8_dqkv_cast.cuh"
#include "kernels/cuda/gelu.cuh"
#include "kernels/matmul.h"

namespace {

// ------------------------------------------------------------------- casts

constexpr int CAST_ROWS = 64, CAST_COLS = 128, CAST_THREADS = 256;
constexpr int CAST_UNITS = CAST_ROWS * CAST_COLS / 8 / CAST_THREADS; // 8-value vectors per thread
constexpr int CAST_WORDS = CAST_COLS / 4;                            // 4-byte words per tile row

// The tile's word of (row, word): 8-word groups swizzled by the 16-row group.
__device__ __forceinline__ int swizzled(int row, int word) {
    return row * CAST_WORDS + (word ^ (((row >> 4) & 3) << 3));
}

// What a cast casts: its input, gelu(input), input * gelu'(pre) (the GELU
// backward, with the column sums of the result), or dqkv with dQ from the
// attention backward's accumulator (with the column sums of dQ).
enum cast_mode { CAST_PLAIN, CAST_GELU, CAST_GELU_BWD, CAST_DQKV };

static_assert(attention_tiles::SUM_ROWS == CAST_ROWS, "a tile's rows are one chunk of dQ's sums");

// dqkv's 8 columns (c, < dq.C) of row `row` from the accumulator: bf16(acc *
// scale), as attention.cu's conversion pass stores them.
__device__ __forceinline__ uint4 dq_load8(const fp8_dq_source &dq, int row, int c) {
    const int b = row / dq.T, t = row - b * dq.T, HS = dq.C / dq.NH;
    // 8 consecutive dims stay one 8-float chunk in either layout
    const size_t at = dq.wgmma_layout
                          ? attention_tiles::dq_wgmma_index(b, c / HS, t, c % HS, dq.NH, dq.T, HS)
                          : (size_t)row * dq.C + c;
    const float4 a = reinterpret_cast<const float4 *>(dq.acc + at)[0];
    const float4 d = reinterpret_cast<const float4 *>(dq.acc + at)[1];
    return make_uint4(
        pack_bf16(a.x * dq.scale, a.y * dq.scale), pack_bf16(a.z * dq.scale, a.w * dq.scale),
        pack_bf16(d.x * dq.scale, d.y * dq.scale), pack_bf16(d.z * dq.scale, d.w * dq.scale));
}

// The tile (tile_x, tile_y) of a cast, by the whole block. CAST_GELU_BWD:
// also the sums of each of the tile's columns over its rows, in row order
// from 0, into partials[tile_y * cols + column]. CAST_DQKV: columns below
// dq.C from dq, and the sums of those columns into the same place, in
// attention.cu's order (rows r, r + 8, ... for each r < 8, then those 8
// sums in order).
template <bool TRANSPOSE, cast_mode MODE>
__device__ __forceinline__ void
cast_tile(uint8_t *__restrict__ out, uint8_t *__restrict__ out_t,
          fp8_cast_stats *__restrict__ stats, const __nv_bfloat16 *__restrict__ in, int rows,
          int cols, const float *__restrict__ scale_ptr, fp8_format f, int tile_x, int tile_y,
          const __nv_bfloat16 *__restrict__ pre = nullptr, float *__restrict__ partials = nullptr,
          const fp8_dq_source dq = {}) {
    constexpr bool BWD = MODE == CAST_GELU_BWD, DQ = MODE == CAST_DQKV, SUMS = BWD || DQ;
    __shared__ __align__(16) uint32_t tile[TRANSPOSE ? CAST_ROWS * CAST_WORDS : 1];
    __shared__ __align__(16) uint32_t values[SUMS ? CAST_ROWS * CAST_COLS / 2 : 1]; // bf16 pairs
    __shared__ fp8_block_scratch block_stats;
    const int r0 = tile_y * CAST_ROWS, c0 = tile_x * CAST_COLS;
    const int col_end = DQ && dq.dq_only ? dq.C : cols; // the columns cast (cols: the row length)
    // vector u: row u / 16, columns (u % 16) * 8: a warp reads two rows of 256 bytes
    uint4 v[CAST_UNITS], pv[BWD ? CAST_UNITS : 1];
    bool inside[CAST_UNITS];
#pragma unroll
    for (int k = 0; k < CAST_UNITS; k++) {
        const int u = threadIdx.x + k * CAST_THREADS, gr = r0 + u / 16, gc = c0 + (u % 16) * 8;
        const size_t at = (size_t)gr * cols + gc;
        inside[k] = gr < rows && gc < col_end; // % 8 == 0: a vector is all in or all out
        if (DQ && gc < dq.C)                   // dq.C % 8 == 0: a vector is all dQ or none
            v[k] = inside[k] ? dq_load8(dq, gr, gc) : make_uint4(0, 0, 0, 0);
        else
            v[k] = inside[k] ? *reinterpret_cast<const uint4 *>(in + at) : make_uint4(0, 0, 0, 0);
        if (BWD)
            pv[BWD ? k : 0] =
                inside[k] ? *reinterpret_cast<const uint4 *>(pre + at) : make_uint4(0, 0, 0, 0);
    }
    const float scale = *scale_ptr;
    fp8_thread_stats seen = {0, 0, 0};
#pragma unroll
    for (int k = 0; k < CAST_UNITS; k++) {
        const int u = threadIdx.x + k * CAST_THREADS, r = u / 16, c = (u % 16) * 8;
        uint32_t w[4] = {v[k].x, v[k].y, v[k].z, v[k].w};
        const uint4 pk = pv[BWD ? k : 0];
        const uint32_t pw[4] = {pk.x, pk.y, pk.z, pk.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float lo = __uint_as_float(w[i] << 16), hi = __uint_as_float(w[i] & 0xFFFF0000u);
            __nv_bfloat162 g;
            if (MODE == CAST_GELU) // gelu(x) rounded to bf16, as the unfused forward stores it
                g = __floats2bfloat162_rn(gelu(lo), gelu(hi));
            if (BWD) // d * gelu'(pre) rounded to bf16, as the unfused backward stores it
                g = __floats2bfloat162_rn(lo * gelu_grad(__uint_as_float(pw[i] << 16)),
                                          hi * gelu_grad(__uint_as_float(pw[i] & 0xFFFF0000u)));
            if (MODE == CAST_GELU || BWD) w[i] = *reinterpret_cast<const uint32_t *>(&g);
        }
        if (SUMS) // zeros outside
            *reinterpret_cast<uint4 *>(&values[r * (CAST_COLS / 2) + c / 2]) =
                make_uint4(w[0], w[1], w[2], w[3]);
        // zeros outside (gelu(0) = 0), which count neither as nonzero nor as flushed
        const uint2 packed = fp8_cast8(w, scale, f, seen);
        if (inside[k]) *reinterpret_cast<uint2 *>(out + (size_t)(r0 + r) * cols + c0 + c) = packed;
        if (TRANSPOSE) *reinterpret_cast<uint2 *>(&tile[swizzled(r, c / 4)]) = packed;
    }
    if (stats)
        fp8_block_stats(seen, stats, block_stats);
    else if (TRANSPOSE || SUMS)
        __syncthreads();
    if (BWD && threadIdx.x < CAST_COLS && c0 + (int)threadIdx.x < cols) {
        const __nv_bfloat16 *column = reinterpret_cast<const __nv_bfloat16 *>(values) + threadIdx.x;
        float acc = 0.f;
        const int n = min(CAST_ROWS, rows - r0);
        for (int r = 0; r < n; r++) acc += __bfloat162float(column[r * CAST_COLS]);
        partials[(size_t)tile_y * cols + c0 + threadIdx.x] = acc;
    }
    if (DQ && partials && threadIdx.x < CAST_COLS && c0 + (int)threadIdx.x < dq.C) {
        const __nv_bfloat16 *column = reinterpret_cast<const __nv_bfloat16 *>(values) + threadIdx.x;
        float total = 0.f; // rows % 64 == 0 (fp8_dqkv_cast_launch): whole chunks
#pragma unroll
        for (int lane_row = 0; lane_row < 8; lane_row++) {
            float acc = 0.f;
#pragma unroll
            for (int r = lane_row; r < CAST_ROWS; r += 8)
                acc += __bfloat162float(column[r * CAST_COLS]);
            total += acc;
        }
        partials[(size_t)tile_y * cols + c0 + threadIdx.x] = total;
    }
    if (!TRANSPOSE) return;
    // transposed: lane (group = lane % 4, sub = lane / 4) of warp w reads word w * 8 + sub
    // (4 columns) of rows group * 16 ... + 15; the warps past the tile's words are done
    static_assert(CAST_ROWS == 64 && CAST_WORDS % 8 == 0, "4 row groups, 8 words per warp");
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int group = lane & 3, word = warp * 8 + (lane >> 2);
    if (warp >= CAST_WORDS / 8) return;
    const int gr = r0 + group * 16, gc = c0 + word * 4;
    if (gr >= rows || gc >= col_end) return; // rows % 16 == 0, col_end % 8 == 0: all or none
    fp8_store_transposed16(out_t, rows, gr, gc,
                           [&](int i) { return tile[swizzled(group * 16 + i, word)]; });
}

// The transposed copy of a 64 x 128 tile of bytes, by the whole block:
// loaded 16 bytes a thread into the casts' swizzled tile, then written as
// cast_tile writes its out_t. rows and cols multiples of 16.
__global__ void __launch_bounds__(CAST_THREADS)
    fp8_transpose_kernel(uint8_t *__restrict__ out_t, const uint8_t *__restrict__ in, int rows,
                         int cols) {
    __shared__ __align__(16) uint32_t tile[CAST_ROWS * CAST_WORDS];
    const int r0 = blockIdx.y * CAST_ROWS, c0 = blockIdx.x * CAST_COLS;
    constexpr int CHUNKS = CAST_COLS / 16; // 16-byte chunks per tile row
#pragma unroll
    for (int k = 0; k < CAST_ROWS * CHUNKS / CAST_THREADS; k++) {
        const int u = threadIdx.x + k * CAST_THREADS, r = u / CHUNKS, c = (u % CHUNKS) * 16;
        const bool inside = r0 + r < rows && c0 + c < cols;
        const uint4 v =
            inside ? *reinterpret_cast<const uint4 *>(in + (size_t)(r0 + r) * cols + c0 + c)
                   : make_uint4(0, 0, 0, 0);
        // 4 words of one 8-word group: contiguous after the swizzle
        *reinterpret_cast<uint4 *>(&tile[swizzled(r, c / 4)]) = v;
    }
    __syncthreads();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int group = lane & 3, word = warp * 8 + (lane >> 2);
    if (warp >= CAST_WORDS / 8) return; // the tile's words are the first warps'
    const int gr = r0 + group * 16, gc = c0 + word * 4;
    if (gr >= rows || gc >= cols) return; // rows and cols % 16 == 0: all in or all out
    fp8_store_transposed16(out_t, rows, gr, gc,
                           [&](int i) { return tile[swizzled(group * 16 + i, word)]; });
}

template <bool TRANSPOSE, cast_mode MODE>
__global__ void __launch_bounds__(CAST_THREADS)
    fp8_cast_kernel(uint8_t *__restrict__ out, uint8_t *__restrict__ out_t,
                    fp8_cast_stats *__restrict__ stats, const __nv_bfloat16 *__restrict__ in,
                    int rows, int cols, const float *__restrict__ scale_ptr, fp8_format f,
                    const __nv_bfloat16 *__restrict__ pre, float *__restrict__ partials) {
    cast_tile<TRANSPOSE, MODE>(out, out_t, stats, in, rows, cols, scale_ptr, f, blockIdx.x,
                               blockIdx.y, pre, partials);
}

// The attention backward's last pass with FP8 output: waits for its main
// kernel (launched by launch_dependent).
__global__ void __launch_bounds__(CAST_THREADS)
    fp8_dqkv_cast_kernel(uint8_t *__restrict__ out, uint8_t *__restrict__ out_t,
                         fp8_cast_stats *__restrict__ stats, const __nv_bfloat16 *__restrict__ dqkv,
                         int rows, int cols, const float *__restrict__ scale_ptr, fp8_format f,
                         float *__restrict__ partials, const fp8_dq_source dq) {
    grid_dependency_wait();
    cast_tile<true, CAST_DQKV>(out, out_t, stats, dqkv, rows, cols, scale_ptr, f, blockIdx.x,
                               blockIdx.y, nullptr, partials, dq);
}

// Several casts in one grid: block b works on the job whose range of tiles
// (first[j] <= b < first[j + 1]) holds it.
struct cast_batch {
    fp8_cast_job jobs[FP8_CAST_BATCH_MAX];
    int first[FP8_CAST_BATCH_MAX + 1];
    int n;
};

__device__ __forceinline__ int tiles_across(int cols) { return (cols + CAST_COLS - 1) / CAST_COLS; }

template <bool TRANSPOSE>
__global__ void __launch_bounds__(CAST_THREADS)
    fp8_cast_batch_kernel(const __grid_constant__ cast_batch batch, fp8_format f) {
    int j = 0;
    while (j + 1 < batch.n && (int)blockIdx.x >= batch.first[j + 1]) j++;
    const fp8_cast_job &job = batch.jobs[j];
    const int b = blockIdx.x - batch.first[j], across = tiles_across(job.cols);
    cast_tile<TRANSPOSE, CAST_PLAIN>(job.out, job.out_t, job.stats,
                                     static_cast<const __nv_bfloat16 *>(job.in), job.rows, job.cols,
                                     job.scale, f, b % across, b / across);
    if (job.dequant && b == 0 && threadIdx.x == 0) *job.dequant = __fdiv_rn(1.0f, *job.scale);
}

// One thread per tensor: fp8_scale_update (kernels/cpu/fp8.c) written
// again, the same float operations in the same order.
__global__ void fp8_scaling_update_kernel(fp8_scaling s, int slot) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= s.n) return;
    float *h = s.history + (size_t)i * s.len;
    const size_t at = (size_t)i * s.stride;
    const float amax = s.stats[i].amax, max_finite = s.format[i] == FP8_E4M3 ? 448.0f : 57344.0f;
    h[slot] = amax;
    if (s.underflow) {
        s.underflow[2 * i] += s.stats[i].nonzero;
        s.underflow[2 * i + 1] += s.stats[i].flushed;
    }
    s.stats[i] = fp8_cast_stats{};
    const float scaled = __fmul_rn(amax, s.scale[at]);
    const bool clipped = s.format[i] == FP8_E4M3 ? scaled > 464.0f : scaled >= 61440.0f;
    if (s.clipped && isfinite(amax) && clipped) { // as fp8_clipped
        s.clipped[at] += 1.0f;
        s.clipped[at + 1] = fmaxf(s.clipped[at + 1], __fdiv_rn(scaled, max_finite));
    }
    float mx = 0.0f;
    bool finite = true;
    for (int k = 0; k < s.len; k++) {
        finite = finite && isfinite(h[k]);
        mx = h[k] > mx ? h[k] : mx;
    }
    if (!finite || mx == 0.0f) return; // the scale stays
    float scale = __fdiv_rn(__fdiv_rn(max_finite, mx), ldexpf(1.0f, s.margin));
    if (isinf(scale)) scale = FLT_MAX;
    s.scale[at] = scale;
    s.dequant[at] = __fdiv_rn(1.0f, scale);
}

} // namespace

// fp8_cast_cuda and fp8_gelu_cast_cuda.
static void cast(const char *name, bool gelu, uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats,
                 const void *in, int rows, int cols, const float *scale, fp8_format f,
                 cudaStream_t stream) {
    if (rows < 0 || cols < 0 || cols % 8 != 0 || (out_t && rows % 16 != 0))
        FAIL("%s: a %d x %d tensor: cols must be a multiple of 8%s", name, rows, cols,
             out_t ? ", rows of 16 (for the transposed copy)" : "");
    if (((uintptr_t)in | (uintptr_t)out | (uintptr_t)out_t) & 15u)
        FAIL("%s: tensors must be 16-byte aligned", name);
    if (!scale) FAIL("%s: no scale", name);
    if (rows == 0 || cols == 0) return;
    const dim3 grid((unsigned)((cols + CAST_COLS - 1) / CAST_COLS),
                    (unsigned)((rows + CAST_ROWS - 1) / CAST_ROWS));
    const __nv_bfloat16 *x = static_cast<const __nv_bfloat16 *>(in);
    auto kernel =
        out_t ? (gelu ? fp8_cast_kernel<true, CAST_GELU> : fp8_cast_kernel<true, CAST_PLAIN>)
              : (gelu ? fp8_cast_kernel<false, CAST_GELU> : fp8_cast_kernel<false, CAST_PLAIN>);
    kernel<<<grid, CAST_THREADS, 0, stream>>>(out, out_t, stats, x, rows, cols, scale, f, nullptr,
                                              nullptr);
    CUDA_CHECK_LAUNCH(name);
}

extern "C" void fp8_cast_cuda(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats, const void *in,
                              int rows, int cols, const float *scale, fp8_format f,
                              cudaStream_t stream) {
    cast("fp8_cast_cuda", false, out, out_t, stats, in, rows, cols, scale, f, stream);
}

extern "C" void fp8_transpose_cuda(uint8_t *out_t, const uint8_t *in, int rows, int cols,
                                   cudaStream_t stream) {
    if (rows < 0 || cols < 0 || rows % 16 || cols % 16 || ((uintptr_t)out_t | (uintptr_t)in) & 15u)
        FAIL("fp8_transpose_cuda: %d x %d bytes: rows and cols must be multiples of 16, both "
             "tensors 16-byte aligned",
             rows, cols);
    if (rows == 0 || cols == 0) return;
    const dim3 grid((unsigned)((cols + CAST_COLS - 1) / CAST_COLS),
                    (unsigned)((rows + CAST_ROWS - 1) / CAST_ROWS));
    fp8_transpose_kernel<<<grid, CAST_THREADS, 0, stream>>>(out_t, in, rows, cols);
    CUDA_CHECK_LAUNCH("fp8_transpose_kernel");
}

extern "C" void fp8_cast_batch_cuda(const fp8_cast_job *jobs, int n, fp8_format f,
                                    cudaStream_t stream) {
    if (n < 0 || n > FP8_CAST_BATCH_MAX)
        FAIL("fp8_cast_batch_cuda: %d tensors (at most %d)", n, FP8_CAST_BATCH_MAX);
    cast_batch batch{};
    int blocks = 0, transposed = 0;
    for (int j = 0; j < n; j++) {
        const fp8_cast_job &job = jobs[j];
        if (job.rows < 0 || job.cols < 0 || job.cols % 8 != 0 || (job.out_t && job.rows % 16 != 0))
            FAIL("fp8_cast_batch_cuda: tensor %d, %d x %d: cols must be a multiple of 8%s", j,
                 job.rows, job.cols, job.out_t ? ", rows of 16 (for the transposed copy)" : "");
        if (((uintptr_t)job.in | (uintptr_t)job.out | (uintptr_t)job.out_t) & 15u)
            FAIL("fp8_cast_batch_cuda: tensor %d: tensors must be 16-byte aligned", j);
        if (!job.scale) FAIL("fp8_cast_batch_cuda: tensor %d has no scale", j);
        transposed += job.out_t != nullptr;
        if (job.rows == 0 || job.cols == 0) continue;
        batch.jobs[batch.n] = job;
        batch.first[batch.n] = blocks;
        blocks +=
            ((job.cols + CAST_COLS - 1) / CAST_COLS) * ((job.rows + CAST_ROWS - 1) / CAST_ROWS);
        batch.n++;
    }
    if (transposed != 0 && transposed != n)
        FAIL("fp8_cast_batch_cuda: every tensor or none must have a transposed copy");
    batch.first[batch.n] = blocks;
    if (blocks == 0) return;
    auto kernel = transposed ? fp8_cast_batch_kernel<true> : fp8_cast_batch_kernel<false>;
    kernel<<<blocks, CAST_THREADS, 0, stream>>>(batch, f);
    CUDA_CHECK_LAUNCH("fp8_cast_batch_kernel");
}

extern "C" void fp8_gelu_cast_cuda(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats,
                                   const void *pre, int rows, int cols, const float *scale,
                                   fp8_format f, cudaStream_t stream) {
    cast("fp8_gelu_cast_cuda", true, out, out_t, stats, pre, rows, cols, scale, f, stream);
}

extern "C" void fp8_gelu_backward_cast_cuda(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats,
                                            void *colsum, float *partials, const void *d,
                                            const void *pre, int rows, int cols, const float *scale,
                                            fp8_format f, cudaStream_t stream) {
    if (rows < 0 || cols < 0 || cols % 8 != 0 || rows % 16 != 0)
        FAIL("fp8_gelu_backward_cast_cuda: a %d x %d tensor: cols must be a multiple of 8, "
             "rows of 16",
             rows, cols);
    if (((uintptr_t)d | (uintptr_t)pre | (uintptr_t)out | (uintptr_t)out_t) & 15u)
        FAIL("fp8_gelu_backward_cast_cuda: tensors must be 16-byte aligned");
    if (!scale || !out_t || !partials)
        FAIL("fp8_gelu_backward_cast_cuda: needs a scale, the transposed output and partials");
    if (rows == 0 || cols == 0) return;
    const dim3 grid((unsigned)((cols + CAST_COLS - 1) / CAST_COLS),
                    (unsigned)((rows + CAST_ROWS - 1) / CAST_ROWS));
    fp8_cast_kernel<true, CAST_GELU_BWD><<<grid, CAST_THREADS, 0, stream>>>(
        out, out_t, stats, static_cast<const __nv_bfloat16 *>(d), rows, cols, scale, f,
        static_cast<const __nv_bfloat16 *>(pre), partials);
    CUDA_CHECK_LAUNCH("fp8_cast_kernel (GELU backward)");
    if (colsum)
        bias_partials_add_cuda(colsum, partials, (rows + CAST_ROWS - 1) / CAST_ROWS, cols, stream);
}

void fp8_dqkv_cast_launch(uint8_t *out, uint8_t *out_t, fp8_cast_stats *stats, float *partials,
                          const void *dqkv, const fp8_dq_source &dq, int rows, const float *scale,
                          fp8_format f, cudaStream_t stream) {
    const int cols = 3 * dq.C;
    if (rows % CAST_ROWS != 0 || dq.T % CAST_ROWS != 0 || dq.C % 8 != 0 || !out_t || !scale)
        FAIL("fp8_dqkv_cast_launch: %d rows of T = %d, C = %d: rows and T must be multiples of "
             "%d, C of 8, with the transposed copy and a scale",
             rows, dq.T, dq.C, CAST_ROWS);
    if (((uintptr_t)dqkv | (uintptr_t)out | (uintptr_t)out_t | (uintptr_t)dq.acc) & 15u)
        FAIL("fp8_dqkv_cast_launch: tensors must be 16-byte aligned");
    if (rows == 0) return;
    const int col_end = dq.dq_only ? dq.C : cols;
    const dim3 grid((unsigned)((col_end + CAST_COLS - 1) / CAST_COLS),
                    (unsigned)(rows / CAST_ROWS));
    launch_dependent("fp8_dqkv_cast_kernel", fp8_dqkv_cast_kernel, grid, CAST_THREADS, 0, stream,
                     out, out_t, stats, static_cast<const __nv_bfloat16 *>(dqkv), rows, cols, scale,
                     f, partials, dq);
}

extern "C" void fp8_scaling_update_cuda(const fp8_scaling *s, int64_t step, cudaStream_t stream) {
    if (s->n <= 0) return;
    if (s->len < 1 || s->stride < (s->clipped ? 2 : 1) || step < 0)
        FAIL("fp8_scaling_update_cuda: history of %d, stride %d, step %lld", s->len, s->stride,
             (long long)step);
    fp8_scaling_update_kernel<<<(unsigned)((s->n + 127) / 128), 128, 0, stream>>>(
        *s, (int)(step % s->len));
    CUDA_CHECK_LAUNCH("fp8_scaling_update_kernel");
}
