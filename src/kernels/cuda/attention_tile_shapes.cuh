/* The production tile shapes of the attention kernels, both families, as
 * FlashAttention-3's tile_size.h holds its own: each a struct of
 * compile-time members that a kernel template and its launcher take
 * (mma.sync: attention_mma_fwd.cuh, attention_mma_bwd.cuh; wgmma:
 * attention_wgmma_fwd.cuh, attention_wgmma_bwd.cuh,
 * attention_wgmma_bwd_ws.cuh), and the wgmma kernels' cp.async fallbacks
 * for where no TMA tensor map can be made. The other shapes measured
 * against these are tuning variants (tuning/attention_*_variants.cu, each
 * a production shape with the members it changes; docs/attention.md has
 * the measurements). */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_TILE_SHAPES_CUH
#define GPT2_KERNELS_CUDA_ATTENTION_TILE_SHAPES_CUH

#include <stddef.h>

namespace {

// ---------------------------------------------------------------------------
// mma.sync (attention_mma.cu)

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
// wgmma (attention_wgmma.cu)

// Forward: WARPGROUPS warpgroups of 64 query rows a block, key tiles of KEYS;
// MIN_BLOCKS: blocks per SM the register allocation must allow
// (__launch_bounds__). LAZY_RESCALE: O rescaled only where a row max went
// up. TMA_STAGES: K, V buffers filled by TMA (WgmmaFwdCfg); 0: cp.async,
// double buffered. PIPELINED (TMA only): the software-pipelined walk.
// GROUP: (batch, head) pairs a group of the block order (fwd_block_coords;
// 0: all of them, longest query tiles first over all heads).
//
// PRODUCER: a warpgroup more, which loads, its registers given to the
// others (setmaxnreg); PINGPONG: the two computing warpgroups issue their
// products in turns; PERSISTENT (with PRODUCER): a grid of one block per SM
// whose blocks walk several query tiles each (ws_schedule's pairs of query
// tiles p and n - 1 - p, n + 1 key tiles whatever p, and its tail), the
// producer loading the next one's first tiles and Q under the last one's
// end; PREFETCH_Q (PERSISTENT): the next item's Q brought into L2 as the
// item starts. Fallback: the shape with cp.async loads, where no tensor map
// can be made.
template <class Shape> struct CpAsyncFwd;

// Head size 64: 2 blocks per SM, the walk pipelined, which holds two tiles
// at a time: 4 stages keep two loads in flight.
struct WgmmaFwd64 {
    static constexpr int HS = 64, WARPGROUPS = 2, KEYS = 64, MIN_BLOCKS = 2;
    static constexpr bool LAZY_RESCALE = true;
    static constexpr int TMA_STAGES = 4;
    static constexpr bool PIPELINED = true, PRODUCER = false, PINGPONG = false;
    static constexpr bool PERSISTENT = false, PREFETCH_Q = false;
    static constexpr int GROUP = 16;
    typedef CpAsyncFwd<WgmmaFwd64> Fallback;
};
// Head size 128: FlashAttention-3's forward. One block per SM: a producer
// warpgroup and two that compute, 64 query rows each, with 240 registers,
// which the pipelined walk over key tiles of 128 needs (O, S and P take
// 160); the two take turns at the tensor cores, and 3 stages of K and V
// (224 KB) keep the copies ahead. Persistent: with one block per SM, a
// block starting its tile would otherwise wait for its first loads with
// nothing else on the SM.
struct CpAsyncFwd128;
struct WgmmaFwd128 {
    static constexpr int HS = 128, WARPGROUPS = 2, KEYS = 128, MIN_BLOCKS = 1;
    static constexpr bool LAZY_RESCALE = true;
    static constexpr int TMA_STAGES = 3;
    static constexpr bool PIPELINED = true, PRODUCER = true, PINGPONG = true;
    static constexpr bool PERSISTENT = true, PREFETCH_Q = true;
    static constexpr int GROUP = 16;
    typedef CpAsyncFwd128 Fallback;
};
// Its fallback: 2 blocks per SM (128 registers), key tiles of 64 double
// buffered; with 2 TMA stages, the production shape before (tuning builds)
struct CpAsyncFwd128 {
    static constexpr int HS = 128, WARPGROUPS = 2, KEYS = 64, MIN_BLOCKS = 2;
    static constexpr bool LAZY_RESCALE = true;
    static constexpr int TMA_STAGES = 0;
    static constexpr bool PIPELINED = false, PRODUCER = false, PINGPONG = false;
    static constexpr bool PERSISTENT = false, PREFETCH_Q = false;
    static constexpr int GROUP = 16;
    typedef CpAsyncFwd128 Fallback;
};
// A forward shape with cp.async loads: where no tensor map can be made.
template <class Shape> struct CpAsyncFwd : Shape {
    static constexpr int TMA_STAGES = 0;
    static constexpr bool PIPELINED = false, PRODUCER = false, PINGPONG = false;
    static constexpr bool PERSISTENT = false, PREFETCH_Q = false;
};

// Backward (a block: one warpgroup, 64 keys, query tiles of 64): TMA: K, V,
// Q and dO by TMA, else by cp.async; STAGES: Q, dO, lse, D stages; SPLIT: 0
// the products in order, 1 P^T computed under dP^T, 2 also dV issued under
// dP^T and dK before the dS barrier; GROUP as the forward's (1: each pair's
// key blocks in turn).
//
// Both head sizes run the warp-specialized kernel (attn_bwd_ws_kernel).
// This one runs where no tensor map can be made (CpAsyncBwd64: 3 blocks per
// SM, 168 registers; CpAsyncBwd128: 2 blocks per SM), and in tuning builds
// with TMA, as the production kernel before it (WgmmaBwd64, WgmmaBwd128).
// A backward shape with cp.async loads, from one with TMA.
template <class Shape> struct CpAsyncBwd : Shape {
    static constexpr bool TMA = false;
    static constexpr int STAGES = 2, SPLIT = 0;
};
struct CpAsyncBwd64 {
    static constexpr int HS = 64, MIN_BLOCKS = 3;
    static constexpr bool TMA = false;
    static constexpr int STAGES = 2, SPLIT = 0, GROUP = 16;
};
struct CpAsyncBwd128 {
    static constexpr int HS = 128, MIN_BLOCKS = 2;
    static constexpr bool TMA = false;
    static constexpr int STAGES = 2, SPLIT = 0, GROUP = 16;
};
// The warp-specialized backward (attn_bwd_ws_kernel, attention_wgmma_bwd_ws.cuh).
// The kernel's shape for head size HS (WsBwd64, WsBwd128 below): key
// blocks of BN = 128 keys (64 a consumer warpgroup), query tiles of BM
// rows: 128 at head size 64, 64 at 128, where the dK and dV accumulators
// (64 keys x 128 dims each) leave a warpgroup the registers of that many
// queries' S^T and dP^T only (FlashAttention-3's shape for head size 128).
// A tile's dQ is two 64 x 64 fp32 slabs, one a consumer warpgroup: query
// rows 64w.. of a tile of 128, or head dims 64w.. of a tile of 64.
//
// Shared memory, byte offsets from the 1024-aligned base: K, V (128 keys),
// 2 stages of Q and dO (BM queries), 2 of dS (queries x keys as two 64-key
// atoms), the two consumer warpgroups' dQ slabs, at head size 64 their dK
// and dV boxes (64 keys x 64 dims bf16 each, in TMA's swizzle) on the way
// out, 2 stages of lse and D, the mbarriers. At head size 128 the boxes
// would take the block past its 227 KB, and each warp stores its dK and dV
// rows from registers (store_warp_dkv, as the one-warpgroup kernel does).
template <int HS_> struct WsBwdCfg {
    static constexpr int HS = HS_, NA = HS / 64, BN = 128, BM = HS == 64 ? 128 : 64, NTH = 384;
    static constexpr bool BOXES = HS == 64; // dK and dV out through TMA boxes
    // where warpgroup w's dQ slab is in the tile's dQ: its query rows, its head-dim atom
    static constexpr int DQ_ROW_STEP = BM == 128 ? 64 : 0, DQ_ATOM_STEP = BM == 128 ? 0 : 1;
    static constexpr int KV_TILE = BN * HS * 2; // bytes of K's (V's) tile
    static constexpr int TILE = BM * HS * 2;    // bytes of a stage's Q (dO) tile
    static constexpr int SLAB = 64 * 64 * 4;    // bytes of a warpgroup's fp32 dQ slab
    static constexpr int BOX = 64 * 64 * 2;     // bytes of a 64 x 64 bf16 box (a TMA store)
    static constexpr int K = 0, V = KV_TILE, Q = 2 * KV_TILE, DO = Q + 2 * TILE, DS = DO + 2 * TILE,
                         DQ = DS + 2 * BM * BN * 2, DKV = DQ + 2 * SLAB,
                         L = DKV + (BOXES ? 4 * BOX : 0), D = L + 2 * BM * 4, BARS = D + 2 * BM * 4;
    // kv_full, kv_empty, q_full[2], q_empty[2], do_full[2], do_empty[2];
    // then the block's row of the schedule's table (ws_table_write), in the
    // rest of the 227 KB a block may have: TABLE_ROWS items. No slack for
    // aligning the base, so the layout takes the dynamic shared memory's own
    // 1024-byte alignment (CUTLASS's Hopper kernels, which lay their shared
    // storage out from the base, rely on it too; the kernel traps without it)
    static constexpr int TABLE = BARS + 10 * 8, TABLE_ROWS = (227 * 1024 - TABLE) / 8;
    static constexpr size_t SMEM = TABLE + 8 * TABLE_ROWS;
    // named barriers (0 is __syncthreads'): the two warpgroups' dS stored;
    // warpgroup w's dQ slab free, and full; warpgroup w's own
    static constexpr int BAR_DS = 1, BAR_DQ_EMPTY = 2, BAR_DQ_FULL = 4, BAR_WG = 6;
    static constexpr int GROUP = 16; // (batch, head) pairs a group of bwd_block_at's order
    static_assert(BM * HS == 128 * 64 && (BM == 128 || BM == 64), "a stage's tile is 16 KB");
    static_assert(SMEM <= 227 * 1024 && DKV % 1024 == 0 && DS % 1024 == 0 && Q % 1024 == 0,
                  "a block's shared memory; the tiles 1024-aligned for the 128-byte swizzle");
    static_assert(BAR_DS > 0 && BAR_DQ_EMPTY == BAR_DS + 1 && BAR_DQ_FULL == BAR_DQ_EMPTY + 2 &&
                      BAR_WG == BAR_DQ_FULL + 2 && BAR_WG + 2 <= 16,
                  "named barriers: past __syncthreads' 0, one pair per consumer warpgroup");
};
typedef WsBwdCfg<64> WsBwd64;
typedef WsBwdCfg<128> WsBwd128;
// The layout's order, and each consumer warpgroup's dQ slab a disjoint
// part of the tile's (checked here too, so that builds whose device pass
// has no kernel body still reference every member)
template <class W> constexpr bool ws_layout_ok() {
    return W::K + W::KV_TILE == W::V && W::V + W::KV_TILE == W::Q && W::Q + 2 * W::TILE == W::DO &&
           W::DO + 2 * W::TILE == W::DS && W::NA * 64 == W::HS &&
           (W::DQ_ROW_STEP == 64) + W::DQ_ATOM_STEP == 1;
}
static_assert(ws_layout_ok<WsBwd64>() && ws_layout_ok<WsBwd128>(),
              "K, V, then two stages of Q and of dO, then dS; the dQ slabs split the tile");

} // namespace
#endif
