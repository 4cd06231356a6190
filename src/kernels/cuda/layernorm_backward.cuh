/* The LayerNorm backward's parts (design: layernorm.cu's opening comment):
 * its row groups and blocks, one row's step by a group, the end of a block,
 * and the checks and second kernel around the main kernel. layernorm.cu's
 * register kernel is made of them, and so is the tuning variant
 * (tuning/layernorm_tuning.cu), so that the two give the same bits. For
 * .cu files only (C++). */
#ifndef GPT2_KERNELS_CUDA_LAYERNORM_BACKWARD_CUH
#define GPT2_KERNELS_CUDA_LAYERNORM_BACKWARD_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/cuda/bf16_vec.cuh"
#include "kernels/cuda/ptx.cuh"
#include "kernels/cuda/sm_count.cuh"

enum { LN_BWD_ROWS = 32 }; /* rows a block takes at least */
/* the backward's block: as many groups of C / 256 warps as fit, one block
 * per SM; its size sets the registers a thread may use: 768 threads get
 * 80, enough for the plain variant; the column-sum variant needs 95 and
 * spills at 80, so it runs 640 threads */
template <bool COLSUM> constexpr int LN_BWD_THREADS = COLSUM ? 640 : 768;

/* One row's inputs for the backward: the thread's 8 channels of x, dout and
 * the old dinp, and the row's statistics. */
struct ln_bwd_row {
    uint4 x, d, i;
    float mean, rstd;
};

/* Where thread v's 8 channels of a row start: 32-bit (fewer registers);
 * ln_bwd_check checks N C < 2^32. */
static __device__ __forceinline__ unsigned ln_bwd_offset(int row, int v, int C) {
    return (unsigned)row * (unsigned)C + (unsigned)v * 8u;
}

/* One row of the backward by its group: the row's two sums across the
 * group's warps (added in warp order, through the slot of the row's
 * parity), the thread's dbias, dweight (and COLSUM: new dinp's column)
 * sums, and its 8 channels of dinp stored; returns them (packed bf16; 0
 * where the thread has no channels). */
template <bool COLSUM>
static __device__ __forceinline__ uint4 ln_bwd_row_step(const ln_bwd_row &cur, const uint4 &w8,
                                                        bf16 *dinp, int row, int v, bool active,
                                                        int C, float2 *slot, int group,
                                                        int group_warps, float (&db)[8],
                                                        float (&dw)[8], float (&cs)[8]) {
    float sg = 0.f, sgx = 0.f;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const float xhat = (element8(cur.x, i) - cur.mean) * cur.rstd, d = element8(cur.d, i);
        const float g = element8(w8, i) * d;
        sg += g;
        sgx += g * xhat;
        db[i] += d;
        dw[i] += xhat * d;
    }
    sg = warp_sum(sg);
    sgx = warp_sum(sgx);
    if (group_warps > 1) { /* the group's warps' sums, added in warp order */
        if (threadIdx.x % 32 == 0) slot[v / 32] = make_float2(sg, sgx);
        named_bar_sync(1 + group, group_warps * 32);
        sg = sgx = 0.f;
        for (int k = 0; k < group_warps; k++) {
            const float2 p = slot[k];
            sg += p.x;
            sgx += p.y;
        }
    }
    const float g_mean = sg / (float)C, gx_mean = sgx / (float)C;
    if (!active) return make_uint4(0, 0, 0, 0);
    /* a pair of values at a time, rounded as stored (and summed so with
     * COLSUM) before the next pair: fewer live registers */
    uint32_t packed[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        float o[2];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int i = 2 * j + h;
            const float xhat = (element8(cur.x, i) - cur.mean) * cur.rstd;
            const float g = element8(w8, i) * element8(cur.d, i);
            o[h] = element8(cur.i, i) + (g - g_mean - xhat * gx_mean) * cur.rstd;
        }
        packed[j] = pack_bf16(o[0], o[1]);
        if (COLSUM) {
            cs[2 * j] += __uint_as_float(packed[j] << 16);
            cs[2 * j + 1] += __uint_as_float(packed[j] & 0xffff0000u);
        }
    }
    const uint4 out = make_uint4(packed[0], packed[1], packed[2], packed[3]);
    *reinterpret_cast<uint4 *>(dinp + ln_bwd_offset(row, v, C)) = out;
    return out;
}

