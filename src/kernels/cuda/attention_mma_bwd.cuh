/* The mma.sync family's backward main kernel (attn_bwd_mma_kernel), head
 * size 64 or 128: its shared-memory layout and main loop, with the
 * backward's softmax and mask steps inline, dQ added into the fp32
 * accumulator by vector atomics, and dK, dV stored at the end.
 * attention_mma.cu has the family's design; attention_tile_shapes.cuh the
 * shapes; attention_mma_launch.cuh its launcher. */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_MMA_BWD_CUH
#define GPT2_KERNELS_CUDA_ATTENTION_MMA_BWD_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/cuda/attention_mma_tiles.cuh"
#include "kernels/cuda/attention_tiles.cuh"

namespace {

using namespace attention_tiles;

template <int HS, int WARPS, int BM> struct BwdCfg {
    static constexpr int BN = WARPS * 16, NTH = WARPS * 32;
    // K, V, 2x(Q, dO), dS^T (BN x BM), then 2x(lse, D) in fp32
    static constexpr size_t SMEM =
        (size_t)(2 * BN * HS + 4 * BM * HS + BN * BM) * sizeof(bf16) + 4 * BM * sizeof(float);
};

// Shape: MmaBwd64's members (below)
template <class Shape>
static __global__ void __launch_bounds__(Shape::WARPS * 32, Shape::MIN_BLOCKS)
    attn_bwd_mma_kernel(bf16 *__restrict__ dqkv, float *__restrict__ dq_acc,
                        const bf16 *__restrict__ dout, const bf16 *__restrict__ qkv,
                        const float *__restrict__ lse, const float *__restrict__ dsum, int T,
                        int NH, float scale, float scale_log2) {
    constexpr int HS = Shape::HS, WARPS = Shape::WARPS, BM = Shape::QUERIES;
    typedef BwdCfg<HS, WARPS, BM> Cfg;
    constexpr int BN = Cfg::BN, NTH = Cfg::NTH, KT = HS / 16, QN = BM / 8, NO = HS / 8;
    // dQ tile (BM x HS) split between warps: WM row tiles x WN column slabs
    constexpr int WM = BM / 16, WN = WARPS / WM, DQ_NT = HS / (WN * 8);
    static_assert(WM * WN == WARPS && DQ_NT % 2 == 0, "dQ warp split");
    extern __shared__ __align__(128) unsigned char smem_raw[];
    bf16 *sK = reinterpret_cast<bf16 *>(smem_raw);
    bf16 *sV = sK + BN * HS;
    bf16 *sQ = sV + BN * HS;                              // [2][BM * HS]
    bf16 *sdO = sQ + 2 * BM * HS;                         // [2][BM * HS]
    bf16 *sdS = sdO + 2 * BM * HS;                        // BN x BM: dS^T, keys as rows
    float *sL = reinterpret_cast<float *>(sdS + BN * BM); // [2][BM]
    float *sD = sL + 2 * BM;                              // [2][BM]

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;
    // block order: bwd_block (a head's key blocks adjacent, so that the
    // blocks that read the same Q, dO rows run together and find them in L2)
    const BwdBlock blk = bwd_block<HS, BN>(qkv, dout, lse, dsum, T, NH);
    const int b = blk.b, h = blk.h, k0 = blk.k0, C = blk.C;
    const size_t ld = blk.ld;
    const bf16 *qg = blk.qg, *dog = blk.dog;
    const int i0 = k0 / BM, n_qt = (T + BM - 1) / BM;

    load_tile<BN, HS, NTH>(sK, qg + C + (size_t)k0 * ld, ld, T - k0, tid);
    load_tile<BN, HS, NTH>(sV, qg + 2 * C + (size_t)k0 * ld, ld, T - k0, tid);
    auto load_q_tile = [&](int i, int st) {
        const int q0 = i * BM;
        load_tile<BM, HS, NTH>(sQ + st * BM * HS, qg + (size_t)q0 * ld, ld, T - q0, tid);
        load_tile<BM, HS, NTH>(sdO + st * BM * HS, dog + (size_t)q0 * C, C, T - q0, tid);
        load_row_stats<BM>(sL + st * BM, sD + st * BM, blk, q0, T, tid);
    };
    load_q_tile(i0, 0);
    cp_async_commit();

    const int kw = warp * 16, kw0 = k0 + kw; // this warp's keys: local row, sequence index
    float dk[NO][4], dv[NO][4];
#pragma unroll
    for (int n = 0; n < NO; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) dk[n][e] = dv[n][e] = 0.f;

    for (int i = i0; i < n_qt; i++) {
        const int st = (i - i0) & 1, q0 = i * BM;
        cp_async_wait_all();
        __syncthreads(); // tile i landed; everyone is done with stage st ^ 1 and with sdS
        if (i + 1 < n_qt) {
            load_q_tile(i + 1, st ^ 1);
            cp_async_commit();
        }
        const bf16 *qs = sQ + st * BM * HS, *dos = sdO + st * BM * HS;
        const float *ls = sL + st * BM, *ds = sD + st * BM;

        if (kw0 <= q0 + BM - 1) { // some (key, query) pair of this warp is unmasked
            float s[QN][4], dp[QN][4];
#pragma unroll
            for (int n = 0; n < QN; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) s[n][e] = dp[n][e] = 0.f;
                    // S^T = K Q^T, dP^T = V dO^T (16 keys x BM queries)
#pragma unroll
            for (int kk = 0; kk < KT; kk++) {
                uint32_t ka[4], va[4];
                const int aoff = tile_off<HS>(kw + (lane & 15), kk * 16 + (lane >> 4) * 8);
                ldmatrix_x4(ka, smem_u32(sK + aoff));
                ldmatrix_x4(va, smem_u32(sV + aoff));
#pragma unroll
                for (int np = 0; np < QN / 2; np++) {
                    uint32_t qb[4], ob[4];
                    const int boff = tile_off<HS>(np * 16 + (lane & 7) + ((lane >> 4) << 3),
                                                  kk * 16 + ((lane >> 3) & 1) * 8);
                    ldmatrix_x4(qb, smem_u32(qs + boff));
                    ldmatrix_x4(ob, smem_u32(dos + boff));
                    mma_bf16(s[2 * np], ka, qb[0], qb[1]);
                    mma_bf16(s[2 * np + 1], ka, qb[2], qb[3]);
                    mma_bf16(dp[2 * np], va, ob[0], ob[1]);
                    mma_bf16(dp[2 * np + 1], va, ob[2], ob[3]);
                }
            }
            // P^T = exp(S^T * scale - lse) (masked above the diagonal), dS^T = P^T (dP^T - D)
            const bool need_mask = kw0 + 15 > q0;
#pragma unroll
            for (int n = 0; n < QN; n++) {
                const int qc = n * 8 + 2 * t4;
                const float2 L = *reinterpret_cast<const float2 *>(ls + qc);
                const float2 Dq = *reinterpret_cast<const float2 *>(ds + qc);
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const float lv = (e & 1) ? L.y : L.x, dv_ = (e & 1) ? Dq.y : Dq.x;
                    float p = fast_exp2(fmaf(s[n][e], scale_log2, -lv * LOG2E));
                    if (need_mask && kw0 + g + ((e >> 1) << 3) > q0 + qc + (e & 1)) p = 0.f;
                    s[n][e] = p;
                    dp[n][e] = p * (dp[n][e] - dv_);
                }
            }
            // dV += P^T dO, dK += dS^T Q
#pragma unroll
            for (int kq = 0; kq < BM / 16; kq++) {
                uint32_t pa[4], da[4];
                pa[0] = pack_bf16(s[2 * kq][0], s[2 * kq][1]);
                pa[1] = pack_bf16(s[2 * kq][2], s[2 * kq][3]);
                pa[2] = pack_bf16(s[2 * kq + 1][0], s[2 * kq + 1][1]);
                pa[3] = pack_bf16(s[2 * kq + 1][2], s[2 * kq + 1][3]);
                da[0] = pack_bf16(dp[2 * kq][0], dp[2 * kq][1]);
                da[1] = pack_bf16(dp[2 * kq][2], dp[2 * kq][3]);
                da[2] = pack_bf16(dp[2 * kq + 1][0], dp[2 * kq + 1][1]);
                da[3] = pack_bf16(dp[2 * kq + 1][2], dp[2 * kq + 1][3]);
#pragma unroll
                for (int dn = 0; dn < HS / 16; dn++) {
                    uint32_t ob[4], qb[4];
                    const int boff = tile_off<HS>(kq * 16 + (lane & 7) + ((lane >> 3) & 1) * 8,
                                                  dn * 16 + (lane >> 4) * 8);
                    ldmatrix_x4_trans(ob, smem_u32(dos + boff));
                    ldmatrix_x4_trans(qb, smem_u32(qs + boff));
                    mma_bf16(dv[2 * dn], pa, ob[0], ob[1]);
                    mma_bf16(dv[2 * dn + 1], pa, ob[2], ob[3]);
                    mma_bf16(dk[2 * dn], da, qb[0], qb[1]);
                    mma_bf16(dk[2 * dn + 1], da, qb[2], qb[3]);
                }
            }
            // dS^T (bf16) to shared memory for the dQ product
#pragma unroll
            for (int n = 0; n < QN; n++)
#pragma unroll
                for (int r = 0; r < 2; r++)
                    *reinterpret_cast<uint32_t *>(sdS +
                                                  tile_off<BM>(kw + g + 8 * r, n * 8 + 2 * t4)) =
                        pack_bf16(dp[n][2 * r], dp[n][2 * r + 1]);
        } else {
#pragma unroll
            for (int n = 0; n < QN; n++)
#pragma unroll
                for (int r = 0; r < 2; r++)
                    *reinterpret_cast<uint32_t *>(
                        sdS + tile_off<BM>(kw + g + 8 * r, n * 8 + 2 * t4)) = 0u;
        }
        __syncthreads(); // dS^T complete

        // dQ_tile += dS K: this warp's 16 query rows x HS/WN columns, over all BN keys
        {
            const int mq = warp % WM, nb = (warp / WM) * (HS / WN);
            float acc[DQ_NT][4];
#pragma unroll
            for (int n = 0; n < DQ_NT; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[n][e] = 0.f;
#pragma unroll
            for (int kk = 0; kk < BN / 16; kk++) {
                uint32_t a[4];
                ldmatrix_x4_trans(
                    a, smem_u32(sdS + tile_off<BM>(kk * 16 + (lane & 7) + ((lane >> 4) << 3),
                                                   mq * 16 + ((lane >> 3) & 1) * 8)));
#pragma unroll
                for (int np = 0; np < DQ_NT / 2; np++) {
                    uint32_t kb[4];
                    ldmatrix_x4_trans(
                        kb, smem_u32(sK + tile_off<HS>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8,
                                                       nb + np * 16 + (lane >> 4) * 8)));
                    mma_bf16(acc[2 * np], a, kb[0], kb[1]);
                    mma_bf16(acc[2 * np + 1], a, kb[2], kb[3]);
                }
            }
#pragma unroll
            for (int r = 0; r < 2; r++) {
                const int q = q0 + mq * 16 + g + 8 * r;
                if (q < T) {
                    float *dst = dq_acc + ((size_t)b * T + q) * C + (size_t)h * HS + nb + 2 * t4;
#pragma unroll
                    for (int n = 0; n < DQ_NT; n++)
                        red_add_v2(dst + n * 8, acc[n][2 * r], acc[n][2 * r + 1]);
                }
            }
        }
    }

    // dK (scaled) and dV for this warp's 16 keys
    bf16 *dkg = dqkv + (size_t)b * T * ld + C + (size_t)h * HS;
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int key = kw0 + g + 8 * r;
        if (key < T) {
            bf16 *dst = dkg + (size_t)key * ld + 2 * t4;
#pragma unroll
            for (int n = 0; n < NO; n++) {
                *reinterpret_cast<uint32_t *>(dst + n * 8) =
                    pack_bf16(dk[n][2 * r] * scale, dk[n][2 * r + 1] * scale);
                *reinterpret_cast<uint32_t *>(dst + C + n * 8) =
                    pack_bf16(dv[n][2 * r], dv[n][2 * r + 1]);
            }
        }
    }
}

} // namespace
#endif
