/* The wgmma family's forward (attn_fwd_wgmma_kernel), head size 64 or 128:
 * its shared-memory layout and main loop, one template for both walks (the
 * software-pipelined walk over TMA stages, with a producer warpgroup and
 * ping-pong at head size 128, and the unpipelined one with cp.async loads
 * where no tensor map can be made), with the online softmax and the causal
 * mask of each key tile and the lse and O stores at the end of an item
 * (with, at head size 64, O's FP8 copy for an FP8 attn.c_proj).
 * attention_wgmma.cu has the family's design; attention_tile_shapes.cuh the
 * shapes; attention_wgmma_launch.cuh its launcher. */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_WGMMA_FWD_CUH
#define GPT2_KERNELS_CUDA_ATTENTION_WGMMA_FWD_CUH

#include <cuda.h> // CUtensorMap
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/cuda/attention_families.h" // AttnFp8Out
#include "kernels/cuda/attention_tile_scheduler.cuh"
#include "kernels/cuda/attention_tiles.cuh"
#include "kernels/cuda/attention_wgmma_tiles.cuh"
#include "kernels/cuda/fp8_convert.cuh"
#include "kernels/cuda/hopper.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace {

using namespace attention_tiles;

// STAGES: 0 = K, V double-buffered by cp.async, the block synchronising
// each tile; 2 to 4 = that many K, V buffers filled by TMA, each with a
// "full" mbarrier (the copy landed) and an "empty" one (every computing
// warp is done with it), thread 0 (of the producer warpgroup, where there
// is one) refilling a buffer once it is empty. TABLE_ROWS: the items of a
// persistent block's schedule that its shared memory holds (0: one item a
// block, no table).
template <int HS, int NWG, int BN, int STAGES, int TABLE_ROWS = 0> struct WgmmaFwdCfg {
    // NTH: the threads that compute (a producer warpgroup comes on top)
    static constexpr int BM = 64 * NWG, NTH = 128 * NWG, NBUF = STAGES ? STAGES : 2;
    // Q, then NBUF x (K, V), then the mbarriers (full, empty, Q's full and
    // empty), then the table; +1024 to align the base for the swizzle
    static constexpr size_t SMEM = (size_t)(BM + 2 * NBUF * BN) * HS * sizeof(bf16) +
                                   (2 * NBUF + 2) * 8 + TABLE_ROWS * 8 + 1024;
};
// A persistent forward's table: rows of (bh, query tile) in shared memory.
// 192 fit beside WgmmaFwd128's 3 stages in the 227 KB an SM gives a block;
// a schedule with more items a block runs one item a block instead.
constexpr int FWD_TABLE_ROWS = 192;
template <class Shape>
using FwdCfgOf = WgmmaFwdCfg<Shape::HS, Shape::WARPGROUPS, Shape::KEYS, Shape::TMA_STAGES,
                             Shape::PERSISTENT ? FWD_TABLE_ROWS : 0>;

// A block's threads: the computing warpgroups and, with PRODUCER, the one
// that loads for them
template <class Shape> constexpr int fwd_block_threads() {
    return FwdCfgOf<Shape>::NTH + (Shape::PRODUCER ? 128 : 0);
}