/* The end of a block of the backward, by every thread of it: a group with
 * a row fewer than group 0 passes its barrier once more, so every warp has
 * passed as many barriers when the groups' sums meet (compute-sanitizer's
 * racecheck reports those sums as races otherwise); then the groups' sums
 * added in group order into the block's partial. Threads of no group
 * (group >= groups) take part in the block barriers only. */
template <bool COLSUM>
static __device__ __forceinline__ void
ln_bwd_block_end(float *block_sums, float *partials, int row, int row1, int C, int group,
                 int groups, int group_warps, bool active, int v, const float (&db)[8],
                 const float (&dw)[8], const float (&cs)[8]) {
    constexpr int NSUM = COLSUM ? 3 : 2;
    if (group_warps > 1 && group < groups)
        for (int r = row - group; r < row1; r += groups)
            named_bar_sync(1 + group, group_warps * 32);
    for (int g = 0; g < groups; g++) {
        __syncthreads();
        if (group == g && active) {
            float *p = block_sums + v * 8;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                p[i] = g == 0 ? db[i] : p[i] + db[i];
                p[C + i] = g == 0 ? dw[i] : p[C + i] + dw[i];
                if (COLSUM) p[2 * C + i] = g == 0 ? cs[i] : p[2 * C + i] + cs[i];
            }
        }
    }
    __syncthreads();
    float *p = partials + (size_t)blockIdx.x * NSUM * C;
    for (int i = threadIdx.x; i < NSUM * C; i += blockDim.x) p[i] = block_sums[i];
}

/* ---- host side */

/* Blocks of the backward without the one-wave limit: a partial each. */
static inline int ln_bwd_blocks(int N) { return (N + LN_BWD_ROWS - 1) / LN_BWD_ROWS; }

/* Blocks of the backward: one per SM, fewer when N gives each less than
 * LN_BWD_ROWS rows; returns how many and their rows each. */
static inline int ln_bwd_grid(int N, int *rows_per_block) {
    int grid = ln_bwd_blocks(N) < sm_count() ? ln_bwd_blocks(N) : sm_count();
    if (grid < 1) grid = 1;
    *rows_per_block = (N + grid - 1) / grid;
    return (N + *rows_per_block - 1) / *rows_per_block;
}

/* The backward's row groups (C valid): *group_warps warps a row, a thread
 * per 8 channels; returns how many groups fit its block. */
static inline int ln_bwd_groups(int C, bool colsum, int *group_warps) {
    *group_warps = (C / 8 + 31) / 32;
    return (colsum ? LN_BWD_THREADS<true> : LN_BWD_THREADS<false>) / 32 / *group_warps;
}

/* Shared memory of a block's sums: dbias, dweight and (colsum) the new
 * dinp's column sums, C floats each, then each group's per-warp row sums,
 * two slots (by row parity) of group_warps float2. */
static inline __host__ __device__ size_t ln_bwd_sums_bytes(int C, int group_warps, int groups,
                                                           bool colsum) {
    return (size_t)(colsum ? 3 : 2) * C * sizeof(float) + (size_t)groups * 2 * group_warps * 8;
}

/* The backward's arguments checked, failing in op's name: C, 16-byte
 * alignment, N C < 2^32, the workspace's size
 * (layernorm_backward_cuda_workspace_bytes). Returns false where there is
 * nothing to do (N <= 0). In layernorm.cu. */
bool ln_bwd_check(const char *op, const void *dinp, const void *dout, const void *inp,
                  const void *weight, int N, int C, const void *dinp_colsum,
                  size_t workspace_bytes);

/* The backward's second kernel: the nblocks partials of the main kernel
 * (its workspace) added in block order, and the sums added once to the
 * bf16 dweight, dbias and (where non-NULL) dinp_colsum. In layernorm.cu. */
void ln_bwd_reduce(void *dweight, void *dbias, void *dinp_colsum, const float *partials,
                   int nblocks, int C, cudaStream_t stream);

#endif
