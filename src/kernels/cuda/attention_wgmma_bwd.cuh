/* The wgmma family's one-warpgroup backward main kernel
 * (attn_bwd_wgmma_kernel), head size 64 or 128: the fallback of the
 * warp-specialized kernel (attention_wgmma_bwd_ws.cuh) where no TMA tensor
 * map can be made, with cp.async loads (CpAsyncBwd64, CpAsyncBwd128), and in
 * tuning builds with TMA, as the production kernel before it.
 * attention_wgmma.cu has the family's design; attention_wgmma_launch.cuh
 * its launcher. */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_WGMMA_BWD_CUH
#define GPT2_KERNELS_CUDA_ATTENTION_WGMMA_BWD_CUH

#include <cuda.h> // CUtensorMap
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/cuda/attention_softmax.cuh"
#include "kernels/cuda/attention_tile_scheduler.cuh"
#include "kernels/cuda/attention_tiles.cuh"
#include "kernels/cuda/attention_wgmma_epilogue.cuh"
#include "kernels/cuda/attention_wgmma_tiles.cuh"
#include "kernels/cuda/hopper.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace {

using namespace attention_tiles;

// ---------------------------------------------------------------------------
// Backward main kernel, head size HS = 64 or 128 (the dispatcher,
// attention.cu, runs the D = rowsum(dO*O) pass before it and the dQ
// conversion after, as for the mma.sync main kernel).
//
// A block (one warpgroup) owns 64 keys of one (batch, head) and keeps dK, dV
// for them in wgmma accumulators while it walks the query tiles of 64 rows
// from the diagonal to T, Q, dO, lse and D in NST stages (3 at head size
// 64, measured faster than 2; 2 at 128, whose third would leave room for one
// block per SM). Thread 0 loads K, V and the Q, dO tiles with TMA (tensor
// maps of qkv and dout), which frees the registers that the cp.async
// addresses took (cp.async stays the fallback where no tensor map can be
// made). Per tile:
// S^T = K Q^T and dP^T = V dO^T (A and B K-major from shared memory),
// P^T = exp(S^T - lse) masked above the diagonal, dS^T = P^T (dP^T - D)
// (SPLIT: P^T computed while the tensor cores do dP^T; SPLIT 2: dV issued
// then too, and dK before the dS barrier; measured faster at head size 128
// only, where there are registers for it);
// dV += P^T dO and dK += dS^T Q with P^T, dS^T as register A operands (dO, Q
// MN-major); dS^T goes to shared memory transposed (stmatrix .trans), so
// that dQ_tile = dS K is one more wgmma (dS K-major, K MN-major). dQ_tile
// goes to shared memory (into this stage's Q and dO tiles, which the
// products have finished with) and is added to the fp32 dQ accumulator by
// the copy engine (TMA), one bulk reduction (cp.reduce.async.bulk) per warp
// for its 16 rows, instead of 1024 vector atomics per warp.
//
// DET (dq_order): the adds into each 16-row slice of dQ go in the order of
// the key blocks, so that fp32 rounding is the same every run. Key block kb
// contributes to query tiles kb.. (causal); warp w of block kb waits until
// the slice's counter says kb blocks have added, adds, waits for its add to
// complete and passes the turn. Blocks are dispatched in index order and
// block kb waits only on blocks before it, so every wait ends. The blocks
// walk the query tiles from the last one down in this mode (the first tile
// of block kb is the last of every earlier block; walking up, block kb
// would wait a whole tile's work for block kb - 1 at every tile). The
// accumulator's layout (dq_wgmma_index, attention_tiles.cuh) makes each tile
// one contiguous block and the stores to shared memory free of bank conflicts.
// Products with HS columns run per 64 (one atom of the tiles): at HS = 128
// dQ is done half by half, so that its accumulators (32 registers) come on
// top of dK's and dV's only.

constexpr int BWD_BM = 64, BWD_BN = 64;
// K, V, NST x (Q, dO), dS (queries x keys), then NST x (lse, D), NST mbarriers;
// +1024 for alignment
template <int HS, int NST = 2>
constexpr size_t BWD_SMEM = (size_t)(2 * BWD_BN * HS + 2 * NST * BWD_BM * HS + BWD_BM * BWD_BN) *
                                sizeof(bf16) +
                            2 * NST *BWD_BM * sizeof(float) + NST * 8 + 1024;

