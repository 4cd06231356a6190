/* The device side of the wgmma attention kernels' schedules
 * (attention_block_order.h has the schedules themselves, plain C): a
 * persistent block's row of the schedule's table written and read back
 * (ws_table_write, fwd_item_at for the forward, ws_item for the
 * warp-specialized backward), the order in which a key block walks its query
 * tiles (walk_query_tiles: the diagonal's masked tiles first, or last in the
 * deterministic mode), and the warp-specialized backward's production choice
 * of schedule (WsPairedPersistent; the others are tuning variants). */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_TILE_SCHEDULER_CUH
#define GPT2_KERNELS_CUDA_ATTENTION_TILE_SCHEDULER_CUH

#include <cuda_runtime.h>

#include <type_traits>

#include "kernels/cuda/attention_block_order.h"
#include "kernels/cuda/attention_wgmma_tiles.cuh"

namespace {

#ifdef ATTN_WGMMA_DEVICE
// This block's items (the key blocks it walks, or the forward's query
// tiles as fwd_item_at maps them: WsWork, attention_block_order.h)
// into its row of the table, an item a thread; the block's barrier after it
// makes them visible to every role.
__device__ __forceinline__ void ws_table_write(const WsWork &wk, int2 *row, int n_kb) {
    const int block = (int)blockIdx.x, grid = (int)gridDim.x;
    for (int ic = (int)threadIdx.x; ic < wk.rows; ic += (int)blockDim.x) {
        WsItem x;
        const int more = ws_item_at(&wk, block, grid, ic, n_kb, 1, &x);
        row[ic] = more ? make_int2(x.bh, x.n_it ? x.k0 : -1) : make_int2(-1, -1);
    }
}
// Item ic of this block under the forward's schedule wk (attention_block_order.h:
// ws_item_at's key block kb of n_qt is query tile n_qt - 1 - kb, which has
// as many key tiles as that key block has query tiles): its (batch, head)
// pair and query tile, qt -1 for a pair's second that is its first; false
// past the block's last.
__device__ __forceinline__ bool fwd_item_at(const WsWork &wk, int ic, int n_qt, int &bh, int &qt) {
    WsItem x;
    if (!ws_item_at(&wk, (int)blockIdx.x, (int)gridDim.x, ic, n_qt, 1, &x)) return false;
    bh = x.bh;
    qt = x.n_it ? n_qt - 1 - x.k0 : -1;
    return true;
}
#endif

// Compile-time flags of the backward's tile step: the tile that may cross
// the diagonal (masked) or one known to be below it.
typedef std::true_type Diagonal;
typedef std::false_type Below;

// A key block's walk over its n_it query tiles, step(it, Diagonal() or
// Below()): the NDIAG tiles on the diagonal (masked; two where the query
// tiles are half the key block) first, or last where the walk goes from T
// down (DET).
template <bool DET, int NDIAG = 1, class Step>
__device__ __forceinline__ void walk_query_tiles(int n_it, Step &step) {
    const int n_diag = n_it < NDIAG ? n_it : NDIAG;
    if (DET) {
        for (int it = 0; it < n_it - n_diag; it++) step(it, Below());
        for (int it = n_it - n_diag; it < n_it; it++) step(it, Diagonal());
    } else {
        for (int it = 0; it < n_diag; it++) step(it, Diagonal());
        for (int it = n_diag; it < n_it; it++) step(it, Below());
    }
}

#ifdef ATTN_WGMMA_DEVICE
// This block's item ic from its row of the table: false past its last.
// Its query tiles (of BM rows) from its key block's diagonal to T.
template <class W>
__device__ __forceinline__ bool ws_item(const int2 *row, int ic, int T, WsItem &x) {
    const int2 e = row[ic];
    x.bh = e.x;
    x.k0 = e.y * W::BN; // read only where the item has tiles
    x.n_it = e.y < 0 ? 0 : (T + W::BM - 1) / W::BM - e.y * (W::BN / W::BM);
    return e.x >= 0;
}
#endif

// The warp-specialized backward's schedule (WsWork): PAIRED units of two
// key blocks, a PERSISTENT grid of one block per SM, and a TAIL of single
// key blocks where the pairs would leave a round of the grid part-filled.
// Together they measured fastest (docs/attention.md): a key block's first
// loads go under the last one's final tile and epilogue, and every block
// walks about as many tiles as the others (persistent over single key
// blocks, the blocks end far apart). The deterministic mode runs one key
// block a block whatever the schedule: its dQ turns wait on lower key
// blocks, which a block walking several could hold up.
struct WsPairedPersistent {
    static constexpr bool PAIRED = true, PERSISTENT = true, TAIL = true;
};

} // namespace
#endif
