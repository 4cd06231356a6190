/* The order in which the flash attention kernels' blocks take their work:
 * the forward's 1-D grid order (fwd_block_coords, which the one-warpgroup
 * backward also walks), and the warp-specialized backward's schedule
 * (ws_item_at: the key blocks a block of its persistent grid walks, and
 * ws_schedule: the launcher's choice of it). Plain C with no CUDA types, so
 * that the kernels (attention_tile_scheduler.cuh, attention_tiles.cuh) and the
 * schedule's CPU test (tests/kernels/test_attention_schedule.c, which checks
 * that every key block is walked once at thousands of shapes) share the one
 * definition. */
#ifndef GPT2_KERNELS_CUDA_ATTENTION_BLOCK_ORDER_H
#define GPT2_KERNELS_CUDA_ATTENTION_BLOCK_ORDER_H

#ifdef __CUDACC__
#define ATTN_ORDER_FN static __forceinline__ __host__ __device__
#else
#define ATTN_ORDER_FN static inline
#endif

/* The (batch, head) pair and query tile of forward block x of a 1-D grid of
 * n_bh * n_qt blocks. The pairs go in groups of G (16), and within a group
 * the longest query tiles (the most key tiles under the causal mask) come
 * first. Blocks resident together then share a few pairs' K and V in L2
 * (all of them, 96 MB at B=32 T=1024 for 124M, do not fit), and the short
 * tiles fill the end of each group's wave. G = n_bh: longest first over all. */
ATTN_ORDER_FN void fwd_block_coords(int x, int n_bh, int n_qt, int G, int *bh, int *qt) {
    const int group = x / (G * n_qt), i = x % (G * n_qt);
    /* the last group may be partial */
    const int left = n_bh - group * G, size = G < left ? G : left;
    *bh = group * G + i % size;
    *qt = n_qt - 1 - i / size;
}

/* The warp-specialized backward's work. Units go to the blocks strided by
 * the grid: with one block per SM, each walks its units in turn, the next
 * one's first loads under the last one's final tile and epilogue; with one
 * block per unit, in the hardware's order. A unit is one key block
 * (bwd_block_at's order, pairs in groups of `group`) or, paired, key blocks
 * p and n_kb - 1 - p of one (batch, head) pair, longer first: n_kb + 1
 * query tiles whatever p, so that the blocks of a persistent grid end
 * within a unit of each other.
 *
 * That last unit is what the tail evens out: when the pair units do not
 * fill the last round of the grid, some blocks walk one unit more than the
 * others. Paired, the units end at n_units, and the heads from tail_h0 on
 * (tail_heads of them: whole heads, so that each key block is in one place)
 * go as single key blocks, longest first (key block 0 of every tail head,
 * then key block 1, ...), dealt to the blocks in snake order: positions 0
 * to grid - 1, then grid - 1 to 0, and so on, position 0 being block
 * n_units % grid, the first of the blocks with a pair unit fewer. The
 * singles are of n_kb down to 1 tiles, so the blocks end closer together
 * than a whole unit of n_kb + 1. units_q and units_r are n_units / grid and
 * n_units % grid for the grid launched. */
typedef struct {
    int n_units, paired, group;
    int units_q, units_r;
    int tail_h0, tail_heads;
    int rows; /* the table's rows (below): the most items of a block, plus 1 */
} WsWork;
typedef struct {
    int bh, k0; /* its first key */
    int n_it;   /* its query tiles (0: the second of a pair that is one key block) */
} WsItem;

/* Item ic of block `block` of `grid`, a (batch, head) pair's keys being
 * n_kb key blocks of bn: false past its last. */
ATTN_ORDER_FN int ws_item_at(const WsWork *wk, int block, int grid, int ic, int n_kb, int bn,
                             WsItem *x) {
    int kb;
    if (!wk->paired) {
        const int unit = block + ic * grid;
        if (unit >= wk->n_units) return 0;
        int rev_kb; /* as bwd_block_at's */
        fwd_block_coords(unit, wk->n_units / n_kb, n_kb, wk->group, &x->bh, &rev_kb);
        kb = n_kb - 1 - rev_kb;
        x->n_it = n_kb - kb;
    } else {
        const int per_bh = (n_kb + 1) / 2;
        const int n_pairs = wk->units_q + (block < wk->units_r);
        if (ic < 2 * n_pairs) {
            const int unit = block + (ic >> 1) * grid, p = unit % per_bh;
            kb = (ic & 1) ? n_kb - 1 - p : p;
            x->bh = unit / per_bh;
            x->n_it = (ic & 1) && kb == p ? 0 : n_kb - kb;
        } else { /* the tail */
            const int r = ic - 2 * n_pairs;
            const int i = block - wk->units_r + (block < wk->units_r ? grid : 0);
            const int s = r * grid + ((r & 1) ? grid - 1 - i : i);
            if (s >= wk->tail_heads * n_kb) return 0;
            kb = s / wk->tail_heads;
            x->bh = wk->tail_h0 + (s - kb * wk->tail_heads);
            x->n_it = n_kb - kb;
        }
    }
    x->k0 = kb * bn;
    return 1;
}

