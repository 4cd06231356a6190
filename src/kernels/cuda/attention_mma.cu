/* Causal flash attention on mma.sync (FlashAttention-2 algorithm), the
 * kernel family of every GPU of compute capability 8.0 and newer (Ampere
 * on; on Hopper the wgmma family of attention_wgmma.cu runs by default):
 * BF16 in and out, FP32 accumulation and softmax, head sizes 64 and 128, any
 * T. The dispatcher (attention.cu) chooses the family and runs the
 * backward's passes around its main kernel; contract and CPU reference:
 * kernels/attention.h, kernels/cpu/attention.c.
 *
 * Tensor cores through mma.sync.m16n8k16 (bf16 -> fp32, sm_80+ PTX, runs on
 * sm_90), operands from shared memory through ldmatrix, global -> shared
 * through cp.async, double buffered (the next tile loads while this one is
 * computed). Shared tiles are rows of HS bf16 whose 16-byte chunks are XOR
 * swizzled by row, so the 8 rows an ldmatrix reads hit 8 different bank
 * groups without padding (attention_tiles.cuh).
 *
 * Forward: a block owns BM query rows of one (batch, head); each warp owns
 * MT*16 consecutive rows with their Q fragments, O accumulators and softmax
 * state (max m, sum l) in registers. The block walks the key/value tiles of
 * BN = 64 keys from the diagonal tile down to tile 0: S = Q K^T, online
 * softmax in fp32 (base 2, the 1/sqrt(HS) scale folded into one FMA), P goes
 * from the S accumulators straight into mma A fragments (the accumulator
 * layout of two n-tiles is the A layout), O += P V. Only tiles touching the
 * diagonal are masked; a warp skips tiles wholly above its rows (causal
 * block skipping). The end writes lse (natural log) and O / l through shared
 * memory as 16-byte stores. Block order: longest query tiles first over all
 * heads, so the short ones fill the tail. (Grouping the tiles of one head
 * instead raises the L2 hit rate but measured no faster, and slower at long
 * T: the forward is bound by issue and latency at 8 warps per SM, not by
 * DRAM.)
 *
 * Backward main kernel (the dispatcher runs D = rowsum(dO * O) before it,
 * dQ * scale -> bf16 after; its launcher zeroes the fp32 dQ accumulator): a
 * block owns BN = 16*WARPS keys (16 per warp) and keeps dK, dV for them in
 * registers while it walks the query tiles of BM rows from the diagonal to
 * T: per tile, recompute S^T = K Q^T and P^T = exp(S^T - lse),
 * dP^T = V dO^T, dS^T = P^T (dP^T - D), dV += P^T dO and dK += dS^T Q (A
 * fragments again straight from the accumulators), then dS goes to shared
 * memory and the warps split dQ_tile = dS K between them, added to the fp32
 * accumulator with vector atomics (red.global.add.v2.f32).
 * Why atomics for dQ rather than a separate dQ kernel: a dQ kernel over
 * query tiles has to recompute S and dP, i.e. 7 tile matmuls instead of 5;
 * the atomic traffic (B*T*C floats per key block) lands in L2 and overlaps
 * the math. Cost: dQ sums in an arbitrary order, so it is not bitwise
 * reproducible run to run (dK, dV are; the wgmma backward has a
 * deterministic mode, this family none).
 *
 * Tile shapes: MmaFwd64 ... MmaBwd128 below, the fastest measured on H100
 * (docs/ has the measurements). HS=64 forward 4 warps x 32 rows (BM=128, 255
 * registers, 2 blocks/SM), backward 4 warps x 16 keys (BN=64), 32 queries a
 * step, 3 blocks/SM; HS=128 forward 8 warps x 16 rows, backward 8 warps x 16
 * keys, 32 queries (register-bound: dK, dV alone take 128 registers a
 * thread; scripts/build_attention_standalone.sh prints ptxas' register and
 * spill report). Builds with GPT2_ATTN_TUNING (CMake
 * -DGPT2_ATTN_TUNING=ON) add other head size 64 shapes, by name, for the
 * benchmark and the test (attention_mma_variants, at the end).
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/cuda/attention_families.h"
#include "kernels/cuda/attention_tiles.cuh"
#include "kernels/cuda/cuda_check.h"

namespace {

using namespace attention_tiles;

// ---------------------------------------------------------------------------
// PTX helpers of the mma.sync kernels

// d += a * b, a 16x16 (row), b 16x8 (col), bf16 in, fp32 accumulate.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// p[0] += a, p[1] += b: one vector reduction on sm_90, two before.
__device__ __forceinline__ void red_add_v2(float *p, float a, float b) {
#if __CUDA_ARCH__ >= 900
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(p), "f"(a), "f"(b) : "memory");
#else
    atomicAdd(p, a);
    atomicAdd(p + 1, b);
#endif
}

// ---------------------------------------------------------------------------
// Forward

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

// ---------------------------------------------------------------------------
// Backward main kernel

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

// ---------------------------------------------------------------------------
// Tile shapes

// Forward: WARPS warps of ROW_TILES x 16 query rows each (BM = 16 WARPS
// ROW_TILES rows a block), key tiles of 64; MIN_BLOCKS: blocks per SM the
// register allocation must allow (__launch_bounds__).
struct MmaFwd64 {
    static constexpr int HS = 64, WARPS = 4, ROW_TILES = 2, MIN_BLOCKS = 2;
};
struct MmaFwd128 {
    static constexpr int HS = 128, WARPS = 8, ROW_TILES = 1, MIN_BLOCKS = 1;
};
// Backward: WARPS warps of 16 keys each (BN = 16 WARPS keys a block),
// QUERIES query rows a step. Head size 64: 3 blocks (12 warps) per SM, the
// fastest of the shapes tried (attention_mma_variants).
struct MmaBwd64 {
    static constexpr int HS = 64, WARPS = 4, QUERIES = 32, MIN_BLOCKS = 3;
};
struct MmaBwd128 {
    static constexpr int HS = 128, WARPS = 8, QUERIES = 32, MIN_BLOCKS = 1;
};

// ---------------------------------------------------------------------------
// Launchers

template <class Shape>
void launch_fwd_mma(bf16 *out, float *lse, const bf16 *qkv, int B, int T, int NH,
                    cudaStream_t stream) {
    constexpr int HS = Shape::HS;
    typedef FwdCfg<HS, Shape::WARPS, Shape::ROW_TILES> Cfg;
    auto kernel = attn_fwd_mma_kernel<Shape>;
    static unsigned long long smem_done = 0;
    raise_smem_limit(kernel, Cfg::SMEM, smem_done);
    const unsigned grid = (unsigned)B * NH * ((T + Cfg::BM - 1) / Cfg::BM);
    const float scale_log2 = LOG2E / sqrtf((float)HS);
    kernel<<<grid, Cfg::NTH, Cfg::SMEM, stream>>>(out, lse, qkv, T, NH, scale_log2);
    CUDA_CHECK_LAUNCH("attn_fwd_mma_kernel");
}

template <class Shape> void launch_bwd_mma(const AttnBwdArgs &a, cudaStream_t stream) {
    constexpr int HS = Shape::HS;
    typedef BwdCfg<HS, Shape::WARPS, Shape::QUERIES> Cfg;
    auto kernel = attn_bwd_mma_kernel<Shape>;
    static unsigned long long smem_done = 0;
    raise_smem_limit(kernel, Cfg::SMEM, smem_done);
    const unsigned grid = (unsigned)a.B * a.NH * ((a.T + Cfg::BN - 1) / Cfg::BN);
    const float scale = 1.f / sqrtf((float)HS);
    attention_zero_dq_acc(a, stream); // every block adds into it
    kernel<<<grid, Cfg::NTH, Cfg::SMEM, stream>>>(a.dqkv, a.dq_acc, a.dout, a.qkv, a.lse, a.dsum,
                                                  a.T, a.NH, scale, scale * LOG2E);
    CUDA_CHECK_LAUNCH("attn_bwd_mma_kernel");
}

} // namespace

void attention_mma_forward(bf16 *out, float *lse, const bf16 *qkv, int B, int T, int NH, int HS,
                           cudaStream_t stream) {
    if (HS == 64)
        launch_fwd_mma<MmaFwd64>(out, lse, qkv, B, T, NH, stream);
    else
        launch_fwd_mma<MmaFwd128>(out, lse, qkv, B, T, NH, stream);
}

void attention_mma_backward(const AttnBwdArgs &a, cudaStream_t stream) {
    if (a.HS == 64)
        launch_bwd_mma<MmaBwd64>(a, stream);
    else
        launch_bwd_mma<MmaBwd128>(a, stream);
}

#ifdef GPT2_ATTN_TUNING
// ---------------------------------------------------------------------------
// Tuning variants: other head size 64 shapes, each the production shape with
// the members it changes, named in attention_mma_variants.

namespace {
struct MmaFwd64_4x16_3blocks : MmaFwd64 {
    static constexpr int ROW_TILES = 1, MIN_BLOCKS = 3;
};
struct MmaFwd64_8x16_2blocks : MmaFwd64 {
    static constexpr int WARPS = 8, ROW_TILES = 1, MIN_BLOCKS = 2;
};
struct MmaFwd64_4x16_1block : MmaFwd64 {
    static constexpr int ROW_TILES = 1, MIN_BLOCKS = 1;
};
struct MmaBwd64_4x64q_2blocks : MmaBwd64 {
    static constexpr int QUERIES = 64, MIN_BLOCKS = 2;
};
struct MmaBwd64_8x32q_1block : MmaBwd64 {
    static constexpr int WARPS = 8, MIN_BLOCKS = 1;
};
struct MmaBwd64_4x32q_2blocks : MmaBwd64 {
    static constexpr int MIN_BLOCKS = 2;
};
struct MmaBwd64_8x64q_1block : MmaBwd64 {
    static constexpr int WARPS = 8, QUERIES = 64, MIN_BLOCKS = 1;
};
constexpr const char *MMA = ATTN_FAMILY_MMA;
} // namespace

const AttnVariant attention_mma_variants[] = {
    {{"mma_fwd64_4x16_3blocks", MMA, 64, false, "forward: 4 warps x 16 rows, 3 blocks/SM"},
     false,
     launch_fwd_mma<MmaFwd64_4x16_3blocks>,
     nullptr},
    {{"mma_fwd64_8x16_2blocks", MMA, 64, false, "forward: 8 warps x 16 rows, 2 blocks/SM"},
     false,
     launch_fwd_mma<MmaFwd64_8x16_2blocks>,
     nullptr},
    {{"mma_fwd64_4x16_1block", MMA, 64, false, "forward: 4 warps x 16 rows, 1 block/SM"},
     false,
     launch_fwd_mma<MmaFwd64_4x16_1block>,
     nullptr},
    {{"mma_bwd64_4x64q_2blocks", MMA, 64, true,
      "backward: 4 warps x 16 keys, 64 queries a step, 2 blocks/SM"},
     false,
     nullptr,
     launch_bwd_mma<MmaBwd64_4x64q_2blocks>},
    {{"mma_bwd64_8x32q_1block", MMA, 64, true,
      "backward: 8 warps x 16 keys, 32 queries a step, 1 block/SM"},
     false,
     nullptr,
     launch_bwd_mma<MmaBwd64_8x32q_1block>},
    {{"mma_bwd64_4x32q_2blocks", MMA, 64, true,
      "backward: 4 warps x 16 keys, 32 queries a step, 2 blocks/SM"},
     false,
     nullptr,
     launch_bwd_mma<MmaBwd64_4x32q_2blocks>},
    {{"mma_bwd64_8x64q_1block", MMA, 64, true,
      "backward: 8 warps x 16 keys, 64 queries a step, 1 block/SM"},
     false,
     nullptr,
     launch_bwd_mma<MmaBwd64_8x64q_1block>},
};
const int attention_mma_variant_count =
    (int)(sizeof attention_mma_variants / sizeof attention_mma_variants[0]);
#endif
