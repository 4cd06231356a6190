/* The mma.sync family's forward (attn_fwd_mma_kernel), head size 64 or 128:
 * its shared-memory layout and main loop, with the online softmax and the
 * causal mask of each key tile, and the lse and O stores. attention_mma.cu
 * has the family's design; attention_tile_shapes.cuh the shapes;
 * attention_mma_launch.cuh its launcher. */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_MMA_FWD_CUH
#define GPT2_KERNELS_CUDA_ATTENTION_MMA_FWD_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/cuda/attention_mma_tiles.cuh"
#include "kernels/cuda/attention_tiles.cuh"

namespace {

using namespace attention_tiles;

template <int HS, int WARPS, int MT> struct FwdCfg {
    static constexpr int BM = WARPS * MT * 16, BN = 64, NTH = WARPS * 32;
    static constexpr size_t SMEM = (size_t)(BM + 4 * BN) * HS * sizeof(bf16); // Q, 2x(K, V)
};

// Shape: MmaFwd64's members (below)
template <class Shape>
static __global__ void __launch_bounds__(Shape::WARPS * 32, Shape::MIN_BLOCKS)
    attn_fwd_mma_kernel(bf16 *__restrict__ out, float *__restrict__ lse,
                        const bf16 *__restrict__ qkv, int T, int NH, float scale_log2) {
    constexpr int HS = Shape::HS, WARPS = Shape::WARPS, MT = Shape::ROW_TILES;
    typedef FwdCfg<HS, WARPS, MT> Cfg;
    constexpr int BM = Cfg::BM, BN = Cfg::BN, NTH = Cfg::NTH, KT = HS / 16, NS = BN / 8,
                  NO = HS / 8, WR = MT * 16;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    bf16 *sQ = reinterpret_cast<bf16 *>(smem_raw);
    bf16 *sK = sQ + BM * HS; // [2][BN * HS]
    bf16 *sV = sK + 2 * BN * HS;

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    // 1-D grid, longest query tiles first over all (batch, head) pairs
    const int n_bh = (int)(gridDim.x / ((T + BM - 1) / BM));
    const int bh = (int)(blockIdx.x % n_bh), b = bh / NH, h = bh % NH;
    const int q0 = ((T + BM - 1) / BM - 1 - (int)(blockIdx.x / n_bh)) * BM;
    const int C = NH * HS;
    const size_t ld = (size_t)3 * C;
    const bf16 *qg = qkv + (size_t)b * T * ld + (size_t)h * HS;
    const bf16 *kg = qg + C, *vg = qg + 2 * C;
    const int n_kt = (min(q0 + BM, T) - 1) / BN + 1; // key tiles up to the causal limit

    load_tile<BM, HS, NTH>(sQ, qg + (size_t)q0 * ld, ld, T - q0, tid);
    {
        const int k0 = (n_kt - 1) * BN;
        load_tile<BN, HS, NTH>(sK, kg + (size_t)k0 * ld, ld, T - k0, tid);
        load_tile<BN, HS, NTH>(sV, vg + (size_t)k0 * ld, ld, T - k0, tid);
    }
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads();

    const int wl0 = warp * WR;  // warp's first row within the block
    const int wrow0 = q0 + wl0; // and in the sequence
    const bool warp_active = wrow0 < T;
    const int g = lane >> 2, t4 = lane & 3;

    uint32_t qf[MT][KT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int kk = 0; kk < KT; kk++)
            ldmatrix_x4(qf[mt][kk], smem_u32(sQ + tile_off<HS>(wl0 + mt * 16 + (lane & 15),
                                                               kk * 16 + (lane >> 4) * 8)));

    float o[MT][NO][4];
    float m[MT][2], l[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int n = 0; n < NO; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) o[mt][n][e] = 0.f;
        m[mt][0] = m[mt][1] = -INFINITY;
        l[mt][0] = l[mt][1] = 0.f;
    }

    for (int it = 0; it < n_kt; it++) {
        const int j = n_kt - 1 - it, buf = it & 1;
        if (it > 0) {
            cp_async_wait_all();
            __syncthreads(); // tile j landed; everyone is done with buffer buf ^ 1
        }
        if (j > 0) {
            const int k0 = (j - 1) * BN;
            load_tile<BN, HS, NTH>(sK + (buf ^ 1) * BN * HS, kg + (size_t)k0 * ld, ld, T - k0, tid);
            load_tile<BN, HS, NTH>(sV + (buf ^ 1) * BN * HS, vg + (size_t)k0 * ld, ld, T - k0, tid);
            cp_async_commit();
        }
        // causal block skipping: the whole tile is above this warp's rows
        if (!warp_active || j * BN > wrow0 + WR - 1) continue;
        const bf16 *ks = sK + buf * BN * HS, *vs = sV + buf * BN * HS;

        float s[MT][NS][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int n = 0; n < NS; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) s[mt][n][e] = 0.f;
#pragma unroll
        for (int kk = 0; kk < KT; kk++)
#pragma unroll
            for (int np = 0; np < NS / 2; np++) {
                uint32_t kb[4];
                ldmatrix_x4(kb,
                            smem_u32(ks + tile_off<HS>(np * 16 + (lane & 7) + ((lane >> 4) << 3),
                                                       kk * 16 + ((lane >> 3) & 1) * 8)));
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    mma_bf16(s[mt][2 * np], qf[mt][kk], kb[0], kb[1]);
                    mma_bf16(s[mt][2 * np + 1], qf[mt][kk], kb[2], kb[3]);
                }
            }

