/* What the flash attention kernels share (attention_mma.cu: mma.sync, sm_80
 * and newer; attention_wgmma.cu: wgmma, sm_90a; attention.cu: the
 * dispatcher and the backward's passes; the PTX helpers are ptx.cuh's, the
 * block orders attention_block_order.h's): bf16 packing, the backward's
 * block coordinates, the swizzled shared tiles and the loader that fills
 * them, the layout of the wgmma backward's dQ accumulator. A tile of 64
 * bf16 columns (128-byte rows, 16-byte chunks XORed with row % 8) is
 * exactly the 128-byte swizzle layout that wgmma reads through a matrix
 * descriptor, when its base is 1024-aligned. */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_TILES_CUH
#define GPT2_KERNELS_CUDA_ATTENTION_TILES_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/cuda/attention_block_order.h" // fwd_block_coords
#include "kernels/cuda/bf16_vec.cuh"            // unpack8, pack_bf16
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ptx.cuh"
#include "kernels/cuda/smem_limit.cuh" /* raise_smem_limit, for the launchers */

namespace attention_tiles {

typedef __nv_bfloat16 bf16;

constexpr float LN2 = 0.6931471805599453f;

// ---------------------------------------------------------------------------
// Swizzled shared tiles: ROWS x COLS bf16, row-major, 16-byte chunks of a row
// XORed with row bits so that 8 consecutive rows at one logical chunk land in
// 8 distinct bank groups (ldmatrix reads 8 rows x 16 bytes per matrix).

template <int CH> __device__ __forceinline__ int swz_chunk(int row, int chunk) {
    if constexpr (CH >= 8)
        return chunk ^ (row & 7);
    else if constexpr (CH == 4)
        return chunk ^ ((row >> 1) & 3);
    else if constexpr (CH == 2)
        return chunk ^ ((row >> 2) & 1);
    else
        return chunk;
}

// Element offset of (row, col) in a swizzled tile with COLS columns.
template <int COLS> __device__ __forceinline__ int tile_off(int row, int col) {
    return row * COLS + (swz_chunk<COLS / 8>(row, col >> 3) << 3) + (col & 7);
}

// Tiles of HS = 64 or 128 columns for wgmma: HS / 64 atoms one after the
// other, each ROWS x 64 columns in the swizzled layout above (128-byte rows,
// the layout of one 128-byte swizzle atom column). For HS = 64 this is the
// plain swizzled tile. Element offset of (row, col):
template <int ROWS> __device__ __forceinline__ int atom_off(int row, int col) {
    return (col >> 6) * ROWS * 64 + tile_off<64>(row, col & 63);
}

// cp.async a ROWS x COLS tile from g (row stride ld elements) into the
// swizzled layout (ATOMS: the atom layout); rows at or beyond valid_rows are
// zero-filled.
template <int ROWS, int COLS, int NTH, bool ATOMS = false>
__device__ __forceinline__ void load_tile(bf16 *s, const bf16 *g, size_t ld, int valid_rows,
                                          int tid) {
    constexpr int CH = COLS / 8, TOTAL = ROWS * CH;
#pragma unroll
    for (int k = 0; k < (TOTAL + NTH - 1) / NTH; k++) {
        const int i = tid + k * NTH;
        if (TOTAL % NTH == 0 || i < TOTAL) {
            const int r = i / CH, c = i % CH;
            const bool v = r < valid_rows;
            const int off =
                ATOMS ? atom_off<ROWS>(r, c * 8) : r * COLS + (swz_chunk<CH>(r, c) << 3);
            cp_async16(smem_u32(s + off), g + (size_t)(v ? r : 0) * ld + c * 8, v);
        }
    }
}

// ---------------------------------------------------------------------------
// The backward's main kernels (both families)

// A block of the 1-D grid: key block k0 (BN keys) of the (batch, head) pair
// bh. The pairs go in groups of G (fwd_block_coords' order), the key blocks
// with the most query tiles first: blocks that read the same Q, dO and add
// into the same dQ rows run together, so those stay in L2. G = 1: the key
// blocks of one pair adjacent. qg: the pair's q in qkv (k at + C, v at
// + 2 C; rows ld apart); dog: its dout (rows C apart); lse_bh, d_bh: its
// log-sum-exp and D = rowsum(dO * O), T each.
struct BwdBlock {
    int bh, b, h, k0, C;
    size_t ld;
    const bf16 *qg, *dog;
    const float *lse_bh, *d_bh;
};
// Key block k0 of pair bh.
template <int HS>
__device__ __forceinline__ BwdBlock bwd_block_for(int bh, int k0, const bf16 *qkv, const bf16 *dout,
                                                  const float *lse, const float *dsum, int T,
                                                  int NH) {
    BwdBlock k;
    k.bh = bh, k.b = bh / NH, k.h = bh % NH, k.k0 = k0;
    k.C = NH * HS;
    k.ld = (size_t)3 * k.C;
    k.qg = qkv + (size_t)k.b * T * k.ld + (size_t)k.h * HS;
    k.dog = dout + (size_t)k.b * T * k.C + (size_t)k.h * HS;
    k.lse_bh = lse + (size_t)bh * T, k.d_bh = dsum + (size_t)bh * T;
    return k;
}
// Block x of n_blocks in that order.
template <int HS, int BN>
__device__ __forceinline__ BwdBlock bwd_block_at(int x, int n_blocks, const bf16 *qkv,
                                                 const bf16 *dout, const float *lse,
                                                 const float *dsum, int T, int NH, int G) {
    const int n_kb = (T + BN - 1) / BN;
    int bh, rev_kb; // rev_kb: n_kb - 1 - key block
    fwd_block_coords(x, n_blocks / n_kb, n_kb, G, &bh, &rev_kb);
    return bwd_block_for<HS>(bh, (n_kb - 1 - rev_kb) * BN, qkv, dout, lse, dsum, T, NH);
}
template <int HS, int BN>
__device__ __forceinline__ BwdBlock bwd_block(const bf16 *qkv, const bf16 *dout, const float *lse,
                                              const float *dsum, int T, int NH, int G = 1) {
    return bwd_block_at<HS, BN>((int)blockIdx.x, (int)gridDim.x, qkv, dout, lse, dsum, T, NH, G);
}

// cp.async lse and D of the query rows q0..q0 + BM - 1 into sL, sD (zeros
// past T), by threads 0..BM - 1.
template <int BM>
__device__ __forceinline__ void load_row_stats(float *sL, float *sD, const BwdBlock &k, int q0,
                                               int T, int tid) {
    if (tid < BM) {
        const bool v = q0 + tid < T;
        cp_async4(smem_u32(sL + tid), k.lse_bh + (v ? q0 + tid : 0), v);
        cp_async4(smem_u32(sD + tid), k.d_bh + (v ? q0 + tid : 0), v);
    }
}

// The fp32 dQ accumulator of the wgmma backward (attention_wgmma.cu), for
// dQ of batch b, head h (of NH), position t (of T), head dim d (of HS):
// [B][NH][HS / 64][T][64], so that the 64 x 64 tile of 64 positions is one
// contiguous 16 KB block (one bulk reduction), with the 8-float chunks of a
// row XORed with t % 8 (stores of mma-layout fragments to shared memory in
// this layout are free of bank conflicts). The mma.sync kernels use
// [B * T][NH * HS] instead.
__host__ __device__ __forceinline__ size_t dq_wgmma_index(int b, int h, int t, int d, int NH, int T,
                                                          int HS) {
    const size_t tile = ((size_t)b * NH + h) * (HS / 64) + d / 64;
    return (tile * T + t) * 64 + ((((d >> 3) & 7) ^ (t & 7)) << 3) + (d & 7);
}

// ---------------------------------------------------------------------------
// dqkv's column sums (the qkv projection's bias gradient), in partial sums
// over chunks of SUM_ROWS positions of one sequence: a (B * ceil(T /
// SUM_ROWS)) x 3C fp32 matrix, chunk b * ceil(T / SUM_ROWS) + t / SUM_ROWS
// one row, added up over chunks in a fixed order afterwards (attention.cu
// says which pass writes which columns).
constexpr int SUM_ROWS = 64;

// sum[k] += the k-th of the 8 bf16 values in v.
__device__ __forceinline__ void add_bf16x8(float (&sum)[8], uint4 v) {
    float f[8];
    unpack8(f, v);
#pragma unroll
    for (int k = 0; k < 8; k++) sum[k] += f[k];
}

// The rows of one chunk of the column sums' partials that a block of 256
// threads walks (attention.cu's passes): chunk blockIdx.x = b * ceil(T /
// SUM_ROWS) + t0 / SUM_ROWS, positions t0..t1 - 1 of sequence b; thread
// (rl, lane) = (tid / 32, tid % 32) takes positions t0 + rl, + 8, ... and the
// 8 columns of group blockIdx.y * 32 + lane.
struct SumChunk {
    int chunk, b, t0, t1, rl, c; // c: this thread's first column
    __device__ __forceinline__ explicit SumChunk(int T) {
        const int per_seq = (T + SUM_ROWS - 1) / SUM_ROWS;
        chunk = blockIdx.x, b = chunk / per_seq;
        t0 = (chunk % per_seq) * SUM_ROWS, t1 = min(T, t0 + SUM_ROWS);
        rl = threadIdx.x >> 5;
        c = (blockIdx.y * 32 + (threadIdx.x & 31)) * 8;
    }
};

// For a block of 256 threads in 8 row lanes (tid / 32) of 32 threads, each
// holding sums of 8 columns, col0 + 8 (tid % 32)..+7: dst[col0 + j] = the
// lanes' sums of column col0 + j added in lane order, for col0 + j < ncols.
// Every thread of the block calls it.
__device__ __forceinline__ void sum_row_lanes(float *dst, const float (&sum)[8], int ncols,
                                              int col0) {
    __shared__ float red[8][256]; // [row lane][8 k + column group]: conflict-free stores
    const int lane = threadIdx.x & 31, rl = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k < 8; k++) red[rl][k * 32 + lane] = sum[k];
    __syncthreads();
    const int j = threadIdx.x, g = j >> 3, k = j & 7; // column col0 + j = group g's k-th
    float total = 0.f;
#pragma unroll
    for (int r = 0; r < 8; r++) total += red[r][k * 32 + g];
    if (col0 + j < ncols) dst[col0 + j] = total;
}

} // namespace attention_tiles
#endif