// Shape: WgmmaBwd64's members (below). Shape::TMA: thread 0 loads K, V and
// each stage's Q, dO with TMA (qkv_map, dout_map: make_head_map's)
// completing on the stage's mbarrier; else all threads with cp.async. lse
// and D rows go by cp.async either way. DET: the deterministic mode.
template <class Shape, bool DET>
static __global__ void __launch_bounds__(128, Shape::MIN_BLOCKS)
    attn_bwd_wgmma_kernel(bf16 *__restrict__ dqkv, float *__restrict__ dq_acc,
                          const bf16 *__restrict__ dout, const bf16 *__restrict__ qkv,
                          const float *__restrict__ lse, const float *__restrict__ dsum, int T,
                          int NH, float scale, float scale_log2, unsigned *__restrict__ dq_order,
                          int group, const __grid_constant__ CUtensorMap qkv_map,
                          const __grid_constant__ CUtensorMap dout_map) {
    // the shape under the body's names (unused where the body is __trap())
    [[maybe_unused]] constexpr int HS = Shape::HS, NST = Shape::STAGES, SPLIT = Shape::SPLIT;
    [[maybe_unused]] constexpr bool TMA = Shape::TMA;
#ifdef ATTN_WGMMA_DEVICE
    constexpr int BM = BWD_BM, BN = BWD_BN, NTH = 128, QN = BM / 8, NO = HS / 8, NA = HS / 64;
    extern __shared__ unsigned char smem_raw[];
    bf16 *sK = reinterpret_cast<bf16 *>(smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023));
    bf16 *sV = sK + BN * HS;
    // [NST stages][Q, dO] (BM * HS each): a stage's pair is also the staging
    // area of that tile's dQ in fp32 ([HS / 64 atoms][BM][64])
    bf16 *sQdO = sV + BN * HS;
    bf16 *sdS = sQdO + 2 * NST * BM * HS;                 // BM x BN: dS, queries as rows
    float *sL = reinterpret_cast<float *>(sdS + BM * BN); // [NST][BM]
    float *sD = sL + NST * BM;                            // [NST][BM]
    const uint32_t full_bar0 = smem_u32(sD + NST * BM);   // TMA: stage st's Q, dO landed: + 8 st

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const BwdBlock blk = bwd_block<HS, BN>(qkv, dout, lse, dsum, T, NH, group);
    const int bh = blk.bh, b = blk.b, h = blk.h, k0 = blk.k0, C = blk.C;
    const size_t ld = blk.ld;
    const bf16 *qg = blk.qg, *dog = blk.dog;
    const int i0 = k0 / BM, n_qt = (T + BM - 1) / BM;

    if constexpr (TMA) {
        if (tid == 0) {
            for (int st = 0; st < NST; st++) mbar_init(full_bar0 + 8 * st, 1);
            mbar_init_fence();
        }
        __syncthreads(); // the barriers are initialised before anyone waits on them
    } else {
        load_tile<BN, HS, NTH, true>(sK, qg + C + (size_t)k0 * ld, ld, T - k0, tid);
        load_tile<BN, HS, NTH, true>(sV, qg + 2 * C + (size_t)k0 * ld, ld, T - k0, tid);
    }
    // stage st's tiles; with_kv (the first): K and V with them
    auto load_q_tile = [&](int i, int st, bool with_kv) {
        const int q0 = i * BM;
        bf16 *sq = sQdO + st * 2 * BM * HS;
        if constexpr (TMA) {
            if (tid == 0) {
                const uint32_t bar = full_bar0 + 8 * st;
                const int rows = with_kv ? 2 * BN + 2 * BM : 2 * BM; // of HS bf16
                mbar_arrive_expect_tx(bar, rows * HS * sizeof(bf16));
                if (with_kv) {
                    tma_tile<BN, NA>(sK, &qkv_map, NH + h, k0, b, bar);
                    tma_tile<BN, NA>(sV, &qkv_map, 2 * NH + h, k0, b, bar);
                }
                tma_tile<BM, NA>(sq, &qkv_map, h, q0, b, bar);
                tma_tile<BM, NA>(sq + BM * HS, &dout_map, h, q0, b, bar);
            }
        } else {
            load_tile<BM, HS, NTH, true>(sq, qg + (size_t)q0 * ld, ld, T - q0, tid);
            load_tile<BM, HS, NTH, true>(sq + BM * HS, dog + (size_t)q0 * C, C, T - q0, tid);
        }
        load_row_stats<BM>(sL + st * BM, sD + st * BM, blk, q0, T, tid);
    };
    // the walk over query tiles: from the diagonal up, or (DET) from the last
    // tile down, so that all key blocks of a head reach a tile together and
    // take their turns at its dQ one add after another, not a tile apart
    const int n_it = n_qt - i0;
    auto tile_of = [&](int it) { return DET ? n_qt - 1 - it : i0 + it; };
    load_q_tile(tile_of(0), 0, true);
    cp_async_commit();
    if (NST > 2) { // one cp.async group per tile, empty past the last
        if (n_it > 1) load_q_tile(tile_of(1), 1, false);
        cp_async_commit();
    }

    const int kw0 = k0 + 16 * warp; // this warp's first key in the sequence
    const uint32_t ds_addr = smem_u32(sdS);
    const Sw128 k_desc(smem_u32(sK)), v_desc(smem_u32(sV)), ds_desc(ds_addr);
    float dk[NO * 4], dv[NO * 4]; // atom a's accumulators: [32a..32a+31]