        if (j * BN + BN - 1 > wrow0) { // the tile crosses this warp's diagonal
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int n = 0; n < NS; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int row = wrow0 + mt * 16 + g + ((e >> 1) << 3);
                        const int col = j * BN + n * 8 + 2 * t4 + (e & 1);
                        if (col > row) s[mt][n][e] = -INFINITY;
                    }
        }

        // online softmax, base 2: p = 2^(s*scale*log2e - m)
        uint32_t pa[MT][BN / 16][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
#pragma unroll
            for (int r = 0; r < 2; r++) {
                float mx = -INFINITY;
#pragma unroll
                for (int n = 0; n < NS; n++)
                    mx = fmaxf(mx, fmaxf(s[mt][n][2 * r], s[mt][n][2 * r + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                const float m_new = fmaxf(m[mt][r], mx * scale_log2);
                const float m_use = m_new == -INFINITY ? 0.f : m_new; // row fully masked so far
                const float alpha = fast_exp2(m[mt][r] - m_use);
                m[mt][r] = m_new;
                float sum = 0.f;
#pragma unroll
                for (int n = 0; n < NS; n++) {
                    const float p0 = fast_exp2(fmaf(s[mt][n][2 * r], scale_log2, -m_use));
                    const float p1 = fast_exp2(fmaf(s[mt][n][2 * r + 1], scale_log2, -m_use));
                    s[mt][n][2 * r] = p0;
                    s[mt][n][2 * r + 1] = p1;
                    sum += p0 + p1;
                }
                l[mt][r] = l[mt][r] * alpha + sum;
#pragma unroll
                for (int n = 0; n < NO; n++) {
                    o[mt][n][2 * r] *= alpha;
                    o[mt][n][2 * r + 1] *= alpha;
                }
            }
#pragma unroll
            for (int kk = 0; kk < BN / 16; kk++) {
                pa[mt][kk][0] = pack_bf16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                pa[mt][kk][1] = pack_bf16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                pa[mt][kk][2] = pack_bf16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                pa[mt][kk][3] = pack_bf16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
            }
        }

        // O += P V
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++)
#pragma unroll
            for (int dp = 0; dp < HS / 16; dp++) {
                uint32_t vb[4];
                ldmatrix_x4_trans(
                    vb, smem_u32(vs + tile_off<HS>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8,
                                                   dp * 16 + (lane >> 4) * 8)));
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    mma_bf16(o[mt][2 * dp], pa[mt][kk], vb[0], vb[1]);
                    mma_bf16(o[mt][2 * dp + 1], pa[mt][kk], vb[2], vb[3]);
                }
            }
    }
    if (!warp_active) return;

    // lse, O / l; O goes through the warp's own rows of sQ (only this warp
    // read them, at the start) for 16-byte global stores
    float *lse_bh = lse + (size_t)bh * T;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            float sum = l[mt][r];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const float inv = 1.f / sum;
            const int lr = wl0 + mt * 16 + g + 8 * r;
            if (t4 == 0 && q0 + lr < T) lse_bh[q0 + lr] = (m[mt][r] + __log2f(sum)) * LN2;
#pragma unroll
            for (int n = 0; n < NO; n++)
                *reinterpret_cast<uint32_t *>(sQ + tile_off<HS>(lr, n * 8 + 2 * t4)) =
                    pack_bf16(o[mt][n][2 * r] * inv, o[mt][n][2 * r + 1] * inv);
        }
    __syncwarp();
    constexpr int CH = HS / 8;
    bf16 *og = out + (size_t)b * T * C + (size_t)h * HS;
#pragma unroll
    for (int k = 0; k < WR * CH / 32; k++) {
        const int i = lane + 32 * k, r = i / CH, c = i % CH;
        const int row = wrow0 + r;
        if (row < T)
            *reinterpret_cast<uint4 *>(og + (size_t)row * C + c * 8) =
                *reinterpret_cast<const uint4 *>(sQ + (wl0 + r) * HS +
                                                 (swz_chunk<CH>(wl0 + r, c) << 3));
    }
}

} // namespace
#endif