/* The kernel's table of the schedule: the grid's blocks write it at their
 * start, each its own row (item ic, for ic below wk->rows), a thread an
 * item, so that the roles' walks over it are a load an item (the items
 * computed there made ptxas spill in the producer warps' 24 registers, and
 * the kernel slower). The row goes in the block's shared memory where it
 * fits, else at entry block * rows of a table in the workspace. An entry is
 * (bh, kb); kb -1 marks a pair's second that is its first (no tiles),
 * bh -1 the end of the row. ws_table_entries bounds grid * rows for
 * every schedule of n_bh pairs of n_kb key blocks: the grid is at most a
 * block a key block, each with 2 (units / grid + 1) + tail / grid + 1
 * items or fewer. */
ATTN_ORDER_FN long ws_table_entries(int n_bh, int n_kb) { return 8L * n_bh * n_kb; }
/* A model of a block's time, in tenths of a query tile: each key block its
 * tiles plus 12 for its end (dK and dV out, their column sums, the next
 * key block's start: about 1.2 tiles' time in the trace of
 * docs/attention.md), and a key block of the tail 5 more (fitted to the
 * kernel's times with and without the tail at three shapes,
 * docs/attention.md: a pair's second key block reads the query tiles that
 * its first has just brought into L2, a tail's key blocks of many heads at
 * once do not). The latest block's is the kernel's; *rows (if not NULL)
 * gets the table's rows, the most items of a block plus 1. */
enum { WS_TILE_COST = 10, WS_KEY_BLOCK_COST = 12, WS_TAIL_COST = 5 };
ATTN_ORDER_FN long ws_makespan(const WsWork *wk, int grid, int n_kb, int *rows) {
    long latest = 0;
    int most = 0;
    for (int b = 0; b < grid; b++) {
        const int n_pairs = wk->paired ? wk->units_q + (b < wk->units_r) : 0;
        long t = 0;
        WsItem x;
        int ic = 0;
        for (; ws_item_at(wk, b, grid, ic, n_kb, 1, &x); ic++)
            if (x.n_it)
                t += (long)WS_TILE_COST * x.n_it + WS_KEY_BLOCK_COST +
                     (wk->paired && ic >= 2 * n_pairs ? WS_TAIL_COST : 0);
        if (t > latest) latest = t;
        if (ic > most) most = ic;
    }
    if (rows) *rows = most + 1;
    return latest;
}

/* The work of n_bh (batch, head) pairs of n_kb key blocks, and the grid to
 * launch it on (*grid: at most max_grid blocks if persistent, else one a
 * unit). Paired and persistent with a tail, of five splits, all pair
 * units, or as singles the heads of the part-filled last round (rounds 0)
 * or of it and the one to three full rounds before, the one that the
 * model above ends first (the first on a tie). */
ATTN_ORDER_FN WsWork ws_schedule(int n_bh, int n_kb, int max_grid, int paired, int persistent,
                                 int tail, int group, int *grid) {
    WsWork wk = {0, paired, group, 0, 0, n_bh, 0, 0};
    const int per_bh = (n_kb + 1) / 2;
    wk.n_units = n_bh * (paired ? per_bh : n_kb);
    *grid = persistent && max_grid < wk.n_units ? max_grid : wk.n_units;
    wk.units_q = wk.n_units / *grid, wk.units_r = wk.n_units % *grid;
    if (!paired || !persistent || !tail) {
        ws_makespan(&wk, *grid, n_kb, &wk.rows);
        return wk;
    }
    long best = ws_makespan(&wk, *grid, n_kb, &wk.rows);
    for (int rounds = 0; rounds <= 3; rounds++) {
        const int pair_rounds = wk.n_units / max_grid - rounds;
        const int heads = pair_rounds > 0 ? pair_rounds * max_grid / per_bh : 0;
        WsWork t = wk;
        t.n_units = heads * per_bh;
        t.tail_h0 = heads;
        t.tail_heads = n_bh - heads;
        const int items = t.n_units + t.tail_heads * n_kb; /* every block gets one */
        const int g = items < max_grid ? items : max_grid;
        t.units_q = t.n_units / g, t.units_r = t.n_units % g;
        const long span = ws_makespan(&t, g, n_kb, &t.rows);
        if (span < best) best = span, wk = t, *grid = g;
    }
    return wk;
}

#undef ATTN_ORDER_FN
#endif