// Shape: WgmmaFwd64's members (below). qkv_map (TMA_STAGES > 0): qkv as a
// 4-D tensor (head dim, 3 x NH, T, B) with 64 x 1 x 64 x 1 boxes, 128-byte
// swizzled (make_head_map). wk: the blocks' items (ws_schedule's, over
// query tiles; PERSISTENT: several a block, else one). FP8: out is also
// cast into fp8 (fp8_cast_cuda's bytes, transposed copy and stats, of the
// B * T = rows rows of out), from the bf16 values stored; head size 64,
// one item a block, T a multiple of 64 (every row of an active warpgroup
// is then below T).
template <class Shape, bool FP8 = false>
static __global__ void __launch_bounds__(fwd_block_threads<Shape>(), Shape::MIN_BLOCKS)
    attn_fwd_wgmma_kernel(bf16 *__restrict__ out, float *__restrict__ lse,
                          const bf16 *__restrict__ qkv, int T, int NH, float scale_log2,
                          const WsWork wk, const __grid_constant__ CUtensorMap qkv_map,
                          const AttnFp8Out fp8, int rows) {
    // the shape under the body's names (unused where the body is __trap())
    [[maybe_unused]] constexpr int HS = Shape::HS, NWG = Shape::WARPGROUPS, BN = Shape::KEYS,
                                   STAGES = Shape::TMA_STAGES;
    [[maybe_unused]] constexpr bool LAZY = Shape::LAZY_RESCALE, PIPE = Shape::PIPELINED,
                                    PROD = Shape::PRODUCER, PING = Shape::PINGPONG,
                                    PERSIST = Shape::PERSISTENT, PREFETCH_Q = Shape::PREFETCH_Q;
#ifdef ATTN_WGMMA_DEVICE
    static_assert(BN == 64 || BN == 128, "key tiles of whole 64-row atoms");
    static_assert(!PROD || (PIPE && STAGES > 0), "the producer serves the pipelined TMA walk");
    // the warpgroups take turns per tile: they must walk as many tiles
    static_assert(!PING || (PROD && Shape::WARPGROUPS == 2 && BN == 64 * Shape::WARPGROUPS),
                  "ping-pong: two warpgroups, key tiles as tall as the block");
    static_assert(!PERSIST || PROD, "the producer walks a persistent block's items ahead");
    static_assert(!PREFETCH_Q || PERSIST, "the next item's Q: persistent blocks have one");
    // the cast stages a warp's 16 rows in its 2 KB of sQ: one atom, one item
    static_assert(!FP8 || (HS == 64 && !PERSIST), "the FP8 output: head size 64, one item a block");
    typedef FwdCfgOf<Shape> Cfg;
    constexpr int BM = Cfg::BM, NTH = Cfg::NTH, NS = BN / 8, NO = HS / 8, NA = HS / 64;
    constexpr int NBUF = Cfg::NBUF;
    extern __shared__ unsigned char smem_raw[];
    bf16 *sQ = reinterpret_cast<bf16 *>(smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023));
    bf16 *sK = sQ + BM * HS; // [NBUF][BN * HS]
    bf16 *sV = sK + NBUF * BN * HS;
    // mbarriers (TMA): full[NBUF], empty[NBUF], then Q's full and empty
    const uint32_t bar0 = smem_u32(sV + NBUF * BN * HS);
    auto full_bar = [&](int i) { return bar0 + 8 * i; };
    auto empty_bar = [&](int i) { return bar0 + 8 * (NBUF + i); };
    const uint32_t q_bar = bar0 + 16 * NBUF, q_empty = q_bar + 8;
    int2 *const table = reinterpret_cast<int2 *>(
        reinterpret_cast<unsigned char *>(sV + NBUF * BN * HS) + (2 * NBUF + 2) * 8);

    // PIPE: wg, warp broadcast from lane 0: the compiler then knows them
    // warp-uniform, and keeps what derives from them (descriptors, the walk's
    // counters) in uniform registers, as wgmma takes its descriptors (the
    // unpipelined walk at head size 128 had its wgmma serialized that way)
    // PROD: warpgroup 0 loads; tid, wg and warp count the computing ones
    const int tid = (int)threadIdx.x - (PROD ? 128 : 0), lane = tid & 31;
    const int wg = PIPE ? __shfl_sync(0xffffffffu, tid >> 7, 0) : tid >> 7;
    const int warp = PIPE ? __shfl_sync(0xffffffffu, (tid >> 5) & 3, 0) : (tid >> 5) & 3;
    const int n_qt = (T + BM - 1) / BM;
    const int C = NH * HS;
    const size_t ld = (size_t)3 * C;
    // The block's items: persistent, its row of the table, written below
    // (one load an item: computed, they spilled the producer's registers in
    // the backward); else its one item, computed here before the roles part.
    int bh0 = 0, qt0 = 0;
    if constexpr (!PERSIST) fwd_item_at(wk, 0, n_qt, bh0, qt0);
    auto item = [&](int ic, int &bh, int &qt) {
        if constexpr (PERSIST) {
            const int2 e = table[ic]; // (bh, key block: fwd_item_at's)
            bh = e.x, qt = e.y < 0 ? -1 : n_qt - 1 - e.y;
            return e.x >= 0;
        } else {
            bh = bh0, qt = qt0;
            return ic == 0;
        }
    };
    constexpr int MOST_ITEMS = PERSIST ? FWD_TABLE_ROWS : 1; // bounds the walks for the compiler
    // key tiles up to the causal limit of query tile qt
    auto key_tiles = [&](int qt) { return (min(qt * BM + BM, T) - 1) / BN + 1; };

    // TMA: the K, V tile at key k0 of head h of batch b into buffer t % NBUF
    // (t: the block's tiles before it)
    auto tma_kv = [&](int t, int k0, int h, int b) {
        const int buf = t % NBUF;
        mbar_arrive_expect_tx(full_bar(buf), 2 * BN * HS * sizeof(bf16));
        tma_tile<BN, NA>(sK + buf * BN * HS, &qkv_map, NH + h, k0, b, full_bar(buf));
        tma_tile<BN, NA>(sV + buf * BN * HS, &qkv_map, 2 * NH + h, k0, b, full_bar(buf));
    };
    auto tma_q = [&](int q0, int h, int b) {
        mbar_arrive_expect_tx(q_bar, BM * HS * sizeof(bf16));
        tma_tile<BM, NA>(sQ, &qkv_map, h, q0, b, q_bar);
    };
    if constexpr (STAGES > 0) {
        if (threadIdx.x == 0) {
            for (int i = 0; i < NBUF; i++) {
                mbar_init(full_bar(i), 1);
                mbar_init(empty_bar(i), NTH / 32); // one arrival per warp
            }
            mbar_init(q_bar, 1);
            mbar_init(q_empty, NTH / 32);
            mbar_init_fence();
        }
        if constexpr (PERSIST) ws_table_write(wk, table, n_qt);
        __syncthreads(); // the barriers initialised and the table written
        if constexpr (PROD) {
            // the producer: one thread loads each item's Q once every
            // computing warp is done with the last item's, and refills each
            // K, V buffer once every computing warp is done with it, the
            // next item's tiles under this one's last; its warpgroup's
            // registers go to the others (FlashAttention-3's register
            // reallocation)
            if (threadIdx.x < 128) {
                setmaxnreg_dec<24>();
                if (threadIdx.x == 0) {
                    int bh, qt;
                    for (int ic = 0, t = 0, qc = 0; ic < MOST_ITEMS && item(ic, bh, qt); ic++) {
                        if (qt < 0) continue;
                        const int b = bh / NH, h = bh % NH, n_kt = key_tiles(qt);
                        for (int it = 0; it < n_kt; it++, t++) {
                            if (t >= NBUF) mbar_wait(empty_bar(t % NBUF), (t / NBUF - 1) & 1);
                            tma_kv(t, (n_kt - 1 - it) * BN, h, b);
                            if (it == 0) {
                                if (qc > 0) mbar_wait(q_empty, (qc - 1) & 1);
                                tma_q(qt * BM, h, b);
                                qc++;
                                // the next item's Q into L2, so that its load
                                // (once this one's products are done with Q)
                                // does not wait for memory
                                int nbh, nqt;
                                for (int nc = ic + 1;
                                     PREFETCH_Q && nc < MOST_ITEMS && item(nc, nbh, nqt); nc++)
                                    if (nqt >= 0) {
                                        tma_prefetch_tile<BM, NA>(&qkv_map, nbh % NH, nqt * BM,
                                                                  nbh / NH);
                                        break;
                                    }
                            }
                        }
                    }
                }
                return;
            }
            setmaxnreg_inc<240>();
        }
    }

    const int g = lane >> 2, t4 = lane & 3;
    const Sw128 q_desc(smem_u32(sQ + 64 * wg * 64)); // the group's rows of atom 0
    const Sw128 k_desc0(smem_u32(sK)), v_desc0(smem_u32(sV));
    auto buf_desc = [&](Sw128 d, int t) { // buffer t % NBUF's, from buffer 0's
        d.lo += (unsigned)t % NBUF * (BN * HS * sizeof(bf16) >> 4);
        return d;
    };
    auto k_tile = [&](int t) { return buf_desc(k_desc0, t); };
    auto v_tile = [&](int t) { return buf_desc(v_desc0, t); };
    // PING: the warpgroups issue their products in turns (named barriers
    // 1 + w), so that one's softmax runs under the other's products
    // (FlashAttention-3's ping-pong); warpgroup 0 goes first. Turns come in
    // pairs: a warpgroup past T walks the tiles too, and warpgroup 1 passes
    // every turn, its last taken after the block's last item.
    auto my_turn = [&] {
        if (PING) named_bar_sync(1 + wg, 256);
    };
    auto pass_turn = [&] {
        if (PING) named_bar_arrive(2 - wg, 256);
    };
    if (PING && wg == 0) named_bar_arrive(1, 256);

    // FP8: what this thread's casts saw, and the tensor's scale
    [[maybe_unused]] fp8_thread_stats seen = {0, 0, 0};
    [[maybe_unused]] float fp8_scale = 0.f;
    if constexpr (FP8) fp8_scale = *fp8.scale;
    int bh, qt;
    // gt: the block's key tiles before the item (the buffers' parities); qc: its items
    for (int ic = 0, gt = 0, qc = 0; ic < MOST_ITEMS && item(ic, bh, qt); ic++) {
        if (qt < 0) continue;
        const int b = bh / NH, h = bh % NH, q0 = qt * BM, n_kt = key_tiles(qt);
        const bf16 *qg = qkv + (size_t)b * T * ld + (size_t)h * HS;
        const bf16 *kg = qg + C, *vg = qg + 2 * C;
        if constexpr (STAGES > 0 && !PROD) { // one item a block: gt = 0
            if (threadIdx.x == 0) {
                tma_q(q0, h, b);
                for (int it = 0; it < min(NBUF, n_kt); it++) tma_kv(it, (n_kt - 1 - it) * BN, h, b);
            }
        } else if constexpr (STAGES == 0) {
            load_tile<BM, HS, NTH, true>(sQ, qg + (size_t)q0 * ld, ld, T - q0, tid);
            const int k0 = (n_kt - 1) * BN;
            load_tile<BN, HS, NTH, true>(sK, kg + (size_t)k0 * ld, ld, T - k0, tid);
            load_tile<BN, HS, NTH, true>(sV, vg + (size_t)k0 * ld, ld, T - k0, tid);
            cp_async_commit();
        }

        const int g_row0 = q0 + 64 * wg;      // the warpgroup's first row in the sequence
        const int wrow0 = g_row0 + 16 * warp; // the warp's
        const bool group_active = g_row0 < T;

        float o[NO * 4]; // 32 per 64 head dims: atom a's accumulators are o[32a..32a+31]
        float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
        for (int i = 0; i < NO * 4; i++) o[i] = 0.f;

        // The steps of one key tile, shared by both walks below.
        // S = Q K^T, issued (not waited for): k steps of 16 head dims.
        auto issue_s = [&](float(&s)[NS * 4], Sw128 k_desc) {
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < HS / 16; kk++) {
                const uint64_t da = q_desc.at(kstep_off<BM>(kk)), db = k_desc.at(kstep_off<BN>(kk));
                if constexpr (BN == 64)
                    wgmma_m64n64k16_ss<0>(s, da, db, kk > 0);
                else
                    wgmma_m64n128k16_ss(s, da, db, kk > 0);
            }
            wgmma_commit();
        };
        // Key tile j's mask and online softmax, base 2: s becomes p = 2^(s*scale*log2e - m),
        // m and l move on, alpha is O's factor; returns whether a row max of this thread went up.
        // may_cross = false: the caller knows the tile below every row of the warp.
        auto softmax_tile = [&](float(&s)[NS * 4], int j, float(&alpha)[2], bool may_cross) {
            // s[4n + e]: row wrow0 + g + 8 (e >> 1), key j BN + 8n + 2 t4 + (e & 1)
            if (may_cross && j * BN + BN - 1 > wrow0) { // crosses the diagonal
#pragma unroll
                for (int n = 0; n < NS; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int row = wrow0 + g + ((e >> 1) << 3);
                        const int col = j * BN + n * 8 + 2 * t4 + (e & 1);
                        if (col > row) s[4 * n + e] = -INFINITY;
                    }
            }
            bool grew = false;
#pragma unroll
            for (int r = 0; r < 2; r++) {
                float mx = -INFINITY;
#pragma unroll
                for (int n = 0; n < NS; n++)
                    mx = fmaxf(mx, fmaxf(s[4 * n + 2 * r], s[4 * n + 2 * r + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                const float m_new = fmaxf(m[r], mx * scale_log2);
                const float m_use = m_new == -INFINITY ? 0.f : m_new; // row fully masked so far
                alpha[r] = fast_exp2(m[r] - m_use);
                grew |= m_new > m[r];
                m[r] = m_new;
                float sum = 0.f;
#pragma unroll
                for (int n = 0; n < NS; n++) {
                    const float p0 = fast_exp2(fmaf(s[4 * n + 2 * r], scale_log2, -m_use));
                    const float p1 = fast_exp2(fmaf(s[4 * n + 2 * r + 1], scale_log2, -m_use));
                    s[4 * n + 2 * r] = p0;
                    s[4 * n + 2 * r + 1] = p1;
                    sum += p0 + p1;
                }
                l[r] = l[r] * alpha[r] + sum;
            }
            return grew;
        };
        // alpha = 1 exactly where the max stayed: the warp skips the HS / 2
        // multiplies a thread unless one of its 16 rows went up (LAZY; after
        // the first tiles from the diagonal most tiles raise no row max)
        auto rescale_o = [&](bool grew, const float(&alpha)[2]) {
            if (LAZY && !__any_sync(0xffffffffu, grew)) return;
#pragma unroll
            for (int r = 0; r < 2; r++)
#pragma unroll
                for (int n = 0; n < NO; n++) {
                    o[4 * n + 2 * r] *= alpha[r];
                    o[4 * n + 2 * r + 1] *= alpha[r];
                }
        };
        // P as the A fragments of P V
        auto pack_p = [&](const float(&s)[NS * 4], uint32_t(&pa)[BN / 16][4]) {
            pack_a_frags<BN / 16>(s, pa);
        };
        // O += P V per 64 head dims (atom a of V), issued: k steps of 16 keys =
        // 16 rows of V (2048 bytes)
        auto issue_pv = [&](const uint32_t(&pa)[BN / 16][4], Sw128 v_desc) {
            wgmma_fence();
            fence_regs(o);
            wgmma_rs_tile<NA, BN / 16, BN>(o, pa, v_desc);
            wgmma_commit();
        };
        // the item's Q read by every product of this warp that reads it
        auto q_done = [&] {
            if (PERSIST && lane == 0) mbar_arrive(q_empty);
        };

        if constexpr (PIPE) {
            // Software pipelined (TMA only): S of tile it is issued together
            // with P V of tile it - 1, and the softmax of tile it runs while the
            // tensor cores do that P V. The warp is done with tile u once its
            // P V completed; thread 0 then refills u's buffer with tile u + NBUF.
            auto wait_full = [&](int it) {
                mbar_wait(full_bar((gt + it) % NBUF), ((gt + it) / NBUF) & 1);
            };
            auto release = [&](int u) {
                if (lane == 0) mbar_arrive(empty_bar((gt + u) % NBUF));
                if (!PROD && tid == 0 && u + NBUF < n_kt) { // gt = 0
                    mbar_wait(empty_bar(u % NBUF), (u / NBUF) & 1);
                    tma_kv(u + NBUF, (n_kt - 1 - (u + NBUF)) * BN, h, b);
                }
            };
            // the tiles above this warpgroup's diagonal: a prefix of the walk
            const int it0 = group_active || PING ? max(0, n_kt - 1 - (g_row0 + 63) / BN) : n_kt;
            for (int it = 0; it < it0; it++) {
                wait_full(it);
                release(it);
            }
            if (it0 < n_kt) {
                float s[NS * 4], alpha[2];
                uint32_t pa[BN / 16][4];
                mbar_wait(q_bar, qc & 1);
                wait_full(it0);
                my_turn();
                issue_s(s, k_tile(gt + it0));
                pass_turn();
                wgmma_wait<0>();
                fence_regs(s);
                if (it0 == n_kt - 1) q_done();
                // the warpgroup's diagonal tile first; the later ones are below all its
                // rows (its first row and the tiles are multiples of 64): unmasked
                softmax_tile(s, n_kt - 1 - it0, alpha, true); // O is still 0: no rescale
                pack_p(s, pa);
                for (int it = it0 + 1; it < n_kt; it++) {
                    wait_full(it);
                    my_turn();
                    issue_s(s, k_tile(gt + it));
                    issue_pv(pa, v_tile(gt + it - 1));
                    pass_turn();
                    wgmma_wait<1>(); // S landed; P V of the previous tile still runs
                    fence_regs(s);
                    if (it == n_kt - 1) q_done();
                    const bool grew = softmax_tile(s, n_kt - 1 - it, alpha, false);
                    wgmma_wait<0>();
                    fence_regs(o);
                    release(it - 1);
                    rescale_o(grew, alpha);
                    pack_p(s, pa);
                }
                my_turn();
                issue_pv(pa, v_tile(gt + n_kt - 1));
                pass_turn();
                wgmma_wait<0>();
                fence_regs(o);
                release(n_kt - 1);
            } else {
                q_done();
            }
        } else {
            for (int it = 0; it < n_kt; it++) {
                const int j = n_kt - 1 - it, buf = it % NBUF;
                if constexpr (STAGES > 0) {
                    // thread 0 refills the buffer of the previous tile once all warps
                    // are done with it: the copy runs NBUF - 1 tiles ahead of its use
                    if (tid == 0 && it >= 1 && it - 1 + NBUF < n_kt) {
                        mbar_wait(empty_bar((it - 1) % NBUF), ((it - 1) / NBUF) & 1);
                        tma_kv(it - 1 + NBUF, (n_kt - 1 - (it - 1 + NBUF)) * BN, h, b);
                    }
                    if (it == 0) mbar_wait(q_bar, 0);
                    mbar_wait(full_bar(buf), (it / NBUF) & 1);
                } else {
                    cp_async_wait_all();
                    fence_proxy_async();
                    __syncthreads(); // tile j landed; everyone is done with buffer buf ^ 1
                    if (j > 0) {
                        const int k0 = (j - 1) * BN;
                        load_tile<BN, HS, NTH, true>(sK + (buf ^ 1) * BN * HS, kg + (size_t)k0 * ld,
                                                     ld, T - k0, tid);
                        load_tile<BN, HS, NTH, true>(sV + (buf ^ 1) * BN * HS, vg + (size_t)k0 * ld,
                                                     ld, T - k0, tid);
                        cp_async_commit();
                    }
                }
                // causal block skipping per warpgroup (wgmma is issued by all 4 warps)
                if (!group_active || j * BN > g_row0 + 63) {
                    if (STAGES > 0 && lane == 0) mbar_arrive(empty_bar(buf));
                    continue;
                }
                float s[NS * 4], alpha[2];
                uint32_t pa[BN / 16][4];
                issue_s(s, k_tile(it));
                wgmma_wait<0>();
                fence_regs(s);
                const bool grew = softmax_tile(s, j, alpha, true);
                rescale_o(grew, alpha);
                pack_p(s, pa);
                issue_pv(pa, v_tile(it));
                wgmma_wait<0>();
                fence_regs(o);
                if (STAGES > 0 && lane == 0) mbar_arrive(empty_bar(buf)); // K, V read: warp done
            }
        }
        gt += n_kt, qc++;
        if (!group_active) continue;

        // lse, O / l. One item a block: O goes through the warp's own 16
        // rows of sQ (read by this warpgroup's wgmma only, all complete)
        // for 16-byte global stores. Persistent: the next item's Q may be
        // landing there; each thread stores its own pairs of columns.
        if constexpr (!PERSIST) fence_proxy_async();
        float *lse_bh = lse + (size_t)bh * T;
        bf16 *og = out + (size_t)b * T * C + (size_t)h * HS;
        const int wl0 = 64 * wg + 16 * warp; // the warp's first row within the block
#pragma unroll
        for (int r = 0; r < 2; r++) {
            float sum = l[r];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const float inv = 1.f / sum;
            const int lr = wl0 + g + 8 * r;
            if (t4 == 0 && q0 + lr < T) lse_bh[q0 + lr] = (m[r] + __log2f(sum)) * LN2;
            if constexpr (PERSIST) {
                if (q0 + lr < T)
#pragma unroll
                    for (int n = 0; n < NO; n++)
                        *reinterpret_cast<uint32_t *>(og + (size_t)(q0 + lr) * C + n * 8 + 2 * t4) =
                            pack_bf16(o[4 * n + 2 * r] * inv, o[4 * n + 2 * r + 1] * inv);
            } else {
#pragma unroll
                for (int n = 0; n < NO; n++)
                    *reinterpret_cast<uint32_t *>(sQ + atom_off<BM>(lr, n * 8 + 2 * t4)) =
                        pack_bf16(o[4 * n + 2 * r] * inv, o[4 * n + 2 * r + 1] * inv);
            }
        }
        if constexpr (!PERSIST) {
            __syncwarp();
            constexpr int CH = HS / 8, K = 16 * CH / 32;
            [[maybe_unused]] uint2 o8[K]; // FP8: the lane's 8-value pieces, cast
#pragma unroll
            for (int k = 0; k < K; k++) {
                const int i = lane + 32 * k, r = i / CH, c = i % CH;
                const int row = wrow0 + r;
                if (row < T) { // FP8: always (T a multiple of 64)
                    const uint4 v =
                        *reinterpret_cast<const uint4 *>(sQ + atom_off<BM>(wl0 + r, c * 8));
                    *reinterpret_cast<uint4 *>(og + (size_t)row * C + c * 8) = v;
                    if constexpr (FP8) {
                        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
                        o8[k] = fp8_cast8(w, fp8_scale, fp8.format, seen);
                        *reinterpret_cast<uint2 *>(fp8.out + ((size_t)b * T + row) * C + h * HS +
                                                   c * 8) = o8[k];
                    }
                }
            }
            if constexpr (FP8) {
                if (fp8.out_t) {
                    // the warp's 16 x 64 bytes, row-major, over its bf16 rows
                    // (all read above), then 16 bytes a column: the
                    // transposed copy's 16 positions of each of the head's
                    // 64 columns
                    unsigned char *stage = reinterpret_cast<unsigned char *>(sQ + wl0 * HS);
                    __syncwarp();
#pragma unroll
                    for (int k = 0; k < K; k++) {
                        const int i = lane + 32 * k;
                        *reinterpret_cast<uint2 *>(stage + (i / CH) * HS + (i % CH) * 8) = o8[k];
                    }
                    __syncwarp();
                    if (lane < HS / 4)
                        fp8_store_transposed16(fp8.out_t + (size_t)h * HS * rows, rows,
                                               b * T + wrow0, 4 * lane, [&](int i) {
                                                   return *reinterpret_cast<const uint32_t *>(
                                                       stage + i * HS + 4 * lane);
                                               });
                }
            }
        }
    }
    if (PING && wg == 0) my_turn(); // warpgroup 1's last pass
    if constexpr (FP8) {
        __shared__ fp8_block_scratch block_stats;
        if (fp8.stats) fp8_block_stats(seen, fp8.stats, block_stats); // every thread: one item
    }
#else
    __trap(); // built without sm_90a code: attention_wgmma_forward never launches this
#endif
}

} // namespace
#endif
