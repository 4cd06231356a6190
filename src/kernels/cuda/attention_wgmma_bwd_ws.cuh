/* The wgmma family's production backward main kernel, warp-specialized
 * (attn_bwd_ws_kernel), head sizes 64 and 128: a producer warpgroup that
 * loads and reduces dQ, two consumer warpgroups that compute. Its shape and
 * shared-memory layout (WsBwdCfg) are attention_tile_shapes.cuh's, its
 * schedule attention_block_order.h's (read through
 * attention_tile_scheduler.cuh); attention_wgmma_launch.cuh launches it. */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_WGMMA_BWD_WS_CUH
#define GPT2_KERNELS_CUDA_ATTENTION_WGMMA_BWD_WS_CUH

#include <cuda.h> // CUtensorMap
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/cuda/attention_softmax.cuh"
#include "kernels/cuda/attention_tile_scheduler.cuh"
#include "kernels/cuda/attention_tile_shapes.cuh"
#include "kernels/cuda/attention_tiles.cuh"
#include "kernels/cuda/attention_wgmma_epilogue.cuh"
#include "kernels/cuda/attention_wgmma_tiles.cuh"
#include "kernels/cuda/dependent_launch.cuh" // launch_dependents
#include "kernels/cuda/hopper.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace {

using namespace attention_tiles;

// ---------------------------------------------------------------------------
// Backward main kernel, warp-specialized (FlashAttention-3's structure, read
// from its hopper/ sources; docs/attention.md), head sizes 64 and 128.
//
// A block walks key blocks of 128 keys of one (batch, head) each (WsWork,
// attention_block_order.h: one block per SM, over pairs of key blocks whose
// tiles add up alike, and a tail of single ones; the block's threads write
// its list into its row of the schedule's table at the start, in shared
// memory where it fits, and every role reads it there), and
// for each the query tiles of BM rows (128 at head size 64, 64 at 128:
// WsBwdCfg) from the diagonal to T (DET: from T down), with three
// warpgroups:
// - warpgroup 0 gives up its registers (setmaxnreg) to the other two. Its
//   warp 0 loads each key block's K and V (once the last key block's
//   products are done with them) and each tile's Q and dO by TMA into two
//   stages, each with a "full" mbarrier (the copy landed) and an "empty"
//   one (every consumer warp done with it). Its warp 1 adds each tile's
//   dQ into dq_acc: one bulk reduction
//   (cp.reduce.async.bulk) per consumer warpgroup and tile, from that
//   warpgroup's fp32 slab, handed over and back through named barriers, so
//   that the products never wait for the reduction, only for the slab; or,
//   the first contribution to a 64-row slice, one bulk store (nothing
//   zeroes dq_acc before).
// - warpgroups 1 and 2 each own 64 of the keys and do what the one-warpgroup
//   kernel above does for them: S^T = K Q^T and dP^T = V dO^T (keys as the
//   wgmma M, queries as N = BM), P^T and dS^T in registers, dV += P^T dO
//   and dK += dS^T Q with them as register A operands. dS goes to shared
//   memory (stmatrix .trans, double buffered by tile), and after one barrier
//   of the two warpgroups per tile, warpgroup w computes its slab of the
//   tile's dQ over all 128 keys (query rows 64w.. at head size 64, head
//   dims 64w.. at 128): each warpgroup a disjoint slice of the output, so
//   the two never add partial sums. The consumer threads load the row
//   statistics (lse, D) themselves, one value a thread a tile, a tile
//   ahead: written by the producer warp and published by the mbarrier,
//   they measured faster at T = 4096, but racecheck does not follow that
//   hand-over of plain stores (docs/attention.md).
// Per tile the products are issued back to back and waited for one behind
// (wgmma.wait_group 1), so that the tensor cores run while a warpgroup does
// the softmax of S, the dS, and hands its dQ slab over.
// At the end of a key block each consumer warpgroup stages its dK and dV as
// two 64 x 64 boxes in shared memory of their own, and one of its threads
// stores them with TMA: the warps go on to the next key block while the copy
// engine writes the rows out (head size 64; at 128, below, the warps store
// them from registers). FP8 (head size 64, T a multiple of 64): each warp
// casts its staged rows into dqkv's FP8 copies instead (fp8, whose rows
// are the B * T = fp8_rows tokens; cast_warp_dkv), and dqkv's k and v parts
// are not written; the casts' stats go into fp8.stats from each consumer
// warp at the end.
// The dq_acc layout is dq_wgmma_index's: a slab (64 rows of one 64-dim
// atom) is one contiguous 16 KB block. DET (dq_order): warp 1 adds a 64-row
// slice in the order of the key blocks, as the one-warpgroup kernel's warps
// do, key block 0 storing.