#pragma unroll
    for (int i = 0; i < NO * 4; i++) dk[i] = dv[i] = 0.f;

    // One query tile. MASKED: the tile on the diagonal (the walk's first,
    // or last with DET), the only one with keys above queries. The walk
    // peels it off rather than branching on it per tile: a branch there made
    // ptxas serialize the wgmma.
    auto tile_step = [&](const int it, auto masked) {
        constexpr bool MASKED = decltype(masked)::value;
        const int i = tile_of(it), st = it % NST, q0 = i * BM;
        cp_async_wait<NST - 2>(); // tile it's; with 3 stages, tile it + 1's may be pending
        if (TMA) mbar_wait(full_bar0 + 8 * st, (it / NST) & 1);
        if (!TMA) fence_proxy_async(); // cp.async's writes, read by wgmma
        __syncthreads();               // tile i landed; everyone is done with sdS
        const Sw128 q_desc(smem_u32(sQdO + st * 2 * BM * HS)),
            do_desc(smem_u32(sQdO + (st * 2 + 1) * BM * HS));
        const float *ls = sL + st * BM, *ds = sD + st * BM;

        // S^T = K Q^T, dP^T = V dO^T (64 keys x 64 queries each)
        float s[QN * 4], dp[QN * 4];
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < HS / 16; kk++)
            wgmma_m64n64k16_ss<0>(s, k_desc.at(kstep_off<BN>(kk)), q_desc.at(kstep_off<BM>(kk)),
                                  kk > 0);
        if (SPLIT) wgmma_commit();
#pragma unroll
        for (int kk = 0; kk < HS / 16; kk++)
            wgmma_m64n64k16_ss<0>(dp, v_desc.at(kstep_off<BN>(kk)), do_desc.at(kstep_off<BM>(kk)),
                                  kk > 0);
        wgmma_commit();
        // s[4n + e], dp[4n + e]: key kw0 + g + 8 (e >> 1), query q0 + 8n + 2 t4 + (e & 1)
        // P^T = exp(S^T - lse) in place of S^T, zero above the diagonal (the
        // compares, 64 instructions, in the MASKED tile only); dS^T = P^T
        // (dP^T - D) in place of dP^T
        auto exp_p = [&] { exp_p_frags<MASKED, QN>(s, ls, scale_log2, kw0, q0, g, t4); };
        auto ds_of_p = [&] { ds_of_p_frags<QN>(dp, s, ds, t4); };
        uint32_t pa[BM / 16][4], da[BM / 16][4]; // P^T, dS^T as A fragments (16 queries each)
        if (SPLIT) {                             // P^T while the tensor cores do dP^T
            wgmma_wait<1>();
            fence_regs(s);
            exp_p();
        }
        if (SPLIT == 2) { // dV += P^T dO issued now, under dS's computation
            pack_a_frags<BM / 16>(s, pa);
            wgmma_fence();
            fence_regs(dv);
            wgmma_rs_tile<NA, BM / 16, BM>(dv, pa, do_desc);
            wgmma_commit();
            wgmma_wait<1>(); // dP^T landed
        } else {
            wgmma_wait<0>();
        }
        fence_regs(s);
        fence_regs(dp);
        if (!SPLIT) exp_p();
        ds_of_p();
#pragma unroll
        for (int kq = 0; kq < BM / 16; kq++)