template <class W, bool DET, bool FP8 = false>
static __global__ void __launch_bounds__(W::NTH, 1)
    attn_bwd_ws_kernel(bf16 *__restrict__ dqkv, float *__restrict__ dq_acc,
                       const bf16 *__restrict__ dout, const bf16 *__restrict__ qkv,
                       const float *__restrict__ lse, const float *__restrict__ dsum, int T, int NH,
                       float scale, float scale_log2, unsigned *__restrict__ dq_counters,
                       const WsWork wk, int *ws_table, const __grid_constant__ CUtensorMap qkv_map,
                       const __grid_constant__ CUtensorMap dout_map,
                       const __grid_constant__ CUtensorMap dqkv_map, const AttnFp8Out fp8,
                       int fp8_rows) {
#ifdef ATTN_WGMMA_DEVICE
    static_assert(!FP8 || W::BOXES, "FP8: the casts read the staged boxes (head size 64)");
    constexpr int BM = W::BM, BN = W::BN, HS = W::HS, NA = W::NA, QN = BM / 8;
    // a tile's 64-row dQ slices (each with its counters) and the slab of each
    constexpr int SLICES = BM / 64;
    extern __shared__ __align__(1024) unsigned char ws_smem[];
    unsigned char *sm = ws_smem;
    if (smem_u32(sm) & 1023) __trap(); // W::SMEM has no slack to align it
    bf16 *sK = reinterpret_cast<bf16 *>(sm + W::K), *sV = reinterpret_cast<bf16 *>(sm + W::V);
    auto sQ = [&](int st) { return reinterpret_cast<bf16 *>(sm + W::Q + st * W::TILE); };
    auto sdO = [&](int st) { return reinterpret_cast<bf16 *>(sm + W::DO + st * W::TILE); };
    float *sL = reinterpret_cast<float *>(sm + W::L), *sD = reinterpret_cast<float *>(sm + W::D);
    const uint32_t bars = smem_u32(sm + W::BARS), kv_full = bars, kv_empty = bars + 8;
    auto q_full = [&](int st) { return bars + 16 + 8 * st; };
    auto q_empty = [&](int st) { return bars + 32 + 8 * st; };
    auto do_full = [&](int st) { return bars + 48 + 8 * st; };
    auto do_empty = [&](int st) { return bars + 64 + 8 * st; };

    const int tid = threadIdx.x, lane = tid & 31;
    const int wg = __shfl_sync(0xffffffffu, tid >> 7, 0); // warp-uniform, as wgmma wants
    const int n_qt = (T + BM - 1) / BM;
    // The block's row of the table: in shared memory where it fits (faster
    // than the same row in global memory, docs/attention.md), else in the
    // workspace. DET's rows always fit: one key block a block.
    int2 *const table_row = DET || wk.rows <= W::TABLE_ROWS
                                ? reinterpret_cast<int2 *>(sm + W::TABLE)
                                : reinterpret_cast<int2 *>(ws_table) + (size_t)blockIdx.x * wk.rows;
    auto item = [&](int ic, WsItem &x) { return ws_item<W>(table_row, ic, T, x); };
    // the query tile of an item's step it (of the walk from its key block k0)
    auto tile_of = [&](int k0, int it) { return DET ? n_qt - 1 - it : k0 / BM + it; };

    if (tid == 0) {
        mbar_init(kv_full, 1);
        mbar_init(kv_empty, 8); // one arrival per consumer warp
        for (int st = 0; st < 2; st++) {
            mbar_init(q_full(st), 1);
            mbar_init(do_full(st), 1);
            mbar_init(q_empty(st), 8);
            mbar_init(do_empty(st), 8);
        }
        mbar_init_fence();
    }
    launch_dependents(); // the dQ conversion after it waits for its end
    ws_table_write(wk, table_row, (T + BN - 1) / BN);
    __syncthreads(); // the barriers initialised and the table written before anyone uses them
    // Launched by launch_dependent: the pass before (D, the dQ counters
    // zeroed) may still run. The loads of K, V, Q and dO go first; every
    // other role waits for its end here.
    if (tid >= 32) grid_dependency_wait();

    // Every role walks the items alike and counts their tiles (gt: the
    // block's tiles before the item) for the stages' parities, and the
    // items with tiles (kc) for K and V's.
    if (wg == 0) {
        setmaxnreg_dec<24>();
        const int warp = tid >> 5;
        if (warp == 0) { // the loads: each tile's Q and dO; an item's K, V after its first
            WsItem x;
            for (int ic = 0, gt = 0, kc = 0; item(ic, x); ic++) {
                if (!x.n_it) continue;
                const int b = x.bh / NH, h = x.bh - b * NH;
                for (int it = 0; it < x.n_it; it++) {
                    const int gi = gt + it, st = gi & 1, q0 = tile_of(x.k0, it) * BM;
                    if (gi >= 2) {
                        mbar_wait(q_empty(st), ((gi >> 1) - 1) & 1);
                        mbar_wait(do_empty(st), ((gi >> 1) - 1) & 1);
                    }
                    if (lane == 0) {
                        mbar_arrive_expect_tx(q_full(st), W::TILE);
                        tma_tile<BM, NA>(sQ(st), &qkv_map, h, q0, b, q_full(st));
                        mbar_arrive_expect_tx(do_full(st), W::TILE);
                        tma_tile<BM, NA>(sdO(st), &dout_map, h, q0, b, do_full(st));
                    }
                    if (it == 0) { // once the last item's products are done with them
                        if (kc > 0) mbar_wait(kv_empty, (kc - 1) & 1);
                        if (lane == 0) {
                            mbar_arrive_expect_tx(kv_full, 2 * W::KV_TILE);
                            tma_tile<BN, NA>(sK, &qkv_map, NH + h, x.k0, b, kv_full);
                            tma_tile<BN, NA>(sV, &qkv_map, 2 * NH + h, x.k0, b, kv_full);
                        }
                    }
                }
                gt += x.n_it;
                kc++;
            }
        } else if (warp == 1) { // the dQ stores and adds
            // The first contribution to a 64-row slice of dq_acc is stored
            // (no pass zeroes it), the others added once it is: the block
            // whose claim on the slice's counter 0 comes first stores and
            // then raises its counter 1, for which the others wait (on the
            // tile after, mostly, it has long been raised). DET: key block 0
            // stores, and the turns on counter 0 order the adds. At head
            // size 128 both slabs are of the one slice (its two head-dim
            // atoms): one claim, one turn for both.
            WsItem x;
            for (int ic = 0, gt = 0; item(ic, x); ic++) {
                for (int it = 0; it < x.n_it; it++, gt++) {
                    if (gt > 0) { // the last tile's slabs read out
                        if (lane == 0) bulk_wait_read();
                        __syncwarp();
                    }
                    for (int w = 0; w < 2; w++) named_bar_arrive(W::BAR_DQ_EMPTY + w, 160);
                    const int q0 = tile_of(x.k0, it) * BM;
                    unsigned claim[SLICES]; // the claims, their latency under the slabs' wait
#pragma unroll
                    for (int sl = 0; sl < SLICES; sl++) claim[sl] = 1;
                    if (!DET && lane == 0)
#pragma unroll
                        for (int sl = 0; sl < SLICES; sl++)
                            if (q0 + 64 * sl < T)
                                claim[sl] = atomicAdd(
                                    dq_turn_counter(dq_counters, x.bh, T, q0 + 64 * sl, 0), 1u);
                    for (int w = 0; w < 2; w++) {
                        named_bar_sync(W::BAR_DQ_FULL + w, 160);
                        const int sl = SLICES == 2 ? w : 0, r0 = q0 + 64 * sl,
                                  rows = min(64, T - r0);
                        // the slab's first and last of its slice
                        const bool opens = SLICES == 2 || w == 0, closes = SLICES == 2 || w == 1;
                        if (lane == 0 && rows > 0) {
                            unsigned *cnt = dq_turn_counter(dq_counters, x.bh, T, r0, 0);
                            float *dst =
                                dq_acc + (((size_t)x.bh * NA + w * W::DQ_ATOM_STEP) * T + r0) * 64;
                            const uint32_t src = smem_u32(sm + W::DQ + w * W::SLAB),
                                           bytes = (uint32_t)rows * 64 * sizeof(float);
                            const bool first = DET ? x.k0 == 0 : claim[sl] == 0;
                            if (opens) {
                                if (DET)
                                    turn_wait(cnt, (unsigned)(x.k0 / BN));
                                else if (!first)
                                    turn_wait(cnt + 1, 1);
                            }
                            if (first)
                                bulk_store_f32(dst, src, bytes);
                            else
                                bulk_reduce_add_f32(dst, src, bytes);
                            bulk_commit();
                            if ((DET || first) && closes) {
                                bulk_wait_done();
                                turn_pass(DET ? cnt : cnt + 1);
                            }
                        }
                    }
                }
            }
            if (lane == 0) bulk_wait_read(); // shared memory stays until the last add has read it
        }
        return;
    }

    setmaxnreg_inc<240>();
    const int w = wg - 1, warp = __shfl_sync(0xffffffffu, (tid >> 5) & 3, 0);
    const int g = lane >> 2, t4 = lane & 3;
    // this warpgroup's 64 keys of K and V (A operands, K-major); K's keys x
    // the warpgroup's dQ head dims (the B operand of dQ, MN-major)
    const Sw128 k_base(smem_u32(sK + 64 * w * 64)), v_base(smem_u32(sV + 64 * w * 64)),
        kt_base(smem_u32(sK + w * W::DQ_ATOM_STEP * BN * 64));
    float *sdq = reinterpret_cast<float *>(sm + W::DQ + w * W::SLAB);
    // The row statistics of a tile (zeros past T): consumer thread c < 2 BM
    // loads lse (c < BM) or D of query row c % BM one tile ahead (the next
    // item's first where the item ends), and stores it into that tile's
    // stage before the dS barrier (after which the stage's last readers,
    // the tile before, are done): one load a thread a tile, its latency
    // under a tile's work.
    const int c = tid - 128;
    constexpr bool ALL_STAT = 2 * BM >= 256; // every consumer thread has one
    const bool has_stat = ALL_STAT || c < 2 * BM;
    float *stat_s = (c < BM ? sL : sD) + (c & (BM - 1));
    // the address of thread c's statistic of item x's step it, or NULL past T
    auto stat_at = [&](const WsItem &x, int it) -> const float * {
        const int t = tile_of(x.k0, it) * BM + (c & (BM - 1));
        return has_stat && t < T ? (c < BM ? lse : dsum) + (size_t)x.bh * T + t : nullptr;
    };
    // FP8: the scale of dqkv's casts, and what they saw
    [[maybe_unused]] const float fp8_scale = FP8 ? *fp8.scale : 0.f;
    [[maybe_unused]] fp8_thread_stats seen = {0, 0, 0};
    WsItem x;
    item(0, x); // every block has a unit, and a unit's first item has tiles
    {
        const float *p = stat_at(x, 0);
        if (has_stat) *stat_s = p ? *p : 0.f;
    }
    named_bar_sync(W::BAR_DS, 256);

    for (int ic = 0, gt = 0, kc = 0;;) {
        const int k0 = x.k0, n_it = x.n_it;
        const int kw0 = k0 + 64 * w + 16 * warp; // this warp's first key in the sequence
        int jc = ic + 1;                         // the next item with tiles
        WsItem y;
        bool more;
        while ((more = item(jc, y)) && !y.n_it) jc++;
        const float *next_stat = more ? stat_at(y, 0) : nullptr;
        float dk[NA * 32], dv[NA * 32];
#pragma unroll
        for (int i = 0; i < NA * 32; i++) dk[i] = dv[i] = 0.f;
        mbar_wait(kv_full, kc & 1);

        // One query tile; MASKED: one on the diagonal (keys above queries).
        auto tile_step = [&](const int it, auto masked) {
            constexpr bool MASKED = decltype(masked)::value;
            const int gi = gt + it, st = gi & 1, ph = (gi >> 1) & 1, q0 = tile_of(k0, it) * BM;
            const Sw128 q_desc(smem_u32(sQ(st))), do_desc(smem_u32(sdO(st)));
            const uint32_t ds_addr = smem_u32(sm + W::DS + st * BM * BN * 2);
            const Sw128 ds_desc(ds_addr);
            // K's and V's descriptors from their bases afresh each tile:
            // hoisted out of the walk, the 24 of head size 128 took
            // registers that the accumulators need, ptxas spilled them, and
            // the backward ran slower (docs/attention.md)
            Sw128 k_desc = k_base, v_desc = v_base, kt_desc = kt_base;
            asm volatile("" : "+r"(k_desc.lo), "+r"(v_desc.lo), "+r"(kt_desc.lo));
            const float *ls = sL + st * BM, *ds = sD + st * BM;
            const float *stat_p = it + 1 < n_it ? stat_at(x, it + 1) : next_stat;
            const float stat_next = stat_p ? *stat_p : 0.f;
            // this warpgroup's dQ slab = its query rows of dS (all 128 keys:
            // two atoms) x its head dims of K, issued
            auto issue_dq = [&](float(&dq)[32]) {
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BN / 16; kk++)
                    wgmma_m64n64k16_ss<1>(
                        dq,
                        ds_desc.at((kk >> 2) * BM * 128 + w * W::DQ_ROW_STEP * 128 + 32 * (kk & 3)),
                        kt_desc.at(2048 * kk), kk > 0);
                wgmma_commit();
            };
            // dQ to the slab once warp 1 has read the last one out
            auto hand_dq = [&](const float(&dq)[32]) {
                named_bar_sync(W::BAR_DQ_EMPTY + w, 160);
                stage_dq_frags(sdq, dq, warp, lane);
                fence_proxy_async();
                named_bar_arrive(W::BAR_DQ_FULL + w, 160);
            };
            if constexpr (MASKED && BN / BM == 2) {
                // At head size 128 all of the second warpgroup's keys are
                // above the first tile's queries: its P^T and dS^T are
                // zeros, so it stores the zero dS and does its dQ only
                if (k0 + 64 * w >= q0 + BM) {
                    const uint32_t zero[BM / 16][4] = {};
                    store_ds_trans<BM / 16>(ds_addr + w * BM * 128, zero, warp, lane);
                    if (has_stat) stat_s[(st ^ 1) * BM] = stat_next;
                    fence_proxy_async();
                    named_bar_sync_unaligned(W::BAR_DS, 256);
                    float dq[32];
                    issue_dq(dq);
                    wgmma_wait<0>();
                    fence_regs(dq);
                    if (lane == 0) {
                        mbar_arrive(do_empty(st));
                        if (it + 1 == n_it) mbar_arrive(kv_empty);
                    }
                    hand_dq(dq);
                    if (lane == 0) mbar_arrive(q_empty(st));
                    return;
                }
            }

            // S^T = K Q^T, dP^T = V dO^T (64 keys x BM queries each), issued
            float s[QN * 4], dp[QN * 4];
            mbar_wait(q_full(st), ph);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < HS / 16; kk++)
                if constexpr (BM == 128)
                    wgmma_m64n128k16_ss(s, k_desc.at(kstep_off<BN>(kk)),
                                        q_desc.at(kstep_off<BM>(kk)), kk > 0);
                else
                    wgmma_m64n64k16_ss<0>(s, k_desc.at(kstep_off<BN>(kk)),
                                          q_desc.at(kstep_off<BM>(kk)), kk > 0);
            wgmma_commit();
            mbar_wait(do_full(st), ph);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < HS / 16; kk++)
                if constexpr (BM == 128)
                    wgmma_m64n128k16_ss(dp, v_desc.at(kstep_off<BN>(kk)),
                                        do_desc.at(kstep_off<BM>(kk)), kk > 0);
                else
                    wgmma_m64n64k16_ss<0>(dp, v_desc.at(kstep_off<BN>(kk)),
                                          do_desc.at(kstep_off<BM>(kk)), kk > 0);
            wgmma_commit();
            // s[4n + e], dp[4n + e]: key kw0 + g + 8 (e >> 1), query q0 + 8n + 2 t4 + (e & 1).
            // P^T = exp(S^T - lse) while the tensor cores do dP^T
            wgmma_wait<1>();
            fence_regs(s);
            exp_p_frags<MASKED, QN>(s, ls, scale_log2, kw0, q0, g, t4);
            wgmma_wait<0>();
            fence_regs(dp);
            ds_of_p_frags<QN>(dp, s, ds, t4);        // dS^T = P^T (dP^T - D)
            uint32_t pa[BM / 16][4], da[BM / 16][4]; // P^T, dS^T as A fragments (16 queries each)
            pack_a_frags<BM / 16>(s, pa);
            pack_a_frags<BM / 16>(dp, da);
            // dS (queries x keys) into this warpgroup's atom of the stage's dS
            store_ds_trans<BM / 16>(ds_addr + w * BM * 128, da, warp, lane);
            // dV += P^T dO, issued
            wgmma_fence();
            fence_regs(dv);
            wgmma_rs_tile<NA, BM / 16, BM>(dv, pa, do_desc);
            wgmma_commit();
            if (has_stat) stat_s[(st ^ 1) * BM] = stat_next;
            fence_proxy_async();
            // both warpgroups' dS and the next tile's statistics stored (in
            // a key block's first tile at head size 128 the idle warpgroup
            // meets this barrier at its own instruction, above: bar.sync is
            // aligned, barrier.sync is not)
            named_bar_sync_unaligned(W::BAR_DS, 256);

            float dq[32];
            issue_dq(dq);
            wgmma_wait<1>(); // dV done: dO and D read
            fence_regs(dv);
            if (lane == 0) mbar_arrive(do_empty(st));
            // dK += dS^T Q, issued
            wgmma_fence();
            fence_regs(dk);
            wgmma_rs_tile<NA, BM / 16, BM>(dk, da, q_desc);
            wgmma_commit();
            wgmma_wait<1>(); // dQ done: the item's last tile is done with K and V
            fence_regs(dq);
            if (it + 1 == n_it && lane == 0) mbar_arrive(kv_empty);
            hand_dq(dq);
            wgmma_wait<0>(); // dK done: Q and lse read
            fence_regs(dk);
            if (lane == 0) mbar_arrive(q_empty(st));
        };
        walk_query_tiles<DET, BN / BM>(n_it, tile_step);
        gt += n_it;
        kc++;
        const BwdBlock blk = bwd_block_for<HS>(x.bh, k0, qkv, dout, lse, dsum, T, NH);
        if constexpr (FP8) {
            // each warp casts its own rows of the boxes: no copy engine, no
            // barrier (the last item's casts read these rows: this warp's)
            unsigned char *boxes = sm + W::DKV + 2 * w * W::BOX;
            if (k0 + 64 * w < T) { // T % 64 == 0: all 64 keys or none
                __syncwarp();
                stage_warp_dkv(dk, dv, boxes, warp, lane, scale);
                __syncwarp();
                cast_warp_dkv(boxes, warp, lane, fp8, fp8_scale, fp8_rows, NH * HS, blk.b * T + kw0,
                              (NH + blk.h) * HS, seen);
            }
        } else if constexpr (W::BOXES) {
            // dK and dV go out as the warpgroup's two boxes, stored by its
            // first thread with TMA once every warp has staged its rows (and
            // the last item's boxes have been read out)
            const bool leader = (tid & 127) == 0;
            unsigned char *boxes = sm + W::DKV + 2 * w * W::BOX;
            if (leader) bulk_wait_read();
            named_bar_sync(W::BAR_WG + w, 128);
            if (k0 + 64 * w < T) {
                stage_warp_dkv(dk, dv, boxes, warp, lane, scale);
                fence_proxy_async();
                named_bar_sync(W::BAR_WG + w, 128);
                if (leader) {
                    tma_store_4d(&dqkv_map, 0, NH + blk.h, k0 + 64 * w, blk.b, smem_u32(boxes));
                    tma_store_4d(&dqkv_map, 0, 2 * NH + blk.h, k0 + 64 * w, blk.b,
                                 smem_u32(boxes + W::BOX));
                    bulk_commit();
                }
            }
        } else {
            store_warp_dkv<HS / 8>(dk, dv, dqkv, blk, T, k0 + 64 * w, warp, lane, scale);
        }
        if (!more) break;
        ic = jc;
        item(ic, x);
    }
    if constexpr (FP8) {
        if (fp8.stats) fp8_warp_stats(seen, fp8.stats);
    } else if (W::BOXES && (tid & 127) == 0) {
        bulk_wait_done(); // the last boxes stored before the end
    }
#else
    __trap(); // built without sm_90a code: attention_wgmma_backward never launches it
#endif
}

} // namespace
#endif