#pragma unroll
            for (int r = 0; r < 4; r++) {
                if (SPLIT != 2) pa[kq][r] = pack_bf16(s[8 * kq + 2 * r], s[8 * kq + 2 * r + 1]);
                da[kq][r] = pack_bf16(dp[8 * kq + 2 * r], dp[8 * kq + 2 * r + 1]);
            }
        store_ds_trans<BM / 16>(ds_addr, da, warp, lane); // dS (queries x keys)
        if (SPLIT == 2) {                                 // dK += dS^T Q issued before the barrier
            wgmma_fence();
            fence_regs(dk);
            wgmma_rs_tile<NA, BM / 16, BM>(dk, da, q_desc);
            wgmma_commit();
        }
        fence_proxy_async();
        // The next tile's loads go into stage st ^ 1 once the last tile's dQ
        // rows have left it: waited for here rather than at the top of the
        // loop, the copy engine's reads of them had the products and the
        // softmax of this tile to finish (measured faster, most at head
        // size 128)
        if (lane == 0) bulk_wait_read();
        __syncthreads(); // dS complete (all four warps' keys); stage st ^ 1 free
        if (NST > 2) {   // tile it + 2 into the stage of tile it - 1
            if (it + 2 < n_it) load_q_tile(tile_of(it + 2), (it + 2) % NST, false);
            cp_async_commit();
        } else if (it + 1 < n_it) {
            load_q_tile(tile_of(it + 1), st ^ 1, false);
            cp_async_commit();
        }

        // dV += P^T dO, dK += dS^T Q per 64 head dims (k steps of 16 queries
        // = 2048 bytes of an atom of dO, Q); then dQ_tile = dS K per 64 head
        // dims (k steps of 16 keys), added to dq_acc
        wgmma_fence();
        if (SPLIT != 2) {
            fence_regs(dv);
            fence_regs(dk);
#pragma unroll
            for (int a = 0; a < NA; a++)
#pragma unroll
                for (int kq = 0; kq < BM / 16; kq++) {
                    wgmma_m64n64k16_rs(*reinterpret_cast<float(*)[32]>(dv + 32 * a), pa[kq],
                                       do_desc.at(a * BM * 128 + 2048 * kq));
                    wgmma_m64n64k16_rs(*reinterpret_cast<float(*)[32]>(dk + 32 * a), da[kq],
                                       q_desc.at(a * BM * 128 + 2048 * kq));
                }
        }
        // dQ staging: this stage's Q and dO tiles, [HS / 64 atoms][BM rows][64]
        float *sdq = reinterpret_cast<float *>(sQdO + st * 2 * BM * HS);
#pragma unroll
        for (int a = 0; a < NA; a++) {
            float dq[32];
            if (a > 0) wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BN / 16; kk++)
                wgmma_m64n64k16_ss<1>(dq, ds_desc.at(32 * kk), k_desc.at(a * BN * 128 + 2048 * kk),
                                      kk > 0);
            wgmma_commit();
            wgmma_wait<0>();
            if (a == 0) { // this wait completed them
                fence_regs(dv);
                fence_regs(dk);
            }
            fence_regs(dq);

            stage_dq_frags(sdq + a * BM * 64, dq, warp, lane); // head dims 64a..
        }
        // the warp's 16 rows (4 KB an atom, contiguous in dq_acc) to the copy engine
        fence_proxy_async();
        __syncwarp();
        const int rows = min(16, T - (q0 + 16 * warp));
        unsigned *turn = DET ? dq_turn_counter(dq_order, bh, T, q0, warp) : nullptr;
        if (DET && lane == 0) turn_wait(turn, (unsigned)(k0 / BN));
        if (lane == 0 && rows > 0) {
#pragma unroll
            for (int a = 0; a < NA; a++)
                bulk_reduce_add_f32(dq_acc + (((size_t)bh * NA + a) * T + q0 + 16 * warp) * 64,
                                    smem_u32(sdq + (a * BM + 16 * warp) * 64),
                                    (uint32_t)rows * 64 * sizeof(float));
            bulk_commit();
        }
        if (DET && lane == 0) {
            bulk_wait_done();
            turn_pass(turn);
        }
    };
    walk_query_tiles<DET>(n_it, tile_step);
    if (lane == 0) bulk_wait_read(); // shared memory stays until the last add has read it

    store_warp_dkv<NO>(dk, dv, dqkv, blk, T, k0, warp, lane, scale);
#else
    __trap(); // built without sm_90a code: attention_wgmma_backward never launches it
#endif
}

} // namespace
#endif
